// The validation of an experiment's runs: every failed check is kept (the
// first one is reported), and the runs go on, so that a wrong result comes
// back as a RESULT line with a `failure` field (a failed row), not as a
// missing row.
package troupe.peer;

final class Check {
    private String first;
    private int failed;

    /** Records `message` as a failure unless `ok`. */
    void that(boolean ok, String message) {
        if (ok) return;
        failed++;
        if (first == null) first = message;
        System.err.println("pekko: check failed: " + message);
    }

    boolean passed() {
        return failed == 0;
    }

    /** Adds `failure` (the first failed check and how many failed) when one failed. */
    Json into(Json json) {
        if (failed > 0) json.put("failure", failed == 1 ? first : first + " (and " + (failed - 1) + " more failed checks)");
        return json;
    }
}

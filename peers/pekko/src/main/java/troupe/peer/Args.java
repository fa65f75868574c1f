// Command-line options of the peer, with defaults and clear errors.
package troupe.peer;

import java.util.Map;

final class Args {
    private final Map<String, String> values;

    Args(Map<String, String> values) {
        this.values = values;
    }

    long num(String key, long fallback) {
        String v = values.get(key);
        if (v == null) return fallback;
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " must be a number, found " + v);
        }
    }

    double real(String key, double fallback) {
        String v = values.get(key);
        if (v == null) return fallback;
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " must be a number, found " + v);
        }
    }

    String str(String key, String fallback) {
        return values.getOrDefault(key, fallback);
    }
}

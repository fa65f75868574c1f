// Medians and percentiles for the RESULT lines.
package troupe.peer;

import java.util.Arrays;

final class Stats {
    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    }

    /** The q-quantile (0..1) of sorted values, nearest rank. */
    static double quantile(long[] sorted, double q) {
        if (sorted.length == 0) return Double.NaN;
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    /**
     * The threads of the system's default dispatcher (a fork-join pool):
     * the cores times the factor, within the configured bounds, as Pekko
     * sizes it. Rows record it so that ratios pair equal thread counts.
     */
    static int dispatcherThreads(org.apache.pekko.actor.ActorSystem system) {
        com.typesafe.config.Config c = system.settings().config().getConfig("pekko.actor.default-dispatcher.fork-join-executor");
        int cores = Runtime.getRuntime().availableProcessors();
        int wanted = (int) Math.ceil(cores * c.getDouble("parallelism-factor"));
        return Math.min(c.getInt("parallelism-max"), Math.max(c.getInt("parallelism-min"), wanted));
    }

    /** Peak resident memory of this process in bytes (Linux), or -1. */
    static long peakRssBytes() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (Exception e) {
            return -1;
        }
        return -1;
    }
}

// The measurement protocol of every peer experiment, the same for each:
// warm up in this JVM until the run-to-run change settles, then take N
// measured runs and return every one of them. The rule: at least
// --min-warmup runs, and stop warming as soon as two run-to-run changes in
// a row are below --steady-pct percent (three consecutive runs agree: one
// pair of similar runs happens by chance while the JIT is still at work);
// at most --max-warmup runs, and if the cap is hit the protocol line says
// so with the last two changes.
package troupe.peer;

import java.util.ArrayList;
import java.util.List;

final class Steady {
    /** One run of an experiment; returns its figure (lower is better, e.g. ns per message). */
    interface Trial {
        /** `measured` is false during the warm-up, so a trial keeps only measured details. */
        double run(boolean measured) throws Exception;
    }

    /**
     * The warm-up figures, the measured ones, how they were obtained, and
     * what each measured run cost: the process's CPU time over its wall time
     * (CPUs busy), every thread of the JVM included (JIT and GC too), as
     * troupe's rows take the CPU time of their whole process.
     */
    record Result(List<Double> warmup, List<Double> samples, String protocol, List<Double> cpusBusy) {
        double median() {
            double[] v = new double[samples.size()];
            for (int i = 0; i < v.length; i++) v[i] = samples.get(i);
            return Stats.median(v);
        }

        /**
         * Puts `samples`, `warmup_samples`, `warmup_ns_per_msg` (last warm-up run), `protocol`,
         * and when the JVM reports its CPU time `cpus_busy` and `cpu_ns_per_msg` (medians over the
         * measured runs; a sample's figure is taken as its ns per message), each with `suffix`.
         */
        Json into(Json json, String suffix) {
            if (!cpusBusy.isEmpty()) {
                double[] busy = new double[cpusBusy.size()];
                double[] perMsg = new double[cpusBusy.size()];
                for (int i = 0; i < busy.length; i++) {
                    busy[i] = cpusBusy.get(i);
                    perMsg[i] = busy[i] * samples.get(i);
                }
                json.put("cpus_busy" + suffix, Stats.median(busy))
                    .put("cpu_ns_per_msg" + suffix, Stats.median(perMsg));
            }
            return json
                .put("samples" + suffix, samples)
                .put("warmup_samples" + suffix, warmup)
                .put("warmup_ns_per_msg" + suffix, warmup.isEmpty() ? Double.NaN : warmup.get(warmup.size() - 1))
                .put("protocol" + suffix, protocol);
        }
    }

    private final double tolerance;
    private final int minWarmup, maxWarmup, repeats;

    Steady(Args a) {
        tolerance = a.real("steady-pct", 3.0) / 100.0;
        minWarmup = (int) a.num("min-warmup", 3);
        maxWarmup = (int) Math.max(a.num("max-warmup", 15), minWarmup);
        repeats = (int) a.num("repeats", 5);
        if (repeats < 1) throw new IllegalArgumentException("--repeats must be at least 1");
    }

    Result measure(String what, Trial trial) throws Exception {
        List<Double> warmup = new ArrayList<>();
        double change = Double.NaN, previous = Double.NaN;
        while (warmup.size() < maxWarmup) {
            warmup.add(trial.run(false));
            int k = warmup.size();
            previous = change;
            if (k >= 2) change = Math.abs(warmup.get(k - 1) - warmup.get(k - 2)) / warmup.get(k - 2);
            System.err.printf("pekko %s: warm-up %d: %.1f%s%n", what, k, warmup.get(k - 1),
                k >= 2 ? String.format(" (%+.1f%%)", 100 * (warmup.get(k - 1) / warmup.get(k - 2) - 1)) : "");
            if (k >= minWarmup && change < tolerance && previous < tolerance) break;
        }
        List<Double> samples = new ArrayList<>();
        List<Double> cpusBusy = new ArrayList<>();
        for (int i = 0; i < repeats; i++) {
            long cpu0 = processCpuNanos(), wall0 = System.nanoTime();
            samples.add(trial.run(true));
            long cpu1 = processCpuNanos(), wall1 = System.nanoTime();
            if (cpu0 >= 0 && cpu1 >= 0 && wall1 > wall0) cpusBusy.add((double) (cpu1 - cpu0) / (wall1 - wall0));
        }
        // Only a complete set: a median over some of the runs would be another figure.
        if (cpusBusy.size() != samples.size()) cpusBusy.clear();
        String pct = String.format("%.0f%%", tolerance * 100);
        String warm;
        if (warmup.isEmpty()) {
            warm = "no warm-up";
        } else if (change < tolerance && previous < tolerance) {
            warm = String.format("JVM warm-up: %d runs, until 3 in a row were within %s run to run", warmup.size(), pct);
        } else {
            warm = String.format("JVM warm-up: %d runs (the cap; last changes %.1f%% and %.1f%%, not both <%s)",
                warmup.size(), 100 * previous, 100 * change, pct);
        }
        return new Result(warmup, samples, warm + "; then " + repeats + " measured runs", cpusBusy);
    }

    /** CPU time of the whole JVM process so far, or -1 where the platform does not report it. */
    static long processCpuNanos() {
        if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }
}

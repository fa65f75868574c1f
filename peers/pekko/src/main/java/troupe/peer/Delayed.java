// Delayed messages on Pekko: N jobs go round-robin to 8 worker actors; each
// worker answers its job with a reply to the manager scheduled one second
// later by the Pekko scheduler; the run reports total time, completions per
// second, how late the replies reached the manager (arrival time minus due
// time, the same quantity as troupe's `late_*` figures), and peak resident
// memory. The runs follow the peers' protocol (see Steady) in one JVM, each
// with fresh actors; every job must be answered exactly once.
package troupe.peer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.Props;

final class Delayed {
    record Job(long id) {}
    record Reply(long id, long dueNanos) {}

    static final class Worker extends AbstractActor {
        private final ActorRef manager;
        private final Duration delay;

        Worker(ActorRef manager, Duration delay) {
            this.manager = manager;
            this.delay = delay;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Job.class, j -> getContext().getSystem().scheduler().scheduleOnce(
                    delay, manager, new Reply(j.id(), System.nanoTime() + delay.toNanos()),
                    getContext().getDispatcher(), ActorRef.noSender()))
                .build();
        }
    }

    /** Counts distinct replies and how late each arrived; counts down `done` at the last one. */
    static final class Manager extends AbstractActor {
        final long[] lateness;
        private final boolean[] seen;
        int distinct, duplicates;
        private final CountDownLatch done;

        Manager(int jobs, CountDownLatch done) {
            this.lateness = new long[jobs];
            this.seen = new boolean[jobs];
            this.done = done;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Reply.class, r -> {
                    if (seen[(int) r.id()]) {
                        duplicates++;
                        return;
                    }
                    seen[(int) r.id()] = true;
                    lateness[distinct++] = Math.max(0, System.nanoTime() - r.dueNanos());
                    if (distinct == lateness.length) done.countDown();
                })
                .build();
        }
    }

    static Json run(Args a) throws Exception {
        int jobs = (int) a.num("jobs", 1_000_000);
        Duration delay = Duration.ofMillis(a.num("delay-ms", 1000));
        ActorSystem system = ActorSystem.create("delayed");
        Check check = new Check();
        List<double[]> late = new ArrayList<>();
        List<Double> totals = new ArrayList<>();
        Steady.Trial trial = measured -> {
            CountDownLatch done = new CountDownLatch(1);
            Manager[] holder = new Manager[1];
            ActorRef manager = system.actorOf(Props.create(Manager.class, () -> {
                holder[0] = new Manager(jobs, done);
                return holder[0];
            }));
            ActorRef[] workers = new ActorRef[8];
            for (int w = 0; w < workers.length; w++) {
                workers[w] = system.actorOf(Props.create(Worker.class, () -> new Worker(manager, delay)));
            }
            long start = System.nanoTime();
            for (int j = 0; j < jobs; j++) {
                workers[j % workers.length].tell(new Job(j), ActorRef.noSender());
            }
            if (!done.await(600, TimeUnit.SECONDS)) throw new ValidationError("not every job was answered");
            double total = (System.nanoTime() - start) / 1e9;
            // The latch's count-down publishes the manager's fields to this thread.
            Manager m = holder[0];
            check.that(m.distinct == jobs, m.distinct + " distinct jobs answered of " + jobs);
            // Duplicates are counted up to the last distinct reply (the moment the run ends).
            check.that(m.duplicates == 0, m.duplicates + " jobs answered twice");
            if (measured) {
                long[] sorted = m.lateness.clone();
                Arrays.sort(sorted);
                late.add(new double[] {
                    Stats.quantile(sorted, 0.5) / 1e6, Stats.quantile(sorted, 0.99) / 1e6, sorted[sorted.length - 1] / 1e6});
                totals.add(total);
            }
            manager.tell(PoisonPill.getInstance(), ActorRef.noSender());
            for (ActorRef w : workers) w.tell(PoisonPill.getInstance(), ActorRef.noSender());
            return total * 1e9 / jobs;
        };
        Steady.Result result = new Steady(a).measure("delayed", trial);
        system.terminate();
        double total = Stats.median(totals.stream().mapToDouble(Double::doubleValue).toArray());
        Json json = new Json()
            .put("experiment", "delayed")
            .put("variant", "pekko")
            .put("jobs", jobs)
            .put("threads", Stats.dispatcherThreads(system))
            .put("total_s", total)
            .put("completions_per_s", jobs / total)
            .put("ns_per_msg", result.median())
            .put("late_p50_ms", Stats.median(late.stream().mapToDouble(l -> l[0]).toArray()))
            .put("late_p99_ms", Stats.median(late.stream().mapToDouble(l -> l[1]).toArray()))
            .put("late_max_ms", Stats.median(late.stream().mapToDouble(l -> l[2]).toArray()))
            .put("peak_rss_mb", Stats.peakRssBytes() / 1e6);
        return check.into(result.into(json, ""));
    }
}

// Delayed messages on Pekko: N jobs go round-robin to 8 worker actors; each
// worker answers its job with a reply to the manager scheduled one second
// later by the Pekko scheduler; the run reports total time, completions per
// second, how late the replies fired, and peak resident memory.
package troupe.peer;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
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

    static final class Manager extends AbstractActor {
        private final long[] lateness;
        private final boolean[] seen;
        private int count;
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
                    if (seen[(int) r.id()]) throw new IllegalStateException("job answered twice");
                    seen[(int) r.id()] = true;
                    lateness[count++] = Math.max(0, System.nanoTime() - r.dueNanos());
                    if (count == lateness.length) done.countDown();
                })
                .build();
        }
    }

    static void run(Args a) throws Exception {
        int jobs = (int) a.num("jobs", 1_000_000);
        Duration delay = Duration.ofMillis(a.num("delay-ms", 1000));
        ActorSystem system = ActorSystem.create("delayed");
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
        long[] late = holder[0].lateness.clone();
        system.terminate();
        Arrays.sort(late);
        new Json()
            .put("experiment", "delayed")
            .put("variant", "pekko")
            .put("jobs", jobs)
            .put("total_s", total)
            .put("completions_per_s", jobs / total)
            .put("ns_per_msg", total * 1e9 / jobs)
            .put("late_p50_ms", Stats.quantile(late, 0.5) / 1e6)
            .put("late_p99_ms", Stats.quantile(late, 0.99) / 1e6)
            .put("late_max_ms", late[late.length - 1] / 1e6)
            .put("peak_rss_mb", Stats.peakRssBytes() / 1e6)
            .print();
    }
}

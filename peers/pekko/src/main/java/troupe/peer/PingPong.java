// Ping-pong on Pekko classic actors: one pair bouncing one message (ns per
// hop), and many pairs with several balls in flight, as the Rust rows.
package troupe.peer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.Props;

final class PingPong {
    /** A ball with the hops it has left. */
    record Ball(long left) {}

    static final class Player extends AbstractActor {
        private final CountDownLatch done;

        Player(CountDownLatch done) {
            this.done = done;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Ball.class, b -> {
                    if (b.left() == 0) {
                        done.countDown();
                    } else {
                        getSender().tell(new Ball(b.left() - 1), getSelf());
                    }
                })
                .build();
        }
    }

    static void run(Args a) throws Exception {
        long msgs = a.num("msgs", 2_000_000);
        int pairs = (int) a.num("pairs", 1);
        int balls = (int) a.num("in-flight", 1);
        int repeats = (int) a.num("repeats", 5);
        ActorSystem system = ActorSystem.create("pingpong");
        long perBall = msgs / ((long) pairs * balls);
        double[] samples = new double[repeats];
        double warmup = 0;
        for (int run = 0; run <= repeats; run++) {
            CountDownLatch done = new CountDownLatch(pairs * balls);
            List<ActorRef> actors = new ArrayList<>();
            for (int p = 0; p < pairs; p++) {
                actors.add(system.actorOf(Props.create(Player.class, () -> new Player(done))));
                actors.add(system.actorOf(Props.create(Player.class, () -> new Player(done))));
            }
            long start = System.nanoTime();
            for (int p = 0; p < pairs; p++) {
                for (int b = 0; b < balls; b++) {
                    actors.get(2 * p).tell(new Ball(perBall), actors.get(2 * p + 1));
                }
            }
            if (!done.await(600, TimeUnit.SECONDS)) {
                throw new ValidationError("ping-pong did not finish");
            }
            double ns = (System.nanoTime() - start) / (double) (perBall * pairs * balls);
            if (run == 0) warmup = ns; else samples[run - 1] = ns;
            for (ActorRef r : actors) r.tell(PoisonPill.getInstance(), ActorRef.noSender());
        }
        system.terminate();
        double median = Stats.median(samples);
        List<Double> list = new ArrayList<>();
        for (double s : samples) list.add(s);
        new Json()
            .put("experiment", "pingpong")
            .put("variant", pairs == 1 ? "pekko-pair" : "pekko-" + pairs + "-pairs-" + balls + "-balls")
            .put("msgs", perBall * pairs * balls)
            .put("ns_per_msg", median)
            .put("msgs_per_s", 1e9 / median)
            .put("warmup_ns_per_msg", warmup)
            .put("samples", list)
            .print();
    }
}

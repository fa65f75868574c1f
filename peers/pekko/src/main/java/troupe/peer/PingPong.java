// Ping-pong on Pekko classic actors: one pair bouncing one message (ns per
// hop), and many pairs with several balls in flight, as the Rust rows.
// Checked as troupe's rows are: every hop arrives (the players' counts add
// up to the hops sent) and in order (each ball's hop counter, as a player
// sees it, goes down by exactly two from one visit to the next).
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
import org.apache.pekko.pattern.Patterns;

final class PingPong {
    /** Ball `ball` of its pair, with the hops it has left. */
    record Ball(int ball, long left) {}
    /** Asks a player for its counts. */
    enum AskTally { INSTANCE }
    /** Hops received, and hops that came out of order. */
    record Tally(long received, long disorder) {}

    static final class Player extends AbstractActor {
        private final CountDownLatch done;
        /** Per ball, the hop counter the next visit must carry. */
        private final long[] expected;
        private long received, disorder;

        /** `first` is the counter of the ball's first visit: the hops per ball for the server, one less for the other. */
        Player(CountDownLatch done, int balls, long first) {
            this.done = done;
            this.expected = new long[balls];
            Arrays.fill(expected, first);
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Ball.class, b -> {
                    received++;
                    if (b.left() != expected[b.ball()]) disorder++;
                    expected[b.ball()] = b.left() - 2;
                    if (b.left() == 0) {
                        done.countDown();
                    } else {
                        getSender().tell(new Ball(b.ball(), b.left() - 1), getSelf());
                    }
                })
                .match(AskTally.class, t -> getSender().tell(new Tally(received, disorder), getSelf()))
                .build();
        }
    }

    static Json run(Args a) throws Exception {
        long msgs = a.num("msgs", 2_000_000);
        int pairs = (int) a.num("pairs", 1);
        int balls = (int) a.num("in-flight", 1);
        ActorSystem system = ActorSystem.create("pingpong");
        long perBall = msgs / ((long) pairs * balls);
        if (perBall < 1) throw new IllegalArgumentException("--msgs must be at least pairs × in-flight");
        Check check = new Check();
        Steady.Trial trial = measured -> {
            CountDownLatch done = new CountDownLatch(pairs * balls);
            List<ActorRef> actors = new ArrayList<>();
            for (int p = 0; p < pairs; p++) {
                actors.add(system.actorOf(Props.create(Player.class, () -> new Player(done, balls, perBall))));
                actors.add(system.actorOf(Props.create(Player.class, () -> new Player(done, balls, perBall - 1))));
            }
            long start = System.nanoTime();
            for (int p = 0; p < pairs; p++) {
                for (int b = 0; b < balls; b++) {
                    actors.get(2 * p).tell(new Ball(b, perBall), actors.get(2 * p + 1));
                }
            }
            if (!done.await(600, TimeUnit.SECONDS)) {
                throw new ValidationError("ping-pong did not finish");
            }
            double ns = (System.nanoTime() - start) / (double) (perBall * pairs * balls);
            // Each ball is received with counters perBall down to 0.
            long received = 0, disorder = 0;
            for (ActorRef r : actors) {
                Tally t = (Tally) Patterns.ask(r, AskTally.INSTANCE, Duration.ofSeconds(30)).toCompletableFuture().get();
                received += t.received();
                disorder += t.disorder();
                r.tell(PoisonPill.getInstance(), ActorRef.noSender());
            }
            long expected = (perBall + 1) * pairs * balls;
            check.that(received == expected, "the players received " + received + " hops, expected " + expected);
            check.that(disorder == 0, disorder + " hops arrived out of order");
            return ns;
        };
        Steady.Result result = new Steady(a).measure("pingpong", trial);
        system.terminate();
        double median = result.median();
        Json json = new Json()
            .put("experiment", "pingpong")
            .put("variant", pairs == 1 ? "pekko-pair" : "pekko-" + pairs + "-pairs-" + balls + "-balls")
            .put("msgs", perBall * pairs * balls)
            .put("threads", Stats.dispatcherThreads(system))
            .put("ns_per_msg", median)
            .put("msgs_per_s", 1e9 / median);
        return check.into(result.into(json, ""));
    }
}

// Chameneos-redux on Pekko classic actors: a meeting-place actor pairs
// creature actors, as the Rust actor rows do; both games (3 and 10
// creatures), each validated (meetings sum to 2N, nobody met itself).
// The dispatcher is set per run (--threads, --throughput) so that each of
// troupe's configurations has a Pekko row with the same one.
package troupe.peer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;

final class Chameneos {
    static final int BLUE = 0, RED = 1, YELLOW = 2;
    static final int[] THREE = {BLUE, RED, YELLOW};
    static final int[] TEN = {BLUE, RED, YELLOW, RED, YELLOW, BLUE, RED, YELLOW, RED, BLUE};

    static int complement(int a, int b) {
        if (a == b) return a;
        return 3 - a - b;
    }

    record Meet(int colour, int id) {}
    record Met(int colour, int id) {}
    record Stop() {}
    record Report(int id, long meetings, long selfMeetings) {}

    static final class Place extends AbstractActor {
        private long remaining;
        private final List<ActorRef> creatures = new ArrayList<>();
        private int waitingColour = -1, waitingId = -1;
        private final long[][] tallies;
        private int reported;
        private final CompletableFuture<long[][]> done;

        Place(int[] colours, long meetings, CompletableFuture<long[][]> done) {
            this.remaining = meetings;
            this.done = done;
            this.tallies = new long[colours.length][2];
            for (int id = 0; id < colours.length; id++) {
                final int i = id, c = colours[id];
                creatures.add(getContext().actorOf(Props.create(Creature.class, () -> new Creature(i, c))));
            }
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Meet.class, m -> {
                    if (remaining == 0) {
                        creatures.get(m.id()).tell(new Stop(), getSelf());
                    } else if (waitingId < 0) {
                        waitingColour = m.colour();
                        waitingId = m.id();
                    } else {
                        remaining--;
                        creatures.get(waitingId).tell(new Met(m.colour(), m.id()), getSelf());
                        creatures.get(m.id()).tell(new Met(waitingColour, waitingId), getSelf());
                        waitingId = -1;
                    }
                })
                .match(Report.class, r -> {
                    tallies[r.id()][0] = r.meetings();
                    tallies[r.id()][1] = r.selfMeetings();
                    if (++reported == creatures.size()) {
                        done.complete(tallies);
                        getContext().stop(getSelf());
                    }
                })
                .build();
        }
    }

    static final class Creature extends AbstractActor {
        private final int id;
        private int colour;
        private long meetings, selfMeetings;

        Creature(int id, int colour) {
            this.id = id;
            this.colour = colour;
        }

        @Override
        public void preStart() {
            getContext().getParent().tell(new Meet(colour, id), getSelf());
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Met.class, m -> {
                    meetings++;
                    if (m.id() == id) selfMeetings++;
                    colour = complement(colour, m.colour());
                    getSender().tell(new Meet(colour, id), getSelf());
                })
                .match(Stop.class, s -> getSender().tell(new Report(id, meetings, selfMeetings), getSelf()))
                .build();
        }
    }

    /** Plays one game; returns seconds, recording a failed validation in `check`. */
    static double game(ActorSystem system, int[] colours, long n, Check check) throws Exception {
        CompletableFuture<long[][]> done = new CompletableFuture<>();
        long start = System.nanoTime();
        system.actorOf(Props.create(Place.class, () -> new Place(colours, n, done)));
        long[][] tallies = done.get(600, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - start) / 1e9;
        long sum = 0, self = 0;
        for (long[] t : tallies) {
            sum += t[0];
            self += t[1];
        }
        check.that(self == 0, "creatures met themselves " + self + " times");
        check.that(sum == 2 * n, "meetings sum to " + sum + ", expected " + 2 * n);
        return seconds;
    }

    /** The default dispatcher with `threads` fork-join threads and the given throughput. */
    static Config dispatcher(int threads, int throughput) {
        return ConfigFactory.parseString(
            "pekko.actor.default-dispatcher.fork-join-executor.parallelism-min = " + threads + "\n"
                + "pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = " + threads + "\n"
                + "pekko.actor.default-dispatcher.throughput = " + throughput + "\n")
            .withFallback(ConfigFactory.load());
    }

    static Json run(Args a) throws Exception {
        long n = a.num("meetings", 600_000);
        int threads = (int) a.num("threads", 2);
        int throughput = (int) a.num("throughput", 5);
        ActorSystem system = ActorSystem.create("chameneos", dispatcher(threads, throughput));
        Check check = new Check();
        Steady steady = new Steady(a);
        // Each game warms up and is measured on its own, as each is its own row.
        Steady.Result three = steady.measure("chameneos-3", measured -> game(system, THREE, n, check) * 1e9 / n);
        Steady.Result ten = steady.measure("chameneos-10", measured -> game(system, TEN, n, check) * 1e9 / n);
        system.terminate();
        double s3 = three.median() * n / 1e9, s10 = ten.median() * n / 1e9;
        Json json = new Json()
            .put("experiment", "chameneos")
            .put("variant", "pekko")
            .put("threads", Stats.dispatcherThreads(system))
            .put("throughput", throughput)
            .put("meetings", n)
            .put("seconds_3", s3)
            .put("seconds_10", s10)
            .put("seconds", s3 + s10)
            .put("ns_per_msg", (s3 + s10) * 1e9 / (2.0 * n))
            .put("meetings_per_s", 2.0 * n / (s3 + s10));
        three.into(json, "_3");
        ten.into(json, "_10");
        return check.into(json);
    }
}

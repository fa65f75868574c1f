// The trading system on Pekko classic actors, the same topology and
// scenario as troupe's (see docs/experiments.md, trading): clients as
// actors with one order in flight, stateless receivers routing by book
// letter, engines in primary/standby pairs (the primary forwards to its
// standby in its own order). request-reply: the primary replies once the
// standby has acknowledged; one-way: both complete a token, the second
// tells the client. No transaction log (the peer runs the log-off rows only).
//
// Checked after every run: each engine processed its orders and every order
// was processed once; the trades are counted from the books (and must be
// orders/2 in this scenario, where every ask meets a bid at its price); and
// each standby is a replica of its primary: the same counts and, per book,
// the same digest of processing order and trades (OrderBook.digest).
// `--fault reorder-standby` makes engine 0's standby swap two orders of one
// book, to show that the check catches a standby that is not a replica.
package troupe.peer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;

final class Trading {
    static final int ENGINES = 10, RECEIVERS = 10, LOOP = 30;

    record NewOrder(long id, int book, boolean buy, long price, long qty) {}
    record Token(AtomicInteger left, ActorRef client) {
        void complete() {
            if (left.decrementAndGet() == 0) client.tell(Done.INSTANCE, ActorRef.noSender());
        }
    }
    record Place(NewOrder order, ActorRef client, Token token) {}
    record Replicate(NewOrder order, long seq, Token token) {}
    record Ack(long seq) {}
    enum Done { INSTANCE }
    enum Start { INSTANCE }
    record Summary(long orders, long trades, long resting, long[] digests) {
        /** Why `standby` is not a replica of this primary, or null when it is. */
        String differs(Summary standby) {
            if (orders != standby.orders || trades != standby.trades || resting != standby.resting) {
                return "standby counts (orders " + standby.orders + ", trades " + standby.trades + ", resting "
                    + standby.resting + ") differ from the primary's (" + orders + ", " + trades + ", " + resting + ")";
            }
            for (int b = 0; b < digests.length; b++) {
                if (digests[b] != standby.digests[b]) return "book " + b + ": the standby's processing order or trades differ";
            }
            return null;
        }
    }
    enum AskSummary { INSTANCE }

    static NewOrder scenarioOrder(int client, int n) {
        int pos = n % LOOP;
        boolean buy = pos >= LOOP / 2;
        int slot = pos % (LOOP / 2);
        int letter = slot / 5, number = slot % 5 + 1;
        return new NewOrder(((long) client << 32) | n, letter * 10 + number - 1, buy, 100 - number, 1000);
    }

    static final class Engine extends AbstractActor {
        private final ActorRef standby; // null for a standby
        private final OrderBook[] books = new OrderBook[100];
        private long orders, trades, nextSeq, firstPending;
        private final ArrayDeque<ActorRef> pending = new ArrayDeque<>();
        /** The fault: a standby that swaps the first two orders of a book it sees. */
        private boolean reorder;
        private NewOrder held;

        Engine(ActorRef standby, boolean reorder) {
            this.standby = standby;
            this.reorder = reorder;
            for (int i = 0; i < books.length; i++) books[i] = new OrderBook();
        }

        /** Processes a replicated order, or under the fault holds one back and processes it after the next of its book. */
        private void replicate(NewOrder o) {
            if (!reorder) {
                process(o);
            } else if (held == null) {
                held = o;
            } else if (held.book() == o.book()) {
                process(o);
                process(held);
                held = null;
                reorder = false;
            } else {
                process(o);
            }
        }

        private void process(NewOrder o) {
            trades += books[o.book()].place(o.id(), o.buy(), o.price(), o.qty());
            orders++;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Place.class, p -> {
                    process(p.order());
                    if (p.token() != null) {
                        p.token().complete();
                        standby.tell(new Replicate(p.order(), 0, p.token()), getSelf());
                    } else {
                        pending.addLast(p.client());
                        standby.tell(new Replicate(p.order(), nextSeq++, null), getSelf());
                    }
                })
                .match(Replicate.class, r -> {
                    replicate(r.order());
                    if (r.token() != null) r.token().complete();
                    else getSender().tell(new Ack(r.seq()), getSelf());
                })
                .match(Ack.class, a -> {
                    // Acks arrive in order: the standby's mailbox is FIFO from this primary.
                    if (a.seq() != firstPending) throw new IllegalStateException("ack out of order");
                    firstPending++;
                    pending.pollFirst().tell(Done.INSTANCE, getSelf());
                })
                .match(AskSummary.class, s -> {
                    long resting = 0;
                    long[] digests = new long[books.length];
                    for (int b = 0; b < books.length; b++) {
                        resting += books[b].resting;
                        digests[b] = books[b].digest;
                    }
                    getSender().tell(new Summary(orders, trades, resting, digests), getSelf());
                })
                .build();
        }
    }

    static final class Receiver extends AbstractActor {
        private final ActorRef[] primaries;

        Receiver(ActorRef[] primaries) {
            this.primaries = primaries;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Place.class, p -> primaries[p.order().book() / 10].tell(p, getSelf()))
                .build();
        }
    }

    static final class Client extends AbstractActor {
        private final int index, total;
        private final ActorRef receiver;
        private final boolean oneWay;
        private final long[] latencies;
        private final CountDownLatch finished;
        private int sent;
        private long sentAt;
        private Token token;

        Client(int index, int total, ActorRef receiver, boolean oneWay, long[] latencies, CountDownLatch finished) {
            this.index = index;
            this.total = total;
            this.receiver = receiver;
            this.oneWay = oneWay;
            this.latencies = latencies;
            this.finished = finished;
        }

        private void sendNext() {
            NewOrder o = scenarioOrder(index, sent++);
            sentAt = System.nanoTime();
            if (oneWay) {
                if (token == null) token = new Token(new AtomicInteger(), getSelf());
                token.left().set(2);
                receiver.tell(new Place(o, null, token), getSelf());
            } else {
                receiver.tell(new Place(o, getSelf(), null), getSelf());
            }
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Start.class, s -> sendNext())
                .match(Done.class, d -> {
                    latencies[sent - 1] = System.nanoTime() - sentAt;
                    if (sent < total) sendNext();
                    else finished.countDown();
                })
                .build();
        }
    }

    static Json run(Args a) throws Exception {
        String variant = a.str("variant", "one-way");
        if (!variant.equals("one-way") && !variant.equals("request-reply")) {
            throw new IllegalArgumentException("--variant must be one-way or request-reply");
        }
        String fault = a.str("fault", "none");
        if (!fault.equals("none") && !fault.equals("reorder-standby")) {
            throw new IllegalArgumentException("--fault must be none or reorder-standby");
        }
        int clients = (int) a.num("clients", 10);
        long ordersWanted = a.num("orders", 750_000);
        int perClient = (int) (ordersWanted / LOOP / clients) * LOOP;
        if (perClient == 0) throw new IllegalArgumentException("too few orders for " + clients + " clients");
        long orders = (long) perClient * clients;
        ActorSystem system = ActorSystem.create("trading");
        Check check = new Check();
        List<long[]> measuredLatencies = new ArrayList<>();
        long[] lastTrades = {0};
        boolean oneWay = variant.equals("one-way");
        Steady.Trial trial = measured -> {
            ActorRef[] primaries = new ActorRef[ENGINES], standbys = new ActorRef[ENGINES];
            for (int e = 0; e < ENGINES; e++) {
                boolean reorder = e == 0 && fault.equals("reorder-standby");
                standbys[e] = system.actorOf(Props.create(Engine.class, () -> new Engine(null, reorder)));
                final ActorRef sb = standbys[e];
                primaries[e] = system.actorOf(Props.create(Engine.class, () -> new Engine(sb, false)));
            }
            ActorRef[] receivers = new ActorRef[RECEIVERS];
            for (int r = 0; r < RECEIVERS; r++) {
                receivers[r] = system.actorOf(Props.create(Receiver.class, () -> new Receiver(primaries)));
            }
            CountDownLatch finished = new CountDownLatch(clients);
            long[][] lat = new long[clients][perClient];
            List<ActorRef> cs = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                final int i = c;
                cs.add(system.actorOf(Props.create(Client.class,
                    () -> new Client(i, perClient, receivers[i % RECEIVERS], oneWay, lat[i], finished))));
            }
            long start = System.nanoTime();
            for (ActorRef c : cs) c.tell(Start.INSTANCE, ActorRef.noSender());
            if (!finished.await(600, TimeUnit.SECONDS)) throw new ValidationError("clients did not finish");
            double seconds = (System.nanoTime() - start) / 1e9;
            long trades = 0, processed = 0;
            for (int e = 0; e < ENGINES; e++) {
                // Both engines had processed every order before its client was told Done.
                Summary p = (Summary) org.apache.pekko.pattern.Patterns
                    .ask(primaries[e], AskSummary.INSTANCE, java.time.Duration.ofSeconds(30))
                    .toCompletableFuture().get();
                Summary s = (Summary) org.apache.pekko.pattern.Patterns
                    .ask(standbys[e], AskSummary.INSTANCE, java.time.Duration.ofSeconds(30))
                    .toCompletableFuture().get();
                String differs = p.differs(s);
                check.that(differs == null, "engine " + e + ": " + differs);
                trades += p.trades();
                processed += p.orders();
            }
            check.that(processed == orders, "processed " + processed + " of " + orders + " orders");
            check.that(trades == orders / 2, trades + " trades, expected " + orders / 2);
            lastTrades[0] = trades;
            if (measured) {
                long[] run = new long[(int) orders];
                for (int c = 0; c < clients; c++) System.arraycopy(lat[c], 0, run, c * perClient, perClient);
                measuredLatencies.add(run);
            }
            for (ActorRef r : cs) system.stop(r);
            for (ActorRef r : receivers) system.stop(r);
            for (int e = 0; e < ENGINES; e++) {
                system.stop(primaries[e]);
                system.stop(standbys[e]);
            }
            return seconds * 1e9 / orders;
        };
        Steady.Result result = new Steady(a).measure("trading " + variant + " " + clients + " clients", trial);
        system.terminate();
        long[] all = new long[(int) orders * measuredLatencies.size()];
        for (int r = 0; r < measuredLatencies.size(); r++) {
            System.arraycopy(measuredLatencies.get(r), 0, all, r * (int) orders, (int) orders);
        }
        Arrays.sort(all);
        double sum = 0;
        for (long v : all) sum += v;
        double us = 1e3;
        Json json = new Json()
            .put("experiment", "trading")
            .put("variant", variant)
            .put("txlog", "off")
            .put("clients", clients)
            .put("threads", Stats.dispatcherThreads(system))
            .put("orders", orders)
            .put("tps", 1e9 / result.median())
            .put("mean_us", sum / all.length / us)
            .put("p5_us", Stats.quantile(all, 0.05) / us)
            .put("p25_us", Stats.quantile(all, 0.25) / us)
            .put("p50_us", Stats.quantile(all, 0.50) / us)
            .put("p75_us", Stats.quantile(all, 0.75) / us)
            .put("p95_us", Stats.quantile(all, 0.95) / us)
            .put("p99_us", Stats.quantile(all, 0.99) / us)
            .put("max_us", all[all.length - 1] / us)
            .put("trades", lastTrades[0])
            .put("verified", check.passed());
        if (!fault.equals("none")) json.put("fault", fault);
        return check.into(result.into(json, ""));
    }
}

// Pekko remoting (Artery over TCP) between two JVMs, the workloads of
// troupe's remote rows: round trips with N in flight (latency of every
// round trip of the measured runs) and a one-way stream with a flow-control
// window (a mark, answered with what has arrived, after every 1,000
// messages; at most 8 unanswered). This JVM drives; it starts a second JVM
// (`remote-echo`, the same jar) that serves the echo actor and exits when
// its stdin closes. Messages use a compact binary serializer
// (`BenchSerializer`), not Java serialization. Checked: every answer is its
// request's, and the stream arrives whole and in order.
package troupe.peer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.serialization.SerializerWithStringManifest;

final class Remote {
    record Ping(long seq, byte[] payload) {}
    record Pong(long seq) {}
    record Data(long seq, byte[] payload) {}
    record Mark() {}
    record Received(long count, long outOfOrder) {}
    record Reset() {}

    /** `[seq: 8 bytes] [payload]` or `[count] [out of order]`, by manifest. */
    public static final class BenchSerializer extends SerializerWithStringManifest {
        public BenchSerializer(ExtendedActorSystem system) {}

        @Override public int identifier() { return 424242; }

        @Override public String manifest(Object o) {
            if (o instanceof Ping) return "P";
            if (o instanceof Pong) return "O";
            if (o instanceof Data) return "D";
            if (o instanceof Mark) return "M";
            if (o instanceof Received) return "C";
            if (o instanceof Reset) return "R";
            throw new IllegalArgumentException("not a bench message: " + o.getClass());
        }

        @Override public byte[] toBinary(Object o) {
            if (o instanceof Ping p) return withSeq(p.seq(), p.payload());
            if (o instanceof Data d) return withSeq(d.seq(), d.payload());
            if (o instanceof Pong p) return ByteBuffer.allocate(8).putLong(p.seq()).array();
            if (o instanceof Received r) return ByteBuffer.allocate(16).putLong(r.count()).putLong(r.outOfOrder()).array();
            return new byte[0];
        }

        private static byte[] withSeq(long seq, byte[] payload) {
            return ByteBuffer.allocate(8 + payload.length).putLong(seq).put(payload).array();
        }

        @Override public Object fromBinary(byte[] bytes, String manifest) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            return switch (manifest) {
                case "P" -> new Ping(b.getLong(), Arrays.copyOfRange(bytes, 8, bytes.length));
                case "D" -> new Data(b.getLong(), Arrays.copyOfRange(bytes, 8, bytes.length));
                case "O" -> new Pong(b.getLong());
                case "C" -> new Received(b.getLong(), b.getLong());
                case "M" -> new Mark();
                case "R" -> new Reset();
                default -> throw new IllegalArgumentException("unknown manifest " + manifest);
            };
        }
    }

    /** Artery TCP on loopback, any free port, the bench serializer. */
    static Config config() {
        String bindings = String.join("\n",
            List.of("Ping", "Pong", "Data", "Mark", "Received", "Reset").stream()
                .map(c -> "\"troupe.peer.Remote$" + c + "\" = bench").toList());
        return ConfigFactory.parseString(String.join("\n",
            "pekko.actor.provider = remote",
            "pekko.remote.artery.transport = tcp",
            "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"",
            "pekko.remote.artery.canonical.port = 0",
            // The stream's window (8,000 messages) must fit the outbound
            // queue, or Artery drops what does not (the check would fail).
            "pekko.remote.artery.advanced.outbound-message-queue-size = 16384",
            "pekko.actor.serializers.bench = \"troupe.peer.Remote$BenchSerializer\"",
            "pekko.actor.serialization-bindings {", bindings, "}"))
            .withFallback(ConfigFactory.load());
    }

    static final class Echo extends AbstractActor {
        private long next, count, outOfOrder;

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Ping.class, p -> getSender().tell(new Pong(p.seq()), getSelf()))
                .match(Data.class, d -> {
                    if (d.seq() != next) outOfOrder++;
                    next = d.seq() + 1;
                    count++;
                })
                .match(Mark.class, m -> getSender().tell(new Received(count, outOfOrder), getSelf()))
                .match(Reset.class, r -> { next = 0; count = 0; outOfOrder = 0; })
                .build();
        }
    }

    /** The second JVM: serves the echo actor until stdin closes. */
    static void serveEcho() throws Exception {
        ActorSystem system = ActorSystem.create("remote-echo", config());
        system.actorOf(Props.create(Echo.class, Echo::new), "echo");
        int port = (Integer) ((ExtendedActorSystem) system).provider().getDefaultAddress().port().get();
        System.out.println("LISTENING " + port);
        System.out.flush();
        while (System.in.read() != -1) { /* until the driver goes */ }
        system.terminate();
        System.exit(0);
    }

    /** Round trips with `inFlight` outstanding; records each one's time. */
    static final class Pinger extends AbstractActor {
        private final ActorRef echo;
        private final long n;
        private final int inFlight;
        private final byte[] payload;
        private final long[] sentAt;
        private final long[] times;
        private final CompletableFuture<String> done;
        private long next, answered;

        Pinger(ActorRef echo, long n, int inFlight, byte[] payload, long[] times, CompletableFuture<String> done) {
            this.echo = echo;
            this.n = n;
            this.inFlight = inFlight;
            this.payload = payload;
            this.sentAt = new long[(int) n];
            this.times = times;
            this.done = done;
        }

        private void send() {
            sentAt[(int) next] = System.nanoTime();
            echo.tell(new Ping(next, payload), getSelf());
            next++;
        }

        @Override
        public void preStart() {
            while (next < n && next < inFlight) send();
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Pong.class, p -> {
                    if (p.seq() < 0 || p.seq() >= n || sentAt[(int) p.seq()] == 0) {
                        done.complete("an unexpected answer " + p.seq());
                        return;
                    }
                    times[(int) answered] = System.nanoTime() - sentAt[(int) p.seq()];
                    sentAt[(int) p.seq()] = 0;
                    answered++;
                    if (next < n) send();
                    if (answered == n) done.complete(null);
                })
                .build();
        }
    }

    /** The one-way stream with its window of marks. */
    static final class Streamer extends AbstractActor {
        static final int MARKS = 8;
        /** Messages between marks (1,000; fewer for large payloads). */
        private final long every;
        private final ActorRef echo;
        private final long n;
        private final byte[] payload;
        private final CompletableFuture<Received> done;
        private long next;
        private int outstanding;
        private boolean finalSent;

        Streamer(ActorRef echo, long n, long every, byte[] payload, CompletableFuture<Received> done) {
            this.every = every;
            this.echo = echo;
            this.n = n;
            this.payload = payload;
            this.done = done;
        }

        /** Sends until the window is full or the stream is out. */
        private void pump() {
            while (next < n && outstanding <= MARKS) {
                echo.tell(new Data(next, payload), getSelf());
                next++;
                if (next % every == 0) {
                    echo.tell(new Mark(), getSelf());
                    outstanding++;
                }
            }
            if (next == n && !finalSent) {
                finalSent = true;
                echo.tell(new Mark(), getSelf());
                outstanding++;
            }
        }

        @Override
        public void preStart() {
            echo.tell(new Reset(), getSelf());
            pump();
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(Received.class, r -> {
                    outstanding--;
                    if (finalSent && outstanding == 0) {
                        done.complete(r);
                    } else {
                        pump();
                    }
                })
                .build();
        }
    }

    static Json run(Args a) throws Exception {
        String mode = a.str("mode", "pingpong");
        int inFlight = (int) a.num("in-flight", 1);
        long msgs = a.num("msgs", mode.equals("stream") ? 1_000_000 : inFlight == 1 ? 20_000 : 200_000);
        byte[] payload = new byte[(int) a.num("size", 100)];
        long every = a.num("every", 1_000);
        Arrays.fill(payload, (byte) 0x5a);
        Process echoJvm = startEchoJvm();
        ActorSystem system = ActorSystem.create("remote-driver", config());
        Check check = new Check();
        List<Long> latencies = new ArrayList<>();
        try {
            int port = readPort(echoJvm);
            ActorRef echo = system.actorSelection("pekko://remote-echo@127.0.0.1:" + port + "/user/echo")
                .resolveOne(Duration.ofSeconds(30)).toCompletableFuture().get(60, TimeUnit.SECONDS);
            Steady.Trial trial = measured -> {
                long start = System.nanoTime();
                if (mode.equals("stream")) {
                    CompletableFuture<Received> done = new CompletableFuture<>();
                    ActorRef s = system.actorOf(Props.create(Streamer.class, () -> new Streamer(echo, msgs, every, payload, done)));
                    Received r = done.get(120, TimeUnit.SECONDS);
                    double ns = (System.nanoTime() - start) / (double) msgs;
                    system.stop(s);
                    check.that(r.count() == msgs && r.outOfOrder() == 0,
                        r.count() + " of " + msgs + " stream messages arrived, " + r.outOfOrder() + " out of order");
                    return ns;
                }
                long[] times = new long[(int) msgs];
                CompletableFuture<String> done = new CompletableFuture<>();
                ActorRef p = system.actorOf(Props.create(Pinger.class, () -> new Pinger(echo, msgs, inFlight, payload, times, done)));
                String problem = done.get(120, TimeUnit.SECONDS);
                double ns = (System.nanoTime() - start) / (double) msgs;
                system.stop(p);
                check.that(problem == null, problem == null ? "" : problem);
                if (measured) for (long t : times) latencies.add(t);
                return ns;
            };
            Steady.Result result = new Steady(a).measure("remote " + mode + " " + inFlight, trial);
            double median = result.median();
            Json json = new Json()
                .put("experiment", "remote")
                .put("mode", mode)
                .put("msgs", msgs)
                .put("in_flight", inFlight)
                .put("size", payload.length)
                .put("threads", Stats.dispatcherThreads(system))
                .put("ns_per_msg", median)
                .put("msgs_per_s", 1e9 / median);
            if (!latencies.isEmpty()) {
                double[] v = latencies.stream().mapToDouble(Long::doubleValue).sorted().toArray();
                json.put("rtt_p50_us", v[(int) Math.round((v.length - 1) * 0.50)] / 1e3)
                    .put("rtt_p99_us", v[(int) Math.round((v.length - 1) * 0.99)] / 1e3);
            }
            return check.into(result.into(json, ""));
        } finally {
            system.terminate();
            echoJvm.getOutputStream().close();
            if (!echoJvm.waitFor(10, TimeUnit.SECONDS)) echoJvm.destroyForcibly();
        }
    }

    /** The second JVM: same java, same options, same jar. */
    static Process startEchoJvm() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        String jar = Remote.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", jar, "troupe.peer.Main", "remote-echo"));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        // It must not outlive this JVM, however this one ends.
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        return p;
    }

    static int readPort(Process echoJvm) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(echoJvm.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                return r.readLine();
            } catch (Exception e) {
                return null;
            }
        });
        String first = line.get(60, TimeUnit.SECONDS);
        if (first == null || !first.startsWith("LISTENING ")) {
            throw new ValidationError("the echo JVM did not start: " + first);
        }
        return Integer.parseInt(first.substring("LISTENING ".length()).trim());
    }
}

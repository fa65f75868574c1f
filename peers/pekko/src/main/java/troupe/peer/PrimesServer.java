// The primes REST service on Pekko HTTP + actors: GET /primes/{n} asks a
// round-robin pool of four prime-worker actors sharing a growing sieve
// cache and answers their JSON array; the same validation and error bodies
// as troupe's service (400 for a bad n, 404, 405, 414). Prints
// `LISTENING <port>` once bound and serves until killed.
package troupe.peer;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.routing.RoundRobinPool;

final class PrimesServer extends AllDirectives {
    /** The first primes found so far; grown under its lock. */
    static final class Cache {
        private int[] primes = {2, 3, 5, 7, 11, 13};
        private int count = primes.length;

        synchronized String first(int n) {
            while (count < n) grow();
            StringBuilder b = new StringBuilder(n * 7 + 2).append('[');
            for (int i = 0; i < n; i++) {
                if (i > 0) b.append(',');
                b.append(primes[i]);
            }
            return b.append(']').toString();
        }

        private void grow() {
            int limit = primes[count - 1] * 2;
            boolean[] composite = new boolean[limit + 1];
            int[] found = new int[limit];
            int k = 0;
            for (int i = 2; i <= limit; i++) {
                if (!composite[i]) {
                    found[k++] = i;
                    for (long j = (long) i * i; j <= limit; j += i) composite[(int) j] = true;
                }
            }
            primes = java.util.Arrays.copyOf(found, k);
            count = k;
        }
    }

    record First(int n) {}

    static final class Worker extends AbstractActor {
        private final Cache cache;

        Worker(Cache cache) {
            this.cache = cache;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                .match(First.class, f -> getSender().tell(cache.first(f.n()), getSelf()))
                .build();
        }
    }

    private final ActorRef workers;
    private final int maxN;

    PrimesServer(ActorRef workers, int maxN) {
        this.workers = workers;
        this.maxN = maxN;
    }

    private static HttpResponse json(int status, String body) {
        return HttpResponse.create().withStatus(status).withEntity(ContentTypes.APPLICATION_JSON, body);
    }

    private static HttpResponse error(int status, String message) {
        return json(status, "{\"error\":\"" + message.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}");
    }

    CompletionStage<HttpResponse> handle(HttpRequest request) {
        String method = request.method().value();
        String path = request.getUri().path();
        if (path.length() > 256) return done(error(414, "path longer than 256 bytes"));
        HttpResponse refused;
        Integer n = null;
        if (path.equals("/health")) {
            refused = null;
        } else if (path.startsWith("/primes/")) {
            String text = path.substring("/primes/".length());
            if (text.isEmpty() || !text.chars().allMatch(Character::isDigit)) {
                return done(error(400, "n must be a whole number from 1 to " + maxN + ", got \"" + text + "\""));
            }
            try {
                n = Integer.parseInt(text);
            } catch (NumberFormatException e) {
                n = Integer.MAX_VALUE;
            }
            if (n == 0) return done(error(400, "n must be a whole number from 1 to " + maxN + ", got \"0\""));
            if (n > maxN) return done(error(400, "n must be at most " + maxN + ", got " + text));
            refused = null;
        } else {
            return done(error(404, "no such resource: " + path));
        }
        if (!method.equals("GET")) return done(error(405, "method " + method + " not allowed; use GET"));
        if (n == null) return done(json(200, "{\"status\":\"ok\"}"));
        // handleAsync with a direct executor: the answer is built on the
        // thread that completes the ask. The plain stage methods of the
        // converted Scala future hop through the JDK common pool, which on
        // 2 cores costs a thread hand-off per request.
        return Patterns.ask(workers, new First(n), Duration.ofSeconds(5))
            .handleAsync((body, e) -> e == null
                ? json(200, (String) body)
                : error(503, "the computation timed out"), Runnable::run);
    }

    private static CompletionStage<HttpResponse> done(HttpResponse r) {
        return CompletableFuture.completedFuture(r);
    }

    Route route() {
        return extractRequest(request -> completeWithFuture(handle(request)));
    }

    static void run(Args a) throws Exception {
        int port = (int) a.num("port", 0);
        int maxN = (int) a.num("max-n", 100_000);
        ActorSystem system = ActorSystem.create("primes");
        Cache cache = new Cache();
        ActorRef workers = system.actorOf(new RoundRobinPool(4).props(Props.create(Worker.class, () -> new Worker(cache))));
        PrimesServer server = new PrimesServer(workers, maxN);
        ServerBinding binding = Http.get(system)
            .newServerAt("127.0.0.1", port)
            .bind(server.route())
            .toCompletableFuture()
            .get();
        System.out.println("THREADS " + Stats.dispatcherThreads(system));
        System.out.println("LISTENING " + binding.localAddress().getPort());
        System.out.flush();
        system.getWhenTerminated().toCompletableFuture().get();
    }
}

// Entry point of the Pekko peer: `java -jar troupe-pekko-peer.jar <experiment> --key value ...`.
// Every experiment prints exactly one line `RESULT {json}` on stdout; when a
// check failed the line has a `failure` field and the exit status is 1. A
// run that cannot finish at all (a timeout) prints no RESULT and exits 1.
package troupe.peer;

import java.util.HashMap;
import java.util.Map;

public final class Main {
    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: <pingpong|chameneos|trading|delayed|remote|primes-serve> [--key value]...");
            System.exit(2);
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                System.err.println("expected --key value, found " + args[i]);
                System.exit(2);
            }
            // The first occurrence wins: a caller's own options come before
            // the protocol options the bench appends to every run.
            opts.putIfAbsent(args[i].substring(2), args[i + 1]);
        }
        Args a = new Args(opts);
        Json result = null;
        try {
            switch (args[0]) {
                case "pingpong" -> result = PingPong.run(a);
                case "chameneos" -> result = Chameneos.run(a);
                case "trading" -> result = Trading.run(a);
                case "delayed" -> result = Delayed.run(a);
                case "remote" -> result = Remote.run(a);
                case "remote-echo" -> Remote.serveEcho();
                case "primes-serve" -> PrimesServer.run(a);
                default -> {
                    System.err.println("unknown experiment " + args[0]);
                    System.exit(2);
                }
            }
        } catch (ValidationError e) {
            System.err.println("validation failed: " + e.getMessage());
            System.exit(1);
        }
        if (result != null) {
            result.print();
            if (result.failed()) System.exit(1);
        }
        System.exit(0);
    }
}

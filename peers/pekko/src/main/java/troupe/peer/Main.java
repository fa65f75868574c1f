// Entry point of the Pekko peer: `java -jar troupe-pekko-peer.jar <experiment> --key value ...`.
// Every experiment prints exactly one line `RESULT {json}` on stdout and
// exits non-zero with a message on stderr when its validation fails.
package troupe.peer;

import java.util.HashMap;
import java.util.Map;

public final class Main {
    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: <pingpong|chameneos|trading|delayed|primes-serve> [--key value]...");
            System.exit(2);
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                System.err.println("expected --key value, found " + args[i]);
                System.exit(2);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        Args a = new Args(opts);
        try {
            switch (args[0]) {
                case "pingpong" -> PingPong.run(a);
                case "chameneos" -> Chameneos.run(a);
                case "trading" -> Trading.run(a);
                case "delayed" -> Delayed.run(a);
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
        System.exit(0);
    }
}

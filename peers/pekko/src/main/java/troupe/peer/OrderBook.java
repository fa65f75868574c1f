// A limit order book with price-time priority: best price first, oldest
// first within a price, partial fills, execution at the resting order's
// price. The same rules as troupe's trading-engine crate. The book keeps a
// digest of everything it did, in order: every order it processed (id,
// side, price, quantity) and every trade (taker, maker, price, quantity),
// so that two books fed the same orders in the same order have equal
// digests and a replica that processed them in another order does not.
package troupe.peer;

import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Map;
import java.util.TreeMap;

final class OrderBook {
    static final class Order {
        final long id;
        final boolean buy;
        final long price;
        long qty;

        Order(long id, boolean buy, long price, long qty) {
            this.id = id;
            this.buy = buy;
            this.price = price;
            this.qty = qty;
        }
    }

    private final TreeMap<Long, ArrayDeque<Order>> bids = new TreeMap<>(Comparator.reverseOrder());
    private final TreeMap<Long, ArrayDeque<Order>> asks = new TreeMap<>();
    long resting;
    /** A multiply-rotate hash of the processed orders and the trades, in the order they happened. */
    long digest = 0xcbf29ce484222325L;

    /** Folds one word in; the order of the words matters (the step does not commute). */
    private void mix(long v) {
        digest = Long.rotateLeft((digest ^ v) * 0x9E3779B97F4A7C15L, 31);
    }

    /** Matches the order; returns the number of trades. */
    int place(long id, boolean buy, long price, long qty) {
        mix(id);
        mix(buy ? 1 : 0);
        mix(price);
        mix(qty);
        TreeMap<Long, ArrayDeque<Order>> opposite = buy ? asks : bids;
        int trades = 0;
        while (qty > 0 && !opposite.isEmpty()) {
            Map.Entry<Long, ArrayDeque<Order>> best = opposite.firstEntry();
            long p = best.getKey();
            if (buy ? p > price : p < price) break;
            ArrayDeque<Order> level = best.getValue();
            while (qty > 0 && !level.isEmpty()) {
                Order head = level.peekFirst();
                long q = Math.min(qty, head.qty);
                head.qty -= q;
                qty -= q;
                trades++;
                mix(id);
                mix(head.id);
                mix(p);
                mix(q);
                if (head.qty == 0) {
                    level.pollFirst();
                    resting--;
                }
            }
            if (level.isEmpty()) opposite.pollFirstEntry();
        }
        if (qty > 0) {
            (buy ? bids : asks).computeIfAbsent(price, k -> new ArrayDeque<>()).addLast(new Order(id, buy, price, qty));
            resting++;
        }
        return trades;
    }
}

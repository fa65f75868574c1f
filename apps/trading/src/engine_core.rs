//! What a matching engine is, without any concurrency or log: the 100-book
//! market, the counters the benchmark verifies, and per book a digest of
//! everything that happened in it, so a primary and its standby can be
//! compared. The locked variant wraps it in a lock; the actor variants own
//! it inside an actor (both through `ledger::Ledger`).
//!
//! The digest of a book folds in, in processing order, every order it was
//! given (id, side, kind, price, quantity) and every trade it made (buyer,
//! seller, price, quantity). Two engines that processed the same orders in
//! the same order have equal digests; a standby that processed them in
//! another order almost surely has not, even when the books end equal (in
//! the seed scenario every book ends empty) and the counts agree.

use std::hash::{DefaultHasher, Hash, Hasher};

use trading_engine::{Command, Market, NewOrder, OrderId, OrderKind, Outcome, Side, Trade};

use crate::topology::{self, BOOKS};

/// One engine's books, counters and digests.
#[derive(Debug)]
pub struct EngineCore {
    market: Market,
    orders: u64,
    trades: u64,
    rejected: u64,
    digests: [u64; BOOKS],
    last_order: Option<OrderId>,
}

/// What an engine has done, for verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineSummary {
    /// Orders processed.
    pub orders: u64,
    /// Trades executed.
    pub trades: u64,
    /// Orders refused (should be 0 in the scenario).
    pub rejected: u64,
    /// Orders resting at the end.
    pub resting: u64,
    /// A hash of every resting order in priority order: equal books give
    /// equal fingerprints.
    pub fingerprint: u64,
    /// Per book (by [`trading_engine::BookId`]), the digest of its orders
    /// and trades in processing order.
    pub digests: [u64; BOOKS],
}

/// An engine taken apart: see [`EngineCore::parts`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreParts {
    /// Orders processed.
    pub orders: u64,
    /// Trades executed.
    pub trades: u64,
    /// Orders refused.
    pub rejected: u64,
    /// The books' digests.
    pub digests: [u64; BOOKS],
    /// The last order processed.
    pub last_order: Option<OrderId>,
    /// Every resting order, as the limit order that rests it again.
    pub resting: Vec<NewOrder>,
}

impl EngineSummary {
    /// The books (by id) whose digests differ between `self` and `other`.
    pub fn books_differing_from(&self, other: &EngineSummary) -> Vec<usize> {
        (0..BOOKS)
            .filter(|&b| self.digests[b] != other.digests[b])
            .collect()
    }
}

impl Default for EngineCore {
    fn default() -> Self {
        EngineCore::new()
    }
}

/// Folds `word` into `digest`. Order-sensitive (rotate, xor, multiply by
/// an odd constant: each step is a bijection of the running value), and a
/// handful of instructions, because it runs on every order of every
/// benchmark run. Not a cryptographic hash: it guards against bugs, not
/// against an adversary.
fn fold(digest: u64, word: u64) -> u64 {
    (digest.rotate_left(27) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn fold_order(digest: u64, order: &NewOrder) -> u64 {
    let side = match order.side {
        Side::Buy => 0,
        Side::Sell => 1,
    };
    let kind = match order.kind {
        OrderKind::Limit => 0,
        OrderKind::ImmediateOrCancel => 2,
        OrderKind::Market => 4,
    };
    [0x4f52_4400 | side | kind, order.id, order.price, order.qty]
        .into_iter()
        .fold(digest, fold)
}

fn fold_trade(digest: u64, trade: &Trade) -> u64 {
    [0x5452_4144, trade.buy, trade.sell, trade.price, trade.qty]
        .into_iter()
        .fold(digest, fold)
}

impl EngineCore {
    /// An engine with empty books.
    pub fn new() -> Self {
        EngineCore {
            market: topology::market(),
            orders: 0,
            trades: 0,
            rejected: 0,
            digests: [0; BOOKS],
            last_order: None,
        }
    }

    /// Matches one order; returns the number of trades it made.
    pub fn process(&mut self, order: &NewOrder) -> u64 {
        let book = order.book.0 as usize;
        let mut digest = fold_order(self.digests.get(book).copied().unwrap_or(0), order);
        let mut trades = 0;
        let outcome = self.market.execute(&Command::New(*order), |t| {
            digest = fold_trade(digest, &t);
            trades += 1;
        });
        if let Some(d) = self.digests.get_mut(book) {
            *d = digest;
        }
        self.orders += 1;
        self.trades += trades;
        self.last_order = Some(order.id);
        if matches!(outcome, Outcome::Rejected(_)) {
            self.rejected += 1;
        }
        trades
    }

    /// Processes an order read back from a transaction log.
    pub fn replay(&mut self, record: &[u8]) -> Result<(), trading_engine::codec::DecodeError> {
        match trading_engine::codec::decode(record, &mut self.market)? {
            Command::New(order) => {
                self.process(&order);
                Ok(())
            }
            Command::Cancel { .. } => Err(trading_engine::codec::DecodeError(
                "engines log only new orders".into(),
            )),
        }
    }

    /// The market, to encode log records against.
    pub fn market(&self) -> &Market {
        &self.market
    }

    /// The id of the last order processed (or replayed), if any.
    pub fn last_order(&self) -> Option<OrderId> {
        self.last_order
    }

    /// Everything the engine holds, for a snapshot: the counters, the
    /// digests and every resting order (per book, bids then asks, each in
    /// priority order). [`from_parts`](Self::from_parts) rebuilds an equal
    /// engine from it.
    pub fn parts(&self) -> CoreParts {
        let mut resting = Vec::new();
        for book in self.market.books() {
            for side in [Side::Buy, Side::Sell] {
                resting.extend(book.orders(side).into_iter().map(|o| NewOrder {
                    id: o.id,
                    book: book.id(),
                    side,
                    price: o.price,
                    qty: o.qty,
                    kind: OrderKind::Limit,
                }));
            }
        }
        CoreParts {
            orders: self.orders,
            trades: self.trades,
            rejected: self.rejected,
            digests: self.digests,
            last_order: self.last_order,
            resting,
        }
    }

    /// The engine [`parts`](Self::parts) describes. Resting orders are
    /// placed again in priority order on an empty market: a book is never
    /// crossed, so none of them trades, and each price level gets them in
    /// the same time order. Fails if one would trade or is refused (parts
    /// that no engine produced).
    pub fn from_parts(parts: CoreParts) -> Result<Self, String> {
        let mut market = topology::market();
        for order in &parts.resting {
            let mut traded = false;
            match market.execute(&Command::New(*order), |_| traded = true) {
                Outcome::Rejected(why) => {
                    return Err(format!("resting order {} refused: {why:?}", order.id))
                }
                _ if traded => return Err(format!("resting order {} trades", order.id)),
                _ => {}
            }
        }
        Ok(EngineCore {
            market,
            orders: parts.orders,
            trades: parts.trades,
            rejected: parts.rejected,
            digests: parts.digests,
            last_order: parts.last_order,
        })
    }

    /// The counters, a fingerprint of the books and the books' digests.
    pub fn summary(&self) -> EngineSummary {
        let mut hasher = DefaultHasher::new();
        let mut resting = 0;
        for book in self.market.books() {
            for side in [Side::Buy, Side::Sell] {
                for order in book.orders(side) {
                    (book.id(), order).hash(&mut hasher);
                    resting += 1;
                }
            }
        }
        EngineSummary {
            orders: self.orders,
            trades: self.trades,
            rejected: self.rejected,
            resting,
            fingerprint: hasher.finish(),
            digests: self.digests,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Pattern, Scenario, LOOP_LEN};

    /// Two clients' first loop, interleaved one order each.
    fn interleaved(scenario: &Scenario) -> Vec<NewOrder> {
        (0..LOOP_LEN)
            .flat_map(|n| [scenario.order(0, n), scenario.order(1, n)])
            .collect()
    }

    fn run(orders: &[NewOrder]) -> EngineSummary {
        let mut core = EngineCore::new();
        for o in orders {
            core.process(o);
        }
        core.summary()
    }

    #[test]
    fn the_same_orders_in_the_same_order_give_the_same_digests() {
        let orders = interleaved(&Scenario::new(2, 60).unwrap());
        assert_eq!(run(&orders), run(&orders));
        assert_ne!(run(&orders).digests[0], 0);
    }

    #[test]
    fn two_asks_swapped_change_the_trades_and_the_digest_but_not_the_counts() {
        let orders = interleaved(&Scenario::new(2, 60).unwrap());
        let mut swapped = orders.clone();
        swapped.swap(0, 1); // the two clients' asks in A1
        let (a, b) = (run(&orders), run(&swapped));
        // What the old check compared (counts and resting orders) agrees...
        assert_eq!(
            (a.orders, a.trades, a.rejected, a.resting, a.fingerprint),
            (b.orders, b.trades, b.rejected, b.resting, b.fingerprint)
        );
        // ...but book A1 (id 0) saw other trades, and only it.
        assert_eq!(a.books_differing_from(&b), [0]);
    }

    #[test]
    fn two_bids_swapped_change_the_digest_even_with_orders_resting() {
        let scenario = Scenario::new(2, 60).unwrap().with_pattern(Pattern::Resting);
        let orders = interleaved(&scenario);
        let first_bid = orders.iter().position(|o| o.side == Side::Buy).unwrap();
        let mut swapped = orders.clone();
        swapped.swap(first_bid, first_bid + 1); // both clients' bids in A1
        let (a, b) = (run(&orders), run(&swapped));
        assert_eq!(a.resting, scenario.resting());
        assert_eq!((a.resting, a.fingerprint), (b.resting, b.fingerprint));
        assert_eq!(a.books_differing_from(&b), [0]);
    }
}

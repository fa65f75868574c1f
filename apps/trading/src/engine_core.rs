//! What a matching engine is, without any concurrency: the 100-book market,
//! the counters the benchmark verifies, and a fingerprint of the books so a
//! primary and its standby can be compared. The sync variant wraps it in a
//! lock; the actor variants own it inside an actor.

use std::hash::{DefaultHasher, Hash, Hasher};

use trading_engine::{Command, Market, NewOrder, Outcome, Side};

use crate::topology;

/// One engine's books and counters.
#[derive(Debug)]
pub struct EngineCore {
    market: Market,
    orders: u64,
    trades: u64,
    rejected: u64,
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
}

impl Default for EngineCore {
    fn default() -> Self {
        EngineCore::new()
    }
}

impl EngineCore {
    /// An engine with empty books.
    pub fn new() -> Self {
        EngineCore {
            market: topology::market(),
            orders: 0,
            trades: 0,
            rejected: 0,
        }
    }

    /// Matches one order; returns the number of trades it made.
    pub fn process(&mut self, order: &NewOrder) -> u64 {
        let mut trades = 0;
        let outcome = self.market.execute(&Command::New(*order), |_| trades += 1);
        self.orders += 1;
        self.trades += trades;
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

    /// The counters and a fingerprint of the books.
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
        }
    }
}

//! The shape of the market and of the scenarios (see docs/experiments.md,
//! trading).
//!
//! 100 books `A1..A10, B1..B10, ... J1..J10`, grouped by first letter into
//! 10 matching engines (each with a standby), and 10 order receivers;
//! client `i` uses receiver `i mod 10`. Every engine's market knows all 100
//! book names, so a [`BookId`] means the same book everywhere and routing is
//! a table lookup.
//!
//! The seed scenario: books `A1..A5, B1..B5, C1..C5`, book `X<i>` at the
//! single price `100 - i`, every order of volume 1000; each client loops
//! over 15 asks then 15 bids on those books, one order at a time. Because a
//! client places its ask in a book before its bid there, every book always
//! has at least as many asks as bids placed, so each bid fills exactly one
//! resting ask: trades == orders / 2, and every book ends empty whatever
//! the interleaving of the clients.
//!
//! The `resting` pattern is the same loop with bids for half the ask's
//! volume: each bid still makes exactly one trade (the oldest ask with
//! volume left always has 500 or 1000 lots), and half the ask volume stays
//! in the books. Which asks rest, and in which order, depends on the order
//! the engine processed the clients' orders in, so a standby that processed
//! them in another order ends with other books, not only other trades.

use std::fmt;
use std::str::FromStr;

use trading_engine::{BookId, Market, NewOrder, OrderKind, Side};

use crate::error::ParseError;

/// Number of matching engines (one per book letter).
pub const ENGINES: usize = 10;
/// Number of order receivers.
pub const RECEIVERS: usize = 10;
/// Books per engine.
pub const BOOKS_PER_ENGINE: usize = 10;
/// Orders in one client loop.
pub const LOOP_LEN: usize = 30;
/// The volume of every seed-scenario order, and of every ask.
pub const VOLUME: u64 = 1000;
/// Books in the market.
pub const BOOKS: usize = ENGINES * BOOKS_PER_ENGINE;
/// Books the scenario's orders go to (A1..A5, B1..B5, C1..C5).
pub const SCENARIO_BOOKS: usize = LOOP_LEN / 2;

/// Which half of an engine pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Half {
    /// Takes orders from receivers.
    Primary,
    /// Replicates its primary.
    Standby,
}

impl Half {
    /// `primary` or `standby`, as in log directory and actor names.
    pub fn name(self) -> &'static str {
        match self {
            Half::Primary => "primary",
            Half::Standby => "standby",
        }
    }
}

/// What the scenario's bids look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Pattern {
    /// Bids as large as the asks: every book ends empty.
    #[default]
    Seed,
    /// Bids for half an ask: half the ask volume ends resting.
    Resting,
}

impl Pattern {
    /// Every pattern, in report order.
    pub const ALL: [Pattern; 2] = [Pattern::Seed, Pattern::Resting];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Seed => "seed",
            Pattern::Resting => "resting",
        }
    }

    fn bid_volume(self) -> u64 {
        match self {
            Pattern::Seed => VOLUME,
            Pattern::Resting => VOLUME / 2,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Pattern {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        Pattern::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| ParseError::new("scenario", s, "seed or resting"))
    }
}

/// The 100 book names, in [`BookId`] order (`A1` is 0, `J10` is 99).
pub fn book_names() -> Vec<String> {
    let mut names = Vec::with_capacity(BOOKS);
    for letter in b'A'..b'A' + ENGINES as u8 {
        for i in 1..=BOOKS_PER_ENGINE {
            names.push(format!("{}{i}", letter as char));
        }
    }
    names
}

/// A market with all 100 books.
pub fn market() -> Market {
    Market::with_books(book_names())
}

/// The engine that owns `book`.
pub fn engine_of(book: BookId) -> usize {
    book.0 as usize / BOOKS_PER_ENGINE
}

/// How the scenario's work is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Concurrent clients.
    pub clients: usize,
    /// Loops of 30 orders per client.
    pub repeat: usize,
    /// What the bids look like.
    pub pattern: Pattern,
}

impl Scenario {
    /// `orders` split evenly over `clients` (rounded down to whole loops),
    /// in the seed pattern.
    ///
    /// # Errors
    ///
    /// If there are no clients, or too few orders for one loop per client.
    pub fn new(clients: usize, orders: usize) -> Result<Self, ScenarioError> {
        if clients == 0 {
            return Err(ScenarioError::NoClients);
        }
        let repeat = orders / LOOP_LEN / clients;
        if repeat == 0 {
            return Err(ScenarioError::TooFewOrders { orders, clients });
        }
        Ok(Scenario {
            clients,
            repeat,
            pattern: Pattern::Seed,
        })
    }

    /// The same split in `pattern`.
    pub fn with_pattern(self, pattern: Pattern) -> Self {
        Scenario { pattern, ..self }
    }

    /// Trades the scenario makes: every bid fills against exactly one ask.
    pub fn trades(&self) -> u64 {
        self.orders() / 2
    }

    /// Orders resting at the end over all books: none in the seed pattern;
    /// in the resting one, each of the 15 books got `n` asks and `n` bids
    /// for half an ask, so the first `n / 2` asks filled and the rest rest.
    pub fn resting(&self) -> u64 {
        match self.pattern {
            Pattern::Seed => 0,
            Pattern::Resting => {
                let n = (self.clients * self.repeat) as u64;
                SCENARIO_BOOKS as u64 * n.div_ceil(2)
            }
        }
    }

    /// The `n`th order (0-based) of client `client`: position `n % 30` of
    /// the loop, with an id unique across clients and loops.
    pub fn order(&self, client: usize, n: usize) -> NewOrder {
        let mut order = scenario_order(client, n);
        if order.side == Side::Buy {
            order.qty = self.pattern.bid_volume();
        }
        order
    }

    /// Orders placed by all clients together.
    pub fn orders(&self) -> u64 {
        (self.clients * self.repeat * LOOP_LEN) as u64
    }

    /// Orders placed by one client.
    pub fn orders_per_client(&self) -> usize {
        self.repeat * LOOP_LEN
    }
}

/// Why clients and orders cannot make a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScenarioError {
    /// Zero clients.
    NoClients,
    /// Fewer orders than one 30-order loop per client.
    TooFewOrders {
        /// Orders asked for.
        orders: usize,
        /// Clients asked for.
        clients: usize,
    },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::NoClients => f.write_str("at least one client is needed"),
            ScenarioError::TooFewOrders { orders, clients } => write!(
                f,
                "{orders} orders are fewer than one loop of {} per client for {clients} clients",
                LOOP_LEN
            ),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The `n`th order (0-based) of client `client` in the seed pattern:
/// position `n % 30` of the loop, with an id unique across clients and
/// loops.
pub fn scenario_order(client: usize, n: usize) -> NewOrder {
    let position = n % LOOP_LEN;
    let side = if position < LOOP_LEN / 2 {
        Side::Sell
    } else {
        Side::Buy
    };
    let slot = position % (LOOP_LEN / 2); // 0..15: A1..A5, B1..B5, C1..C5
    let letter = slot / 5;
    let number = slot % 5 + 1;
    NewOrder {
        id: ((client as u64) << 32) | n as u64,
        book: BookId((letter * BOOKS_PER_ENGINE + number - 1) as u32),
        side,
        price: 100 - number as u64,
        qty: VOLUME,
        kind: OrderKind::Limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn books_and_routing_follow_the_letters() {
        let names = book_names();
        assert_eq!(names.len(), 100);
        assert_eq!((names[0].as_str(), names[99].as_str()), ("A1", "J10"));
        let m = market();
        assert_eq!(engine_of(m.book_id("C7").unwrap()), 2);
        assert_eq!(engine_of(m.book_id("J10").unwrap()), 9);
    }

    #[test]
    fn a_loop_is_fifteen_asks_then_fifteen_bids_on_three_engines() {
        let m = market();
        let orders: Vec<_> = (0..LOOP_LEN).map(|n| scenario_order(3, n)).collect();
        assert!(orders[..15].iter().all(|o| o.side == Side::Sell));
        assert!(orders[15..].iter().all(|o| o.side == Side::Buy));
        assert_eq!(m.name(orders[0].book), "A1");
        assert_eq!(m.name(orders[14].book), "C5");
        assert_eq!((orders[0].price, orders[4].price), (99, 95));
        assert!(orders.iter().all(|o| engine_of(o.book) < 3));
    }

    /// True if no value occurs twice, adjacent or not (a `dedup` on an
    /// unsorted list only drops adjacent repeats).
    fn all_distinct(ids: &[u64]) -> bool {
        let set: std::collections::HashSet<_> = ids.iter().collect();
        set.len() == ids.len()
    }

    #[test]
    fn the_distinctness_check_sees_repeats_that_are_not_adjacent() {
        assert!(all_distinct(&[1, 2, 3]));
        assert!(!all_distinct(&[1, 2, 1]));
    }

    #[test]
    fn ids_are_unique_across_clients_and_loops() {
        let s = Scenario::new(3, 3 * 3 * LOOP_LEN).unwrap();
        let ids: Vec<_> = (0..s.clients)
            .flat_map(|c| (0..s.orders_per_client()).map(move |n| s.order(c, n).id))
            .collect();
        assert_eq!(ids.len(), 3 * 3 * LOOP_LEN);
        assert!(all_distinct(&ids));
    }

    #[test]
    fn the_resting_pattern_halves_the_bids_only() {
        let seed = Scenario::new(2, 2 * LOOP_LEN).unwrap();
        let resting = seed.with_pattern(Pattern::Resting);
        for n in 0..LOOP_LEN {
            let (a, b) = (seed.order(1, n), resting.order(1, n));
            assert_eq!(
                (a.id, a.book, a.side, a.price),
                (b.id, b.book, b.side, b.price)
            );
            let half = if a.side == Side::Buy { 2 } else { 1 };
            assert_eq!(a.qty, b.qty * half);
        }
        // 2 clients x 1 loop: 2 asks per book, the first fills; 15 books.
        assert_eq!((seed.resting(), resting.resting()), (0, 15));
        assert_eq!(resting.with_pattern(Pattern::Resting).trades(), 30);
    }

    #[test]
    fn work_is_split_in_whole_loops() {
        let s = Scenario::new(40, 750_000).unwrap();
        assert_eq!((s.repeat, s.orders()), (625, 750_000));
        assert_eq!(Scenario::new(7, 750_000).unwrap().orders(), 749_910);
        assert_eq!(Scenario::new(0, 10), Err(ScenarioError::NoClients));
        assert!(matches!(
            Scenario::new(2, 40),
            Err(ScenarioError::TooFewOrders { .. })
        ));
    }
}

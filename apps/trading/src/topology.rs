//! The shape of the market and of the seed scenario (EXPERIMENTS.md §1).
//!
//! 100 books `A1..A10, B1..B10, ... J1..J10`, grouped by first letter into
//! 10 matching engines (each with a standby), and 10 order receivers;
//! client `i` uses receiver `i mod 10`. Every engine's market knows all 100
//! book names, so a [`BookId`] means the same book everywhere and routing is
//! a table lookup.
//!
//! The scenario: books `A1..A5, B1..B5, C1..C5`, book `X<i>` at the single
//! price `100 - i`, every order of volume 1000; each client loops over 15
//! asks then 15 bids on those books, one order at a time. Because a client
//! places its ask in a book before its bid there, every book always has at
//! least as many asks as bids placed, so each bid fills exactly one resting
//! ask: trades == orders / 2.

use trading_engine::{BookId, Market, NewOrder, OrderKind, Side};

/// Number of matching engines (one per book letter).
pub const ENGINES: usize = 10;
/// Number of order receivers.
pub const RECEIVERS: usize = 10;
/// Books per engine.
pub const BOOKS_PER_ENGINE: usize = 10;
/// Orders in one client loop.
pub const LOOP_LEN: usize = 30;
/// The volume of every scenario order.
pub const VOLUME: u64 = 1000;

/// The 100 book names, in [`BookId`] order (`A1` is 0, `J10` is 99).
pub fn book_names() -> Vec<String> {
    let mut names = Vec::with_capacity(ENGINES * BOOKS_PER_ENGINE);
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
}

impl Scenario {
    /// `orders` split evenly over `clients` (rounded down to whole loops).
    ///
    /// # Errors
    ///
    /// If there are no clients, or too few orders for one loop per client.
    pub fn new(clients: usize, orders: usize) -> Result<Self, String> {
        if clients == 0 {
            return Err("at least one client is needed".into());
        }
        let repeat = orders / LOOP_LEN / clients;
        if repeat == 0 {
            return Err(format!(
                "{orders} orders are fewer than one loop of {LOOP_LEN} per client for {clients} clients"
            ));
        }
        Ok(Scenario { clients, repeat })
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

/// The `n`th order (0-based) of client `client`: position `n % 30` of the
/// loop, with an id unique across clients and loops.
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
        let mut ids: Vec<_> = orders.iter().map(|o| o.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), LOOP_LEN);
    }

    #[test]
    fn work_is_split_in_whole_loops() {
        let s = Scenario::new(40, 750_000).unwrap();
        assert_eq!((s.repeat, s.orders()), (625, 750_000));
        assert_eq!(Scenario::new(7, 750_000).unwrap().orders(), 749_910);
        assert!(Scenario::new(0, 10).is_err());
        assert!(Scenario::new(2, 40).is_err());
    }
}

//! One order book: two ladders of resting orders, a slab that stores them,
//! and an id index for cancels. Matching is price-time priority: the best
//! price first, the oldest order first within a price, each execution at the
//! resting order's price.
//!
//! Invariants (checked by the property tests after every command):
//! - the book is never crossed: best bid < best ask when both exist;
//! - every resting order has a positive quantity and is in `index`;
//! - quantity is conserved: lots in = lots traded × 2 + lots resting +
//!   lots cancelled.

mod ladder;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::types::{
    BookId, NewOrder, OrderId, OrderKind, Outcome, Price, Qty, Reject, Side, Trade,
};
use ladder::{Ladder, Slot, NIL};

/// A resting order as seen from outside the book.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RestingOrder {
    /// The order's id.
    pub id: OrderId,
    /// Its side.
    pub side: Side,
    /// Its limit price.
    pub price: Price,
    /// Lots still resting.
    pub qty: Qty,
}

/// A limit order book for one instrument.
#[derive(Debug)]
pub struct OrderBook {
    id: BookId,
    bids: Ladder,
    asks: Ladder,
    slots: Vec<Slot>,
    free: Vec<u32>,
    index: HashMap<OrderId, u32, BuildHasherDefault<IdHasher>>,
}

impl OrderBook {
    /// An empty book.
    pub fn new(id: BookId) -> Self {
        OrderBook {
            id,
            bids: Ladder::new(Side::Buy),
            asks: Ladder::new(Side::Sell),
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::default(),
        }
    }

    /// This book's id.
    pub fn id(&self) -> BookId {
        self.id
    }

    /// Matches `order` against the book, reporting each execution to
    /// `on_trade` in execution order, then rests or drops the remainder as
    /// its kind says.
    pub fn place(&mut self, order: &NewOrder, on_trade: &mut impl FnMut(Trade)) -> Outcome {
        if order.qty == 0 {
            return Outcome::Rejected(Reject::ZeroQuantity);
        }
        if order.kind != OrderKind::Market && order.price == 0 {
            return Outcome::Rejected(Reject::ZeroPrice);
        }
        if self.index.contains_key(&order.id) {
            return Outcome::Rejected(Reject::DuplicateId);
        }
        let remaining = self.take_liquidity(order, on_trade);
        let filled = order.qty - remaining;
        match order.kind {
            OrderKind::Limit => {
                if remaining > 0 {
                    self.rest(order, remaining);
                }
                Outcome::Accepted {
                    filled,
                    resting: remaining,
                }
            }
            OrderKind::ImmediateOrCancel | OrderKind::Market => Outcome::Done {
                filled,
                cancelled: remaining,
            },
        }
    }

    /// Trades `order` against the opposite side while prices cross; returns
    /// the quantity left.
    fn take_liquidity(&mut self, order: &NewOrder, on_trade: &mut impl FnMut(Trade)) -> Qty {
        let OrderBook {
            id,
            bids,
            asks,
            slots,
            free,
            index,
        } = self;
        let opposite = match order.side {
            Side::Buy => asks,
            Side::Sell => bids,
        };
        let mut remaining = order.qty;
        while remaining > 0 {
            let Some(level) = opposite.best_mut() else {
                break;
            };
            let crosses = match (order.kind, order.side) {
                (OrderKind::Market, _) => true,
                (_, Side::Buy) => level.price <= order.price,
                (_, Side::Sell) => level.price >= order.price,
            };
            if !crosses {
                break;
            }
            while remaining > 0 && level.head != NIL {
                let head = level.head;
                let slot = &mut slots[head as usize];
                let qty = remaining.min(slot.qty);
                let (buy, sell) = match order.side {
                    Side::Buy => (order.id, slot.id),
                    Side::Sell => (slot.id, order.id),
                };
                on_trade(Trade {
                    book: *id,
                    buy,
                    sell,
                    price: level.price,
                    qty,
                });
                slot.qty -= qty;
                remaining -= qty;
                if slot.qty == 0 {
                    let next = slot.next;
                    index.remove(&slot.id);
                    free.push(head);
                    level.head = next;
                    if next == NIL {
                        level.tail = NIL;
                    } else {
                        slots[next as usize].prev = NIL;
                    }
                }
            }
            if level.head == NIL {
                opposite.pop_best();
            }
        }
        remaining
    }

    fn rest(&mut self, order: &NewOrder, qty: Qty) {
        let slot = Slot {
            id: order.id,
            qty,
            price: order.price,
            side: order.side,
            prev: NIL,
            next: NIL,
        };
        let idx = match self.free.pop() {
            Some(idx) => {
                self.slots[idx as usize] = slot;
                idx
            }
            None => {
                let idx = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|&i| i != NIL)
                    .expect("fewer than 2^32 - 1 resting orders per book");
                self.slots.push(slot);
                idx
            }
        };
        let ladder = match order.side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        ladder.push(&mut self.slots, idx, order.price);
        self.index.insert(order.id, idx);
    }

    /// Removes the resting order `id`.
    pub fn cancel(&mut self, id: OrderId) -> Outcome {
        let Some(idx) = self.index.remove(&id) else {
            return Outcome::CancelIgnored;
        };
        let slot = self.slots[idx as usize];
        let ladder = match slot.side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        ladder.unlink(&mut self.slots, idx);
        self.free.push(idx);
        Outcome::Cancelled { qty: slot.qty }
    }

    /// The best bid price and the lots resting at it.
    pub fn best_bid(&self) -> Option<(Price, Qty)> {
        self.bids.best().map(|l| (l.price, self.level_qty(l.head)))
    }

    /// The best ask price and the lots resting at it.
    pub fn best_ask(&self) -> Option<(Price, Qty)> {
        self.asks.best().map(|l| (l.price, self.level_qty(l.head)))
    }

    fn level_qty(&self, mut idx: u32) -> Qty {
        let mut qty = 0;
        while idx != NIL {
            let slot = &self.slots[idx as usize];
            qty += slot.qty;
            idx = slot.next;
        }
        qty
    }

    /// Number of resting orders.
    pub fn resting(&self) -> usize {
        self.index.len()
    }

    /// Number of price levels on `side`.
    pub fn depth(&self, side: Side) -> usize {
        match side {
            Side::Buy => self.bids.depth(),
            Side::Sell => self.asks.depth(),
        }
    }

    /// The resting orders of `side` in priority order: best price first,
    /// oldest first within a price.
    pub fn orders(&self, side: Side) -> Vec<RestingOrder> {
        let ladder = match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        };
        let mut out = Vec::new();
        for level in ladder.levels_best_first() {
            let mut idx = level.head;
            while idx != NIL {
                let slot = &self.slots[idx as usize];
                out.push(RestingOrder {
                    id: slot.id,
                    side,
                    price: slot.price,
                    qty: slot.qty,
                });
                idx = slot.next;
            }
        }
        out
    }
}

/// A hasher for integer order ids: one multiply, folded so both the low bits
/// (bucket) and the high bits (tag) vary. Ids are chosen by clients, not by
/// an adversary over the network, and the book never iterates the map, so
/// the DoS resistance of the default hasher buys nothing here.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

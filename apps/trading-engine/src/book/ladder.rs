//! One side of a book: price levels sorted so the best is last, each a FIFO
//! of resting orders linked through a shared slab.
//!
//! Invariants:
//! - `levels` is strictly sorted by priority: for bids ascending price, for
//!   asks descending price, so the best level is always `levels.last()` and
//!   the busy end of the vector is its tail (cheap inserts and removals).
//! - No level is empty: a level whose last order leaves is removed.
//! - Within a level, orders are linked head (oldest) to tail (newest):
//!   time priority.

use crate::types::{OrderId, Price, Qty, Side};

/// "No slot": the end of a linked list.
pub(crate) const NIL: u32 = u32::MAX;

/// A resting order, stored in the book's slab.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub id: OrderId,
    pub qty: Qty,
    pub price: Price,
    pub side: Side,
    pub prev: u32,
    pub next: u32,
}

/// A price level: the FIFO of orders resting at one price.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Level {
    pub price: Price,
    pub head: u32,
    pub tail: u32,
}

/// The resting orders of one side, best level last.
#[derive(Debug)]
pub(crate) struct Ladder {
    side: Side,
    levels: Vec<Level>,
}

impl Ladder {
    pub fn new(side: Side) -> Self {
        Ladder {
            side,
            levels: Vec::new(),
        }
    }

    /// True if `a` has strictly better priority than `b` on this side.
    fn better(&self, a: Price, b: Price) -> bool {
        match self.side {
            Side::Buy => a > b,
            Side::Sell => a < b,
        }
    }

    /// Where the level at `price` is, or where it would be inserted.
    fn search(&self, price: Price) -> Result<usize, usize> {
        // Look at the few best levels first: new orders and cancels cluster
        // near the top of the book, so this is usually one comparison.
        let mut i = self.levels.len();
        let stop = i.saturating_sub(4);
        while i > stop {
            let p = self.levels[i - 1].price;
            if p == price {
                return Ok(i - 1);
            }
            if self.better(price, p) {
                return Err(i);
            }
            i -= 1;
        }
        // Deeper in the book: the levels ascend in priority.
        let side = self.side;
        self.levels[..i].binary_search_by(|level| match side {
            Side::Buy => level.price.cmp(&price),
            Side::Sell => price.cmp(&level.price),
        })
    }

    /// The best level, if any.
    pub fn best(&self) -> Option<&Level> {
        self.levels.last()
    }

    /// The best level's head, mutable access to advance it.
    pub fn best_mut(&mut self) -> Option<&mut Level> {
        self.levels.last_mut()
    }

    /// Drops the best level (which must be empty now).
    pub fn pop_best(&mut self) {
        self.levels.pop();
    }

    /// Appends slot `idx` at the tail of the level for `price`, creating the
    /// level if needed.
    pub fn push(&mut self, slots: &mut [Slot], idx: u32, price: Price) {
        match self.search(price) {
            Ok(i) => {
                let level = &mut self.levels[i];
                let tail = level.tail;
                slots[idx as usize].prev = tail;
                slots[idx as usize].next = NIL;
                slots[tail as usize].next = idx;
                level.tail = idx;
            }
            Err(i) => {
                slots[idx as usize].prev = NIL;
                slots[idx as usize].next = NIL;
                self.levels.insert(
                    i,
                    Level {
                        price,
                        head: idx,
                        tail: idx,
                    },
                );
            }
        }
    }

    /// Unlinks slot `idx` from its level, removing the level if it empties.
    pub fn unlink(&mut self, slots: &mut [Slot], idx: u32) {
        let Slot {
            price, prev, next, ..
        } = slots[idx as usize];
        let i = self.search(price).expect("a resting order's level exists");
        if prev != NIL {
            slots[prev as usize].next = next;
        }
        if next != NIL {
            slots[next as usize].prev = prev;
        }
        let level = &mut self.levels[i];
        if level.head == idx {
            level.head = next;
        }
        if level.tail == idx {
            level.tail = prev;
        }
        if level.head == NIL {
            self.levels.remove(i);
        }
    }

    /// The levels from best to worst.
    pub fn levels_best_first(&self) -> impl Iterator<Item = &Level> {
        self.levels.iter().rev()
    }

    /// Number of price levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }
}

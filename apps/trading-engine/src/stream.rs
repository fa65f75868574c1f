//! Reproducible random command streams, for the replay micro-benchmark and
//! for generating replay-tool input: limit orders around a drifting mid
//! price, cancels of recently placed orders, and a few immediate-or-cancel
//! and market orders. A seed gives the same stream everywhere.

use crate::market::Market;
use crate::types::{BookId, Command, NewOrder, OrderKind, Side};

/// A small, fast, seedable generator (xorshift64*): the stream must be the
/// same on every platform and release, which a library RNG does not promise.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; zero is remapped).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Generates `count` commands over the books of `market` (which must have
/// at least one), deterministically from `seed`.
pub fn random_commands(market: &Market, count: usize, seed: u64) -> Vec<Command> {
    let books = market.books().len() as u64;
    assert!(books > 0, "the market needs at least one book");
    let mut rng = Rng::new(seed);
    let mut mids: Vec<u64> = vec![10_000; books as usize];
    let mut recent: Vec<(u64, BookId)> = Vec::with_capacity(1024);
    let mut out = Vec::with_capacity(count);
    let mut next_id = 1u64;
    while out.len() < count {
        let book = BookId(rng.below(books) as u32);
        let roll = rng.below(100);
        if roll < 25 && !recent.is_empty() {
            let i = rng.below(recent.len() as u64) as usize;
            let (id, book) = recent.swap_remove(i);
            out.push(Command::Cancel { id, book });
            continue;
        }
        let mid = &mut mids[book.0 as usize];
        // The mid drifts a tick now and then, so levels come and go.
        match rng.below(16) {
            0 => *mid += 1,
            1 => *mid -= 1,
            _ => {}
        }
        let side = if rng.below(2) == 0 {
            Side::Buy
        } else {
            Side::Sell
        };
        // Most orders rest a few ticks behind the mid; some cross it.
        let offset = rng.below(12);
        let price = match side {
            Side::Buy => *mid + 2 - offset.min(*mid + 1),
            Side::Sell => *mid - 2 + offset,
        };
        let kind = match roll {
            96..=97 => OrderKind::ImmediateOrCancel,
            98..=99 => OrderKind::Market,
            _ => OrderKind::Limit,
        };
        let id = next_id;
        next_id += 1;
        out.push(Command::New(NewOrder {
            id,
            book,
            side,
            price,
            qty: 1 + rng.below(100),
            kind,
        }));
        if kind == OrderKind::Limit {
            if recent.len() == recent.capacity() {
                recent.swap_remove(rng.below(recent.len() as u64) as usize);
            }
            recent.push((id, book));
        }
    }
    out
}

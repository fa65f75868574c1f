//! Which orders an engine has applied, by client: the memory that makes a
//! retried order harmless, kept as small as the orders a client can still
//! send again.
//!
//! Per client, a `floor` and the sequence numbers applied at or above it
//! (`above`). Below the floor an order counts as applied: the floor rises
//! when the applied ones are contiguous, and when the client says it holds
//! the answer of every order below a sequence number (`settle_below`,
//! from the `settled_below` field of its orders). A client resends only
//! orders it has no answer for, so an order below its settled mark reaches
//! an engine again only as a stale copy of one already answered (applied
//! here or by the primary this engine took over from) or given up, and
//! answering it without applying it is right. So `above` holds at most the
//! client's orders in flight, whatever share of a client's orders goes to
//! this engine; without the mark it held every order of a client that
//! spreads its orders over several engines (a gap below each).
//!
//! Since the floor no longer says which ids were applied, the set carries
//! their count and a digest (a sum of mixed ids): what a verifier compares
//! with the acknowledged orders. Part of an engine's state: in every
//! snapshot and catch-up, and rebuilt from the log's tail on start (where
//! it grows with the tail until the next order's mark).

use std::collections::{BTreeSet, HashMap};

use super::wire::{client_of, seq_of};

#[derive(Debug, Default)]
struct PerClient {
    floor: u32,
    above: BTreeSet<u32>,
}

impl PerClient {
    /// Raises the floor over the applied sequence numbers that continue it.
    fn climb(&mut self) {
        while self.above.remove(&self.floor) {
            self.floor += 1;
        }
    }
}

/// The set of applied order ids.
#[derive(Debug, Default)]
pub struct Applied {
    clients: HashMap<u32, PerClient>,
    count: u64,
    digest: u64,
}

/// One id's share of a digest: a bijective mix (splitmix64's finalizer),
/// so that sums of distinct sets of ids rarely collide.
pub fn mix(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Applied {
    /// Whether order `id` counts as applied.
    pub fn contains(&self, id: u64) -> bool {
        let seq = seq_of(id);
        self.clients
            .get(&client_of(id))
            .is_some_and(|c| seq < c.floor || c.above.contains(&seq))
    }

    /// Records order `id` as applied; false if it already counted as such.
    pub fn insert(&mut self, id: u64) -> bool {
        let seq = seq_of(id);
        let c = self.clients.entry(client_of(id)).or_default();
        if seq < c.floor || !c.above.insert(seq) {
            return false;
        }
        c.climb();
        self.count += 1;
        self.digest = self.digest.wrapping_add(mix(id));
        true
    }

    /// Client `client` holds the answer of each of its orders below `seq`
    /// (or gave it up): none of them is applied from now on, and the
    /// memory of those that were is dropped.
    pub fn settle_below(&mut self, client: u32, seq: u32) {
        let c = self.clients.entry(client).or_default();
        if seq <= c.floor {
            return;
        }
        c.floor = seq;
        // The mark rises by about one order per order: pop the few below
        // it (no new set allocated, as a split would).
        while c.above.first().is_some_and(|&s| s < seq) {
            c.above.pop_first();
        }
        c.climb();
    }

    /// How many ids were inserted, and the sum of their [`mix`]es.
    pub fn digest(&self) -> (u64, u64) {
        (self.count, self.digest)
    }

    /// Per client: its id, the floor, and the applied sequence numbers
    /// above it (a snapshot writes these, and the [`digest`](Self::digest)).
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32, &BTreeSet<u32>)> {
        self.clients.iter().map(|(c, p)| (*c, p.floor, &p.above))
    }

    /// The set [`entries`](Self::entries) and [`digest`](Self::digest)
    /// described.
    pub fn from_parts(
        entries: impl IntoIterator<Item = (u32, u32, BTreeSet<u32>)>,
        (count, digest): (u64, u64),
    ) -> Self {
        Applied {
            clients: entries
                .into_iter()
                .map(|(c, floor, above)| (c, PerClient { floor, above }))
                .collect(),
            count,
            digest,
        }
    }

    /// Sequence numbers remembered above the floors, over all clients:
    /// what this set's memory grows with.
    pub fn remembered(&self) -> usize {
        self.clients.values().map(|c| c.above.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(client: u32, seq: u32) -> u64 {
        (client as u64) << 32 | seq as u64
    }

    #[test]
    fn in_order_and_out_of_order_ids_are_remembered_once() {
        let mut a = Applied::default();
        assert!(a.insert(id(1, 0)));
        assert!(a.insert(id(1, 2)));
        assert!(!a.contains(id(1, 1)));
        assert!(a.contains(id(1, 2)));
        assert!(!a.insert(id(1, 2)));
        assert!(a.insert(id(1, 1)));
        assert!(!a.insert(id(1, 0)) && !a.insert(id(1, 1)));
        assert!(a.contains(id(1, 1)) && !a.contains(id(1, 3)));
        // Another client's same sequence number is another order.
        assert!(!a.contains(id(2, 0)));
        assert!(a.insert(id(2, 0)));
        assert_eq!(a.clients[&1].floor, 3);
        assert_eq!(a.remembered(), 0);
        let expected = [id(1, 0), id(1, 2), id(1, 1), id(2, 0)]
            .into_iter()
            .fold(0u64, |d, i| d.wrapping_add(mix(i)));
        assert_eq!(a.digest(), (4, expected));
    }

    #[test]
    fn a_client_spread_over_engines_is_remembered_only_above_its_settled_mark() {
        // This engine gets every third order of the client: without the
        // mark, each one stays remembered (a gap below each).
        let mut a = Applied::default();
        for seq in (0..3000).step_by(3) {
            a.insert(id(7, seq));
        }
        assert_eq!(a.remembered(), 999); // all but 0, which raised the floor
                                         // The client holds the answers of everything below 2990.
        a.settle_below(7, 2990);
        assert_eq!(a.remembered(), 3); // 2991, 2994, 2997
        assert!(a.contains(id(7, 5)), "settled: a stale copy is not applied");
        assert!(!a.insert(id(7, 5)));
        assert!(a.contains(id(7, 2994)) && !a.contains(id(7, 2995)));
        assert!(a.insert(id(7, 2995)));
        // A mark below the floor changes nothing.
        a.settle_below(7, 10);
        assert!(a.contains(id(7, 2997)));
        // Inserted ids are counted once each, settled or not.
        assert_eq!(a.digest().0, 1001);
    }
}

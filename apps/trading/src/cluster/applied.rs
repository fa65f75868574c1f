//! Which orders an engine has applied, by client: the memory that makes a
//! retried order harmless. Per client, every sequence number below
//! `floor` is applied, plus the ones in `above`; since a client's orders
//! mostly arrive in sequence, `above` stays empty or tiny and the memory is
//! one word per client. Rebuilt from the log on start, so it survives a
//! restart and travels to a standby with the catch-up.

use std::collections::{BTreeSet, HashMap};

use super::wire::{client_of, seq_of};

#[derive(Debug, Default)]
struct PerClient {
    floor: u32,
    above: BTreeSet<u32>,
}

/// The set of applied order ids.
#[derive(Debug, Default)]
pub struct Applied {
    clients: HashMap<u32, PerClient>,
}

impl Applied {
    /// Whether order `id` was applied.
    pub fn contains(&self, id: u64) -> bool {
        let seq = seq_of(id);
        self.clients
            .get(&client_of(id))
            .is_some_and(|c| seq < c.floor || c.above.contains(&seq))
    }

    /// Records order `id` as applied; false if it already was.
    pub fn insert(&mut self, id: u64) -> bool {
        let seq = seq_of(id);
        let c = self.clients.entry(client_of(id)).or_default();
        if seq < c.floor || c.above.contains(&seq) {
            return false;
        }
        if seq == c.floor {
            c.floor += 1;
            while c.above.remove(&c.floor) {
                c.floor += 1;
            }
        } else {
            c.above.insert(seq);
        }
        true
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
        assert!(a.clients[&1].above.is_empty());
    }
}

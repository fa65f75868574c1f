//! What this node knows of the remote actors its refs point at: alive as
//! far as it knows, or gone for good (the actor terminated, or its node
//! incarnation is down).
//!
//! Every remote ref holds the [`Liveness`] of its address, shared by every
//! ref to that address, so a send checks one atomic and a death learned
//! once (a `Terminated`, a node declared down, a restart seen in a
//! heartbeat, a frame refused as addressed to a past incarnation) turns
//! every such ref into a dead one: `is_terminated()` true, tells counted
//! dead letters, asks failing with `Unreachable`. A death is final: an
//! address names one incarnation of one node, and a restarted node is
//! another incarnation, reached through a new lookup.
//!
//! The table keeps weak entries, so it holds no ref's state alive; dead
//! weak entries are pruned when the table has doubled since the last
//! prune. Past incarnations of nodes are kept (a few bytes each, one per
//! node restart seen, at most four times `RemoteConfig::max_members`, the
//! oldest forgotten first: `bounds.rs`) so that a ref to one, decoded
//! later, starts dead.
//!
//! Refs made by `Node::select` (incarnation 0, "whoever serves the name")
//! name no incarnation and are never marked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::address::Address;
use crate::bounds::Tombstones;
use crate::dead_letters::DeadLetterReason;

const ALIVE: u8 = 0;
const TERMINATED: u8 = 1;
const NODE_DOWN: u8 = 2;

/// Why an address is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// The actor stopped or was unpublished (its node said so, or said
    /// it is not there).
    Terminated,
    /// Its node incarnation is down: it left, fell silent, or was
    /// restarted (another incarnation answers under its name).
    NodeDown,
}

impl Gone {
    /// The dead-letter reason of a send to an address gone this way.
    pub(crate) fn reason(self) -> DeadLetterReason {
        match self {
            Gone::Terminated => DeadLetterReason::Terminated,
            Gone::NodeDown => DeadLetterReason::NodeDown,
        }
    }
}

/// One address's state, shared by every ref to it.
pub(crate) struct Liveness {
    pub(crate) address: Address,
    state: AtomicU8,
    /// A check of whether the actor is still there is under way (see
    /// `watch::confirm`): one at a time per address.
    confirming: AtomicBool,
}

impl Liveness {
    fn new(address: Address, state: u8) -> Liveness {
        Liveness {
            address,
            state: AtomicU8::new(state),
            confirming: AtomicBool::new(false),
        }
    }

    /// `None` while alive as far as this node knows.
    pub(crate) fn gone(&self) -> Option<Gone> {
        // Relaxed: the flag carries no data; a send that reads it a moment
        // late is the at-most-once loss docs/semantics.md describes.
        match self.state.load(Ordering::Relaxed) {
            ALIVE => None,
            TERMINATED => Some(Gone::Terminated),
            _ => Some(Gone::NodeDown),
        }
    }

    /// Marks the address gone; the first reason recorded stays.
    fn mark(&self, gone: Gone) {
        let state = match gone {
            Gone::Terminated => TERMINATED,
            Gone::NodeDown => NODE_DOWN,
        };
        let _ = self
            .state
            .compare_exchange(ALIVE, state, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Claims the right to check this address; false if a check runs.
    pub(crate) fn start_confirming(&self) -> bool {
        !self.confirming.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn done_confirming(&self) {
        self.confirming.store(false, Ordering::Release);
    }
}

struct Table {
    refs: HashMap<Address, Weak<Liveness>>,
    /// Node incarnations known to be down, the oldest forgotten first past
    /// their cap (see `bounds.rs`).
    dead_nodes: Tombstones,
    /// The table's size after the last prune.
    pruned_at: usize,
}

/// See the module docs.
pub(crate) struct Registry {
    table: Mutex<Table>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new(usize::MAX)
    }
}

impl Registry {
    /// A registry that remembers at most `down` node incarnations as down.
    pub(crate) fn new(down: usize) -> Registry {
        Registry {
            table: Mutex::new(Table {
                refs: HashMap::new(),
                dead_nodes: Tombstones::new(down),
                pruned_at: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The shared state of `address`, made if no ref holds it. `current`
    /// is the incarnation this node hears under the address's node name,
    /// if it hears one: another one means this address's is down.
    pub(crate) fn liveness(&self, address: &Address, current: Option<u64>) -> Arc<Liveness> {
        if address.incarnation == 0 {
            return Arc::new(Liveness::new(address.clone(), ALIVE));
        }
        let mut table = self.lock();
        if let Some(live) = table.refs.get(address).and_then(Weak::upgrade) {
            return live;
        }
        let down = table
            .dead_nodes
            .contains(&address.host, address.incarnation)
            || current.is_some_and(|now| now != address.incarnation);
        let live = Arc::new(Liveness::new(
            address.clone(),
            if down { NODE_DOWN } else { ALIVE },
        ));
        table.refs.insert(address.clone(), Arc::downgrade(&live));
        if table.refs.len() >= 2 * table.pruned_at.max(64) {
            table.refs.retain(|_, weak| weak.strong_count() > 0);
            table.pruned_at = table.refs.len();
        }
        live
    }

    /// Whether a ref here names `address` and it is alive as far as this
    /// node knows.
    pub(crate) fn is_alive(&self, address: &Address) -> bool {
        self.lock()
            .refs
            .get(address)
            .and_then(Weak::upgrade)
            .is_some_and(|live| live.gone().is_none())
    }

    /// The actor at `address` is gone.
    pub(crate) fn actor_gone(&self, address: &Address) {
        if let Some(live) = self.lock().refs.get(address).and_then(Weak::upgrade) {
            live.mark(Gone::Terminated);
        }
    }

    /// How many node incarnations are remembered as down.
    pub(crate) fn dead_incarnations(&self) -> usize {
        self.lock().dead_nodes.len()
    }

    /// How many down incarnations were forgotten to stay within the cap.
    pub(crate) fn forgotten(&self) -> u64 {
        self.lock().dead_nodes.forgotten()
    }

    /// Node `host`'s incarnation `incarnation` is down: every ref to one
    /// of its actors is dead, now and when decoded later.
    pub(crate) fn node_gone(&self, host: &str, incarnation: u64) {
        let mut table = self.lock();
        table.dead_nodes.insert(host, incarnation);
        for live in table.refs.values().filter_map(Weak::upgrade) {
            if &*live.address.host == host && live.address.incarnation == incarnation {
                live.mark(Gone::NodeDown);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Kind;

    fn address(host: &str, incarnation: u64, id: &str) -> Address {
        Address {
            host: host.into(),
            incarnation,
            kind: Kind::Published,
            id: id.into(),
        }
    }

    #[test]
    fn refs_to_one_address_share_their_fate_and_a_death_is_final() {
        let registry = Registry::default();
        let a1 = registry.liveness(&address("a", 7, "echo"), Some(7));
        let a2 = registry.liveness(&address("a", 7, "echo"), Some(7));
        let other = registry.liveness(&address("a", 7, "other"), Some(7));
        assert!(Arc::ptr_eq(&a1, &a2));
        registry.actor_gone(&address("a", 7, "echo"));
        assert_eq!(a2.gone(), Some(Gone::Terminated));
        assert_eq!(other.gone(), None);
        registry.node_gone("a", 7);
        // The first reason stays; the other actor of the node goes too.
        assert_eq!(a1.gone(), Some(Gone::Terminated));
        assert_eq!(other.gone(), Some(Gone::NodeDown));
    }

    #[test]
    fn a_past_incarnation_starts_dead_and_selections_never_die() {
        let registry = Registry::default();
        registry.node_gone("a", 7);
        assert_eq!(
            registry.liveness(&address("a", 7, "x"), None).gone(),
            Some(Gone::NodeDown)
        );
        // Another incarnation is heard under the name.
        assert_eq!(
            registry.liveness(&address("a", 8, "x"), Some(9)).gone(),
            Some(Gone::NodeDown)
        );
        assert_eq!(
            registry.liveness(&address("a", 9, "x"), Some(9)).gone(),
            None
        );
        let any = registry.liveness(&address("a", 0, "x"), Some(9));
        registry.node_gone("a", 0);
        registry.actor_gone(&address("a", 0, "x"));
        assert_eq!(any.gone(), None);
    }

    #[test]
    fn dropped_refs_are_pruned() {
        let registry = Registry::default();
        for i in 0..1000 {
            drop(registry.liveness(&address("a", 1, &format!("n{i}")), None));
        }
        let kept = registry.lock().refs.len();
        assert!(kept < 200, "{kept} entries kept for 1000 dropped refs");
    }
}

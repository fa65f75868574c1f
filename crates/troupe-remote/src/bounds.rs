//! What the other clients of a NATS account can make a node keep, and the
//! bounds on it.
//!
//! Every client allowed on a cluster's subjects can send a node
//! heartbeats, leaves, watch requests, control messages and frames.
//! docs/operations.md ("Who may talk to a node") says who should be
//! allowed (the NATS permissions that confine each node to its own
//! subjects); whatever gets through costs a bounded amount:
//!
//! - **Members**: at most `RemoteConfig::max_members` other nodes are
//!   tracked as up; the heartbeat of one more is an `OverCapacity` dead
//!   letter. A node is taken up only once it has answered a direct
//!   question on its own control subject (`membership.rs`,
//!   `node/confirm.rs`), so a heartbeat published under a name nobody
//!   serves adds nothing.
//! - **Down incarnations**: the node incarnations remembered as down (so
//!   that a late heartbeat does not bring one back) are at most
//!   [`DOWN_PER_MEMBER`] times `max_members`, in `membership.rs` and in
//!   `liveness.rs` each; past that the oldest is forgotten, counted in
//!   [`Footprint::forgotten`].
//! - **Watches from other nodes**: kept only for node incarnations that
//!   are members here (a watch from another is answered "ask again"), at
//!   most one per member and local actor, and forgotten when the member
//!   goes down.
//! - **Claims being confirmed** (a leave, a restart, a new node, a
//!   `Terminated`): at most [`MAX_CONFIRMING`] at once; one more is an
//!   `OverCapacity` dead letter.
//!
//! [`Footprint`] shows the sizes, for tests and for an operator's
//! dashboard.

/// How many down incarnations are remembered per `max_members` (see the
/// module docs): room for every member to restart this many times before
/// the oldest is forgotten.
pub(crate) const DOWN_PER_MEMBER: usize = 4;

/// The most membership and liveness claims confirmed at once.
pub(crate) const MAX_CONFIRMING: usize = 64;

/// The sizes of what a node keeps about other nodes (see
/// [`Node::footprint`](crate::Node::footprint)). Each is bounded whatever
/// other clients send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Other nodes up, as [`Node::members`](crate::Node::members) lists
    /// them (at most `RemoteConfig::max_members`).
    pub members: usize,
    /// Node incarnations remembered as down by membership (at most four
    /// times `max_members`).
    pub down_incarnations: usize,
    /// Node incarnations whose refs are remembered as dead (at most four
    /// times `max_members`).
    pub dead_incarnations: usize,
    /// Watches that other nodes hold on actors of this node: one per
    /// watching member and watched actor.
    pub remote_watches: usize,
    /// Membership and liveness claims being confirmed now.
    pub confirming: usize,
    /// Down incarnations forgotten so far to stay within the bounds,
    /// oldest first.
    pub forgotten: u64,
}

/// Node incarnations remembered as down, the oldest forgotten first once
/// there are `cap` (see the module docs).
pub(crate) struct Tombstones {
    set: std::collections::HashSet<(std::sync::Arc<str>, u64)>,
    order: std::collections::VecDeque<(std::sync::Arc<str>, u64)>,
    cap: usize,
    forgotten: u64,
}

impl Tombstones {
    /// Room for `cap` (at least one).
    pub(crate) fn new(cap: usize) -> Tombstones {
        Tombstones {
            set: Default::default(),
            order: Default::default(),
            cap: cap.max(1),
            forgotten: 0,
        }
    }

    /// Remembers `node`'s incarnation `incarnation` as down.
    pub(crate) fn insert(&mut self, node: &str, incarnation: u64) {
        let key: (std::sync::Arc<str>, u64) = (node.into(), incarnation);
        if self.set.contains(&key) {
            return;
        }
        while self.order.len() >= self.cap {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
                self.forgotten += 1;
            }
        }
        self.set.insert(key.clone());
        self.order.push_back(key);
    }

    /// Whether `node`'s incarnation `incarnation` is remembered as down.
    pub(crate) fn contains(&self, node: &str, incarnation: u64) -> bool {
        self.set
            .contains(&(std::sync::Arc::from(node), incarnation))
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// How many were forgotten to stay within the cap.
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tombstones_forget_the_oldest_past_their_cap() {
        let mut t = Tombstones::new(3);
        for i in 0..5 {
            t.insert("n", i);
        }
        t.insert("n", 4);
        assert_eq!((t.len(), t.forgotten()), (3, 2));
        assert!(!t.contains("n", 0) && !t.contains("n", 1));
        assert!(t.contains("n", 2) && t.contains("n", 4));
    }
}

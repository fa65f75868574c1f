//! Membership: which nodes of the cluster are alive, from heartbeats on
//! NATS subjects.
//!
//! ```text
//! troupe.<cluster>.members.beat.<node>    every heartbeat_interval
//! troupe.<cluster>.members.leave.<node>   once, from Node::shutdown
//! ```
//!
//! A node is up from its first heartbeat heard, and down when it says it
//! leaves ([`DownReason::Left`]) or when no heartbeat of it has been heard
//! for `heartbeat_timeout` ([`DownReason::Silent`]; checked four times per
//! heartbeat interval). A node that comes back after being declared down
//! is up again. Every node decides on its own from what it hears: there is
//! no agreement protocol, so two nodes may see a third go down a check
//! apart.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

/// A change in the cluster's membership, as seen by this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberEvent {
    /// A node was heard for the first time (or again after being down).
    Up(String),
    /// A node is gone.
    Down {
        /// Its name.
        node: String,
        /// How we know.
        reason: DownReason,
    },
}

/// Why a node is considered down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownReason {
    /// It announced that it leaves (`Node::shutdown`).
    Left,
    /// No heartbeat for `heartbeat_timeout`.
    Silent,
}

/// The nodes this node has heard, with when it last heard each.
pub(crate) struct Membership {
    me: String,
    seen: Mutex<HashMap<String, Instant>>,
    events: broadcast::Sender<MemberEvent>,
}

impl Membership {
    pub(crate) fn new(me: &str) -> Membership {
        Membership {
            me: me.to_string(),
            seen: Mutex::new(HashMap::new()),
            events: broadcast::channel(1024).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A heartbeat of `node` arrived.
    pub(crate) fn heard(&self, node: &str) {
        if node == self.me {
            return;
        }
        let new = self
            .lock()
            .insert(node.to_string(), Instant::now())
            .is_none();
        if new {
            let _ = self.events.send(MemberEvent::Up(node.to_string()));
        }
    }

    /// `node` announced that it leaves; true if it was up.
    pub(crate) fn left(&self, node: &str) -> bool {
        let was_up = self.lock().remove(node).is_some();
        if was_up {
            let _ = self.events.send(MemberEvent::Down {
                node: node.to_string(),
                reason: DownReason::Left,
            });
        }
        was_up
    }

    /// Whether `node` is this node or one heard and not declared down.
    pub(crate) fn is_up(&self, node: &str) -> bool {
        node == self.me || self.lock().contains_key(node)
    }

    /// Declares down every node silent for `timeout`; returns them.
    pub(crate) fn expire(&self, timeout: Duration) -> Vec<String> {
        let now = Instant::now();
        let silent: Vec<String> = {
            let mut seen = self.lock();
            let silent: Vec<String> = seen
                .iter()
                .filter(|(_, at)| now.duration_since(**at) >= timeout)
                .map(|(node, _)| node.clone())
                .collect();
            for node in &silent {
                seen.remove(node);
            }
            silent
        };
        for node in &silent {
            let _ = self.events.send(MemberEvent::Down {
                node: node.clone(),
                reason: DownReason::Silent,
            });
        }
        silent
    }

    /// This node and every node up, sorted.
    pub(crate) fn members(&self) -> Vec<String> {
        let mut members: Vec<String> = self.lock().keys().cloned().collect();
        members.push(self.me.clone());
        members.sort();
        members
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<MemberEvent> {
        self.events.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_once_down_once_and_never_myself() {
        let m = Membership::new("me");
        let mut events = m.subscribe();
        m.heard("me");
        m.heard("b");
        m.heard("b");
        assert_eq!(m.members(), vec!["b".to_string(), "me".to_string()]);
        assert!(m.left("b"));
        assert!(!m.left("b"));
        assert!(!m.is_up("b") && m.is_up("me"));
        m.heard("c");
        assert_eq!(m.expire(Duration::ZERO), vec!["c".to_string()]);
        assert!(m.expire(Duration::ZERO).is_empty());
        let got: Vec<MemberEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
        assert_eq!(
            got,
            vec![
                MemberEvent::Up("b".into()),
                MemberEvent::Down {
                    node: "b".into(),
                    reason: DownReason::Left
                },
                MemberEvent::Up("c".into()),
                MemberEvent::Down {
                    node: "c".into(),
                    reason: DownReason::Silent
                },
            ]
        );
        assert_eq!(m.members(), vec!["me".to_string()]);
    }
}

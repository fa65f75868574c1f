//! The address of a remote actor: which node serves it, in which of its
//! incarnations, and under which published name or export token. Frames
//! for it go to [`Address::subject`]; `node/refs.rs` puts it on the wire.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Whether a ref names a published actor or an exported one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Kind {
    /// Published under a cluster-wide name (`Node::publish`).
    Published,
    /// Sent inside a message; reachable by its token only.
    Exported,
}

/// Where a remote ref's frames go, and which node serves its actor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Address {
    /// The node that serves the actor (for death watch and node loss).
    pub(crate) host: Arc<str>,
    /// The start of `host` the actor lives in (0: whichever serves a
    /// published name, for `Node::select`).
    pub(crate) incarnation: u64,
    pub(crate) kind: Kind,
    /// The published name, or the export token.
    pub(crate) id: Arc<str>,
}

impl Address {
    /// The subject frames for this actor are published on.
    pub(crate) fn subject(&self, cluster: &str) -> String {
        match self.kind {
            Kind::Published => format!("troupe.{cluster}.actor.{}", self.id),
            Kind::Exported => format!("troupe.{cluster}.ref.{}.{}", self.host, self.id),
        }
    }
}

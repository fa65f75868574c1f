//! The control messages nodes send each other (death watch, and the
//! questions of `node/confirm.rs`), and their subjects:
//!
//! ```text
//! troupe.<cluster>.system.<node>.<from>   control messages for <node> from node <from> (postcard `Control`)
//! ```
//!
//! A control message's subject ends with the name of the node that sends
//! it, so that NATS permissions can let each node speak only for itself
//! (docs/operations.md, "Who may talk to a node"). Served by
//! `node/watch.rs`.

use serde::{Deserialize, Serialize};

use crate::address::Kind;

/// What nodes tell each other about watches.
#[derive(Serialize, Deserialize)]
pub(super) enum Control {
    /// Node `from` (incarnation `from_incarnation`) watches the actor
    /// `(kind, id)` of the receiving node's incarnation `incarnation`.
    /// Sent as a request: the answer is `[0]` if the actor is there, `[1]`
    /// if not (another incarnation has none of the old one's actors).
    Watch {
        incarnation: u64,
        kind: Kind,
        id: String,
        from: String,
        from_incarnation: u64,
    },
    /// Node `from` (incarnation `from_incarnation`) no longer watches
    /// `(kind, id)`.
    Unwatch {
        kind: Kind,
        id: String,
        from: String,
        from_incarnation: u64,
    },
    /// The actor `(kind, id)` of node `host`'s incarnation `incarnation`
    /// is gone.
    Terminated {
        host: String,
        incarnation: u64,
        kind: Kind,
        id: String,
    },
    /// Is the actor `(kind, id)` of incarnation `incarnation` still here?
    /// A request, answered as `Watch` is; nothing is registered.
    Probe {
        incarnation: u64,
        kind: Kind,
        id: String,
    },
    /// Is the receiving node's incarnation `incarnation` alive? A request:
    /// `[0]` yes, `[1]` no (another incarnation, or one that is leaving).
    Alive { incarnation: u64 },
}

/// The answers to a `Watch` or a `Probe`: the actor is here, it is not,
/// or (a `Watch` only) the watching node incarnation is not a member here
/// yet and should ask again.
pub(super) const HERE: u8 = 0;
pub(super) const NOT_HERE: u8 = 1;
pub(super) const ASK_AGAIN: u8 = 2;

/// The subject of the control messages node `from` sends node `to`.
pub(super) fn control_subject(cluster: &str, to: &str, from: &str) -> String {
    format!("troupe.{cluster}.system.{to}.{from}")
}

/// What node `me` subscribes to for its control messages.
pub(super) fn control_subscription(cluster: &str, me: &str) -> String {
    format!("troupe.{cluster}.system.{me}.*")
}

/// The request of `node/confirm.rs`: is incarnation `incarnation` alive?
pub(super) fn alive_request(incarnation: u64) -> Option<Vec<u8>> {
    postcard::to_stdvec(&Control::Alive { incarnation }).ok()
}

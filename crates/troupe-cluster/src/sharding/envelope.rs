//! What regions send each other: a message for an entity (or a marker of
//! the route a sender's messages took), with the shard it belongs to and
//! the owner's revision the sender routed it by.
//!
//! The revision keeps forwarding finite and free of loops. A region that
//! receives an envelope routed by a newer revision than its own view of
//! the shard holds it until its view catches up; otherwise it delivers or
//! forwards by its own view, which is at least as new. Revisions of a
//! shard's lease only grow, so each forward moves to a view at least as
//! new as the last, and two views of one revision name the same owner.
//! `hops` is a backstop against a defect, not part of the protocol.
//!
//! The markers keep one node's messages to an entity in order across a
//! move of its shard (`region/drain.rs`): a marker follows the sender's
//! earlier messages along their route, and the owner it reaches answers
//! the sender's region, which sends on only then.

use serde::{Deserialize, Serialize};
use troupe::ReplyTo;
use troupe_remote::RemoteMessage;

/// How many times an envelope may be forwarded before a region drops it
/// (and counts it): far above what the protocol needs (one forward per
/// ownership change the message races with).
pub(crate) const MAX_HOPS: u8 = 16;

/// A message for one entity, or a marker, between regions.
#[derive(Serialize, Deserialize)]
pub(crate) struct Envelope<M> {
    pub(crate) shard: u32,
    /// The revision of the shard's lease the sender routed by (0: none
    /// known).
    pub(crate) rev: u64,
    /// How often it was forwarded: 0 while it is on the node it was sent
    /// from.
    pub(crate) hops: u8,
    pub(crate) body: Body<M>,
}

/// What an envelope carries.
#[derive(Serialize, Deserialize)]
pub(crate) enum Body<M> {
    /// A message for the entity `entity`.
    Msg { entity: String, msg: M },
    /// A marker `origin`'s region sent after its node's messages for the
    /// shard: the region that owns the shard when the marker reaches it
    /// answers `Flushed { id }` to `origin`'s region (`region/drain.rs`).
    /// `reach` is answered by the first node's entry as it arrives (and
    /// dropped before the marker goes on): the sender learns at once,
    /// from the server's "no responders", that the old route's node is
    /// gone.
    Flush {
        origin: String,
        id: u64,
        reach: Option<ReplyTo<()>>,
    },
    /// The answer to the marker `id`.
    Flushed { id: u64 },
}

impl<M> Envelope<M> {
    /// A message for `entity`, as a sender on this node hands it in.
    pub(crate) fn message(entity: String, shard: u32, msg: M) -> Self {
        Envelope {
            shard,
            rev: 0,
            hops: 0,
            body: Body::Msg { entity, msg },
        }
    }

    /// A message from a sender on this node, not yet routed: the kind a
    /// region holds while its earlier route drains.
    pub(crate) fn sent_here(&self) -> bool {
        self.hops == 0 && matches!(self.body, Body::Msg { .. })
    }
}

/// The envelope travels under the entity message's own tag: regions are
/// published under names of their own (`region-<type>-<node>`), so the tag
/// tells apart only two regions of one type name with different message
/// types, which is the mistake it should catch.
impl<M: RemoteMessage> RemoteMessage for Envelope<M> {
    const TAG: &'static str = M::TAG;
}

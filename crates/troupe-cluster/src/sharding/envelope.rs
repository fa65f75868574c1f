//! What regions send each other: a message for an entity, with the shard
//! it belongs to and the owner's revision the sender routed it by.
//!
//! The revision keeps forwarding finite and free of loops. A region that
//! receives an envelope routed by a newer revision than its own view of
//! the shard holds it until its view catches up; otherwise it delivers or
//! forwards by its own view, which is at least as new. Revisions of a
//! shard's lease only grow, so each forward moves to a view at least as
//! new as the last, and two views of one revision name the same owner.
//! `hops` is a backstop against a defect, not part of the protocol.

use serde::{Deserialize, Serialize};
use troupe_remote::RemoteMessage;

/// How many times an envelope may be forwarded before a region drops it
/// (and counts it): far above what the protocol needs (one forward per
/// ownership change the message races with).
pub(crate) const MAX_HOPS: u8 = 16;

/// A message for one entity, between regions.
#[derive(Serialize, Deserialize)]
pub(crate) struct Envelope<M> {
    pub(crate) entity: String,
    pub(crate) shard: u32,
    /// The revision of the shard's lease the sender routed by (0: none
    /// known).
    pub(crate) rev: u64,
    pub(crate) hops: u8,
    pub(crate) msg: M,
}

/// The envelope travels under the entity message's own tag: regions are
/// published under names of their own (`region-<type>-<node>`), so the tag
/// tells apart only two regions of one type name with different message
/// types, which is the mistake it should catch.
impl<M: RemoteMessage> RemoteMessage for Envelope<M> {
    const TAG: &'static str = M::TAG;
}

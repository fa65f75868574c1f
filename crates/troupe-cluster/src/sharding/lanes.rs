//! The region's lanes: the shortcut a message takes past the region
//! actor once its shard's route is settled.
//!
//! Every envelope for this node's region enters through one
//! [`RegionEntry`]: the user's `tell`s and entity refs on this node, and
//! the envelopes other nodes' regions send here (the entry is what the
//! region publishes). For each shard the region keeps a lane: open (a
//! route, the lease revision it was made from) when the shard's owner and
//! the way to it are known and nothing for the shard waits in the region;
//! closed otherwise. Through an open lane the entry hands a message to
//! the owner on the sender's own thread: to the local shard's actor, or
//! to the owning node's region entry (which, if its own lane is open,
//! hands it to its shard): two mailbox hops fewer than through the region
//! actors on both nodes. Through a closed lane it goes to the region
//! actor, which routes it as before (hold, find, allocate, forward).
//!
//! Order. A lane's state and its count of envelopes sent to the region
//! actor are under one lock, held while the entry hands the message on.
//! The entry takes the open lane only when that count is zero, and the
//! region opens a lane only when it holds nothing for the shard and after
//! it routed the envelope it was handling; it closes the lane before it
//! acts on a change (stops the shard, sends a drain marker). So a message
//! taking the lane never overtakes an earlier one that went to the region
//! actor, and none takes it after the region changed course.
//!
//! The lock is per shard and held for a mailbox push (or the encoding of
//! a remote envelope); the region takes it once per envelope it handles
//! and once per shard on a change of view.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use troupe::{ActorRef, ExternalTarget, Watcher};

use super::envelope::{Body, Envelope, MAX_HOPS};
use super::shard::ShardMsg;
use super::Counters;

/// Where an open lane leads.
pub(crate) enum Route<M: Send + 'static> {
    /// The shard runs here: its actor.
    Here(ActorRef<ShardMsg<M>>),
    /// Another node owns the shard: its region's entry.
    There(ActorRef<Envelope<M>>),
}

/// An open lane: the route and the lease revision it follows.
pub(crate) struct Open<M: Send + 'static> {
    pub(crate) route: Route<M>,
    pub(crate) rev: u64,
}

/// One shard's lane.
pub(crate) struct Lane<M: Send + 'static> {
    pub(crate) open: Option<Open<M>>,
    /// Envelopes for the shard the entry sent to the region actor that
    /// the region has not routed yet.
    pub(crate) queued: u64,
}

/// The lanes of one region, shared by its entry and the region actor.
pub(crate) struct Lanes<M: Send + 'static> {
    lanes: Box<[Mutex<Lane<M>>]>,
    /// The region stopped: everything goes to the region's (closed)
    /// mailbox, and watchers of the entry have been told.
    closed: AtomicBool,
    watchers: Mutex<Vec<Watcher>>,
}

impl<M: Send + 'static> Lanes<M> {
    pub(crate) fn new(shards: u32) -> Arc<Self> {
        Arc::new(Lanes {
            lanes: (0..shards)
                .map(|_| {
                    Mutex::new(Lane {
                        open: None,
                        queued: 0,
                    })
                })
                .collect(),
            closed: AtomicBool::new(false),
            watchers: Mutex::default(),
        })
    }

    /// The lane of `shard` (locked), if the region has such a shard.
    pub(crate) fn lock(&self, shard: u32) -> Option<MutexGuard<'_, Lane<M>>> {
        let lane = self.lanes.get(shard as usize)?;
        Some(lane.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The region stopped: close every lane and tell the entry's
    /// watchers.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for lane in self.lanes.iter() {
            lane.lock().unwrap_or_else(|e| e.into_inner()).open = None;
        }
        let watchers =
            std::mem::take(&mut *self.watchers.lock().unwrap_or_else(|e| e.into_inner()));
        for watcher in watchers {
            watcher.terminated();
        }
    }
}

/// The door of a region: the ref the region publishes and the handle
/// sends through (see the module's header).
pub(crate) struct RegionEntry<M: Send + 'static> {
    pub(crate) lanes: Arc<Lanes<M>>,
    /// Hands an envelope to the region actor's mailbox (the region's own
    /// module makes it: the lanes know nothing of the region's messages).
    pub(crate) to_region: Box<dyn Fn(Envelope<M>) + Send + Sync>,
    /// Whether the region actor has ended.
    pub(crate) region_ended: Box<dyn Fn() -> bool + Send + Sync>,
    pub(crate) counters: Arc<Counters>,
}

impl<M: Send + 'static> ExternalTarget<Envelope<M>> for RegionEntry<M> {
    fn send(&self, mut envelope: Envelope<M>) {
        if let Body::Flush { reach, .. } = &mut envelope.body {
            // This node is up: what the marker drains goes on here.
            if let Some(reach) = reach.take() {
                reach.reply(());
            }
        }
        let Some(mut lane) = self.lanes.lock(envelope.shard) else {
            // The region reports a shard it does not have.
            (self.to_region)(envelope);
            return;
        };
        let message = matches!(envelope.body, Body::Msg { .. });
        if let (Some(open), true, 0) = (&lane.open, message, lane.queued) {
            if envelope.rev <= open.rev && envelope.hops < MAX_HOPS {
                match &open.route {
                    Route::Here(shard) => {
                        if let Body::Msg { entity, msg } = envelope.body {
                            shard.tell(ShardMsg::Deliver(entity, msg));
                        }
                    }
                    Route::There(peer) => {
                        envelope.rev = open.rev;
                        envelope.hops += 1;
                        self.counters.forwarded.fetch_add(1, Ordering::Relaxed);
                        peer.tell(envelope);
                    }
                }
                return;
            }
        }
        lane.queued += 1;
        (self.to_region)(envelope);
    }

    fn is_closed(&self) -> bool {
        self.lanes.closed.load(Ordering::Acquire) || (self.region_ended)()
    }

    fn watch(&self, watcher: Watcher) {
        let mut watchers = self
            .lanes
            .watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if self.lanes.closed.load(Ordering::Acquire) {
            drop(watchers);
            watcher.terminated();
        } else {
            watchers.push(watcher);
        }
    }

    fn unwatch(&self, watcher: troupe::ActorId) {
        let mut watchers = self
            .lanes
            .watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        watchers.retain(|w| w.id() != watcher);
    }
}

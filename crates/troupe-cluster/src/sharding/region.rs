//! The region: one actor per node and entity type that routes every
//! message for an entity to the node owning the entity's shard, and runs
//! the shards this node owns as its children.
//!
//! Its view of who owns which shard comes from the node's coordinator
//! (`coordinator.rs`), which watches the shard leases; the region never
//! waits on NATS itself. Routing an envelope (see `envelope.rs` for why
//! the revision):
//!
//! - the shard is being handed off from here, or this node is fenced (cut
//!   off from NATS too long), or the envelope was routed by a newer
//!   revision than the region knows: **hold** it;
//! - the shard is owned here: start the shard if it is not running (with
//!   the lease revision as its entities' fencing token) and deliver;
//! - owned by another node whose region is known: **forward**; not known
//!   yet: hold, and ask the coordinator to find it;
//! - owned by nobody: hold, and ask the coordinator to allocate it.
//!
//! Held messages are bounded by `buffer` across shards; beyond it a new
//! message is dropped and counted. They are routed again, in order, when
//! the shard's owner changes, a region is found, or a handoff ends.
//!
//! If the view says a shard this node runs moved to another node (this
//! node was declared down while paused or cut off), the region stops the
//! shard at once.
//!
//! Once a shard's route is settled the region opens its lane
//! (`lanes.rs`), and messages pass the region actor by; the region keeps
//! each lane's state true under the lane's lock while it handles an
//! envelope or a change of view. When a shard's owner changes, this
//! node's new messages for it wait until the old route drained
//! (`region/drain.rs`), so none overtakes an earlier one.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use troupe::{Actor, ActorId, ActorRef, Context, Props, Signal};

use super::envelope::{Body, Envelope, MAX_HOPS};
use super::ids::IdCheck;
use super::lanes::Lanes;
use super::remember::Remembered;
use super::shard::{Refuse, Shard, ShardMsg};
use super::{Counters, EntityBackoff, EntityContext};
use crate::lease::Holder;

mod drain;
mod lane;

use drain::Drains;

/// What the region handles.
pub(crate) enum RegionMsg<M: Send + 'static> {
    /// A message for an entity, from this node or another region.
    Deliver(Envelope<M>),
    /// The coordinator's view of a shard changed.
    Owner {
        shard: u32,
        owner: Option<Holder>,
        rev: u64,
    },
    /// Another node's region was found (or is gone: `None`).
    Peer {
        node: String,
        region: Option<ActorRef<Envelope<M>>>,
    },
    /// Stop the shard here and hold its messages; answer once it stopped.
    HandOff {
        shard: u32,
        done: oneshot::Sender<()>,
    },
    /// The handoff of a shard is over (its lease moved, or stayed).
    HandOffEnded(u32),
    /// Cut off from NATS too long (`true`): stop every shard and hold;
    /// reconnected with a fresh view (`false`).
    Fenced(bool),
    /// The entities remembered for a shard that came here: start them.
    Recalled { shard: u32, ids: Vec<String> },
    /// The drain of a shard's old route (its marker's id) took too long.
    DrainTimeout { shard: u32, id: u64 },
    /// The node a drain's marker was sent to did not take it: no region
    /// serves the name there any more.
    DrainUnreachable { shard: u32, id: u64 },
}

/// Makes a ref to a node's region by its published name, through the
/// server.
pub(crate) type NameRef<M> = Arc<dyn Fn(&str) -> Option<ActorRef<Envelope<M>>> + Send + Sync>;

/// What the region (or the region's handle) asks of its node's coordinator
/// (`coordinator.rs`), which owns the leases.
pub(crate) enum Command {
    /// Give this shard an owner.
    Allocate(u32),
    /// Find the region of this node.
    FindPeer(String),
    /// Hand every shard over and end; answer when done.
    Leave(oneshot::Sender<()>),
}

/// One shard as the region sees it.
#[derive(Default)]
struct View {
    owner: Option<String>,
    rev: u64,
}

/// The region actor.
pub(crate) struct Region<A: Actor, F, M: Send + 'static> {
    pub(crate) me: String,
    pub(crate) type_name: Arc<str>,
    pub(crate) factory: Arc<F>,
    pub(crate) passivate_after: Option<Duration>,
    pub(crate) buffer: usize,
    pub(crate) counters: Arc<Counters>,
    pub(crate) coordinator: mpsc::UnboundedSender<Command>,
    pub(crate) remembered: Option<Remembered>,
    /// The lanes it shares with its entry.
    lanes: Arc<Lanes<M>>,
    drains: Drains,
    /// A node's region by its published name, through the server (not
    /// short-cut to this node's entry): where markers' answers go, and
    /// this node's own markers that must pass the server.
    name_ref: NameRef<M>,
    by_name: HashMap<String, ActorRef<Envelope<M>>>,
    /// This actor (set when it starts): where a marker's reach answer
    /// goes.
    myself: Option<ActorRef<RegionMsg<M>>>,
    ids: IdCheck,
    refuse: Refuse<M>,
    backoff: EntityBackoff,
    refuse_failing: Refuse<M>,
    views: Vec<View>,
    peers: HashMap<String, ActorRef<Envelope<M>>>,
    finding: HashSet<String>,
    allocating: HashSet<u32>,
    local: HashMap<u32, ActorRef<ShardMsg<M>>>,
    local_ids: HashMap<ActorId, u32>,
    /// Shards asked to stop whose `Terminated` has not come yet: their
    /// messages are held, so no entity starts here while its previous
    /// activation still runs.
    stopping: HashSet<u32>,
    handing_off: HashMap<u32, Option<oneshot::Sender<()>>>,
    held: HashMap<u32, VecDeque<Envelope<M>>>,
    held_total: usize,
    fenced: bool,
    _entity: std::marker::PhantomData<fn() -> A>,
}

/// How a region is made (the parts `Region::new` takes).
pub(crate) struct RegionParts<F, M: Send + 'static> {
    pub(crate) me: String,
    pub(crate) type_name: Arc<str>,
    pub(crate) shards: u32,
    pub(crate) factory: Arc<F>,
    pub(crate) passivate_after: Option<Duration>,
    pub(crate) buffer: usize,
    pub(crate) counters: Arc<Counters>,
    pub(crate) coordinator: mpsc::UnboundedSender<Command>,
    pub(crate) remembered: Option<Remembered>,
    /// The lanes its entry sends through.
    pub(crate) lanes: Arc<Lanes<M>>,
    /// A node's region by its published name, through the server.
    pub(crate) name_ref: NameRef<M>,
    /// The owner's check of ids, before a shard starts an entity.
    pub(crate) ids: IdCheck,
    /// How a shard refuses a message for an id it does not accept.
    pub(crate) refuse: Refuse<M>,
    /// How a shard restarts an entity whose activation failed.
    pub(crate) backoff: EntityBackoff,
    /// How a shard refuses a message for an entity that keeps failing.
    pub(crate) refuse_failing: Refuse<M>,
}

impl<A: Actor, F, M: Send + 'static> Region<A, F, M> {
    pub(crate) fn new(parts: RegionParts<F, M>) -> Self {
        Region {
            me: parts.me,
            type_name: parts.type_name,
            factory: parts.factory,
            passivate_after: parts.passivate_after,
            buffer: parts.buffer.max(1),
            counters: parts.counters,
            coordinator: parts.coordinator,
            remembered: parts.remembered,
            lanes: parts.lanes,
            drains: Drains::new(parts.shards),
            name_ref: parts.name_ref,
            by_name: HashMap::new(),
            myself: None,
            ids: parts.ids,
            refuse: parts.refuse,
            backoff: parts.backoff,
            refuse_failing: parts.refuse_failing,
            views: (0..parts.shards).map(|_| View::default()).collect(),
            peers: HashMap::new(),
            finding: HashSet::new(),
            allocating: HashSet::new(),
            local: HashMap::new(),
            local_ids: HashMap::new(),
            stopping: HashSet::new(),
            handing_off: HashMap::new(),
            held: HashMap::new(),
            held_total: 0,
            fenced: false,
            _entity: std::marker::PhantomData,
        }
    }
}

impl<A, F, M> Region<A, F, M>
where
    A: Actor,
    A::Msg: From<M>,
    M: Send + 'static,
    F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
{
    fn hold(&mut self, envelope: Envelope<M>) {
        // A marker is never dropped: a drain waits for it.
        let marker = matches!(envelope.body, Body::Flush { .. });
        if self.held_total >= self.buffer && !marker {
            let n = self.counters.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    region = %self.type_name,
                    dropped = n,
                    buffer = self.buffer,
                    "sharding: the region's buffer is full; dropping new messages for shards without a known owner"
                );
            }
            return;
        }
        self.held_total += 1;
        self.counters.held.fetch_add(1, Ordering::Relaxed);
        self.held
            .entry(envelope.shard)
            .or_default()
            .push_back(envelope);
    }

    /// Routes the messages held for `shard` again, in order.
    fn release(&mut self, ctx: &mut Context<'_, Self>, shard: u32) {
        let Some(held) = self.held.remove(&shard) else {
            return;
        };
        self.held_total -= held.len();
        self.counters
            .held
            .fetch_sub(held.len() as u64, Ordering::Relaxed);
        for envelope in held {
            self.route(ctx, envelope);
        }
    }

    fn route(&mut self, ctx: &mut Context<'_, Self>, mut envelope: Envelope<M>) {
        let shard = envelope.shard;
        if shard as usize >= self.views.len() {
            tracing::error!(region = %self.type_name, shard, "sharding: a message for a shard this region does not have (different shard counts on two nodes?)");
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if envelope.hops > MAX_HOPS {
            tracing::error!(region = %self.type_name, shard, "sharding: a message was forwarded too often; dropped");
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Body::Flushed { id } = envelope.body {
            // The answer to this node's marker: addressed here, not to
            // the shard's owner.
            self.drained(ctx, shard, id);
            return;
        }
        let view = &self.views[shard as usize];
        if self.handing_off.contains_key(&shard)
            || self.stopping.contains(&shard)
            || envelope.rev > view.rev
            || self.fenced
            || (envelope.sent_here() && self.drains.draining(shard))
        {
            self.hold(envelope);
            return;
        }
        let rev = view.rev;
        let from_here = envelope.sent_here();
        match view.owner.clone() {
            Some(owner) if owner == self.me => match envelope.body {
                Body::Msg { entity, msg } => {
                    let Some(local) = self.local_shard(ctx, shard, rev) else {
                        self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                        return;
                    };
                    local.tell(ShardMsg::Deliver(entity, msg));
                    if from_here {
                        self.drains.sent(shard, None);
                    }
                }
                Body::Flush { origin, id, .. } => self.answer_marker(ctx, shard, origin, id),
                Body::Flushed { .. } => {}
            },
            Some(owner) => match self.peers.get(&owner) {
                Some(peer) => {
                    envelope.rev = rev;
                    envelope.hops += 1;
                    self.counters.forwarded.fetch_add(1, Ordering::Relaxed);
                    peer.tell(envelope);
                    if from_here {
                        self.drains.sent(shard, Some(&owner));
                    }
                }
                None => {
                    if self.finding.insert(owner.clone()) {
                        let _ = self.coordinator.send(Command::FindPeer(owner));
                    }
                    self.hold(envelope);
                }
            },
            None => {
                if self.allocating.insert(shard) {
                    let _ = self.coordinator.send(Command::Allocate(shard));
                }
                self.hold(envelope);
            }
        }
    }

    fn local_shard(
        &mut self,
        ctx: &mut Context<'_, Self>,
        shard: u32,
        token: u64,
    ) -> Option<ActorRef<ShardMsg<M>>> {
        if let Some(local) = self.local.get(&shard) {
            return Some(local.clone());
        }
        let type_name = self.type_name.clone();
        let factory = self.factory.clone();
        let passivate_after = self.passivate_after;
        let counters = self.counters.clone();
        let remembered = self.remembered.clone();
        let (ids, refuse) = (self.ids.clone(), self.refuse);
        let (backoff, refuse_failing) = (self.backoff.clone(), self.refuse_failing);
        let props = Props::new(move || {
            Shard::<A, F, M>::new(
                type_name.clone(),
                shard,
                token,
                factory.clone(),
                passivate_after,
                counters.clone(),
            )
            .remembering(remembered.clone())
            .checking(ids.clone(), refuse)
            .backing_off(backoff.clone(), refuse_failing)
        });
        match ctx.spawn(props) {
            Ok(actor) => {
                ctx.watch(&actor);
                self.local_ids.insert(actor.id(), shard);
                self.local.insert(shard, actor.clone());
                self.counters.shards.fetch_add(1, Ordering::Relaxed);
                Some(actor)
            }
            Err(e) => {
                tracing::error!(region = %self.type_name, shard, error = %e, "sharding: cannot start a shard");
                None
            }
        }
    }

    fn stop_shard(&mut self, ctx: &mut Context<'_, Self>, shard: u32) -> bool {
        match self.local.remove(&shard) {
            Some(actor) => {
                ctx.stop_child(&actor);
                self.stopping.insert(shard);
                true
            }
            None => self.stopping.contains(&shard),
        }
    }
}

impl<A, F, M> Actor for Region<A, F, M>
where
    A: Actor,
    A::Msg: From<M>,
    M: Send + 'static,
    F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
{
    type Msg = RegionMsg<M>;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.myself = Some(ctx.myself());
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: RegionMsg<M>) {
        match msg {
            RegionMsg::Deliver(envelope) => {
                self.with_lane(ctx, envelope.shard, |this, ctx, lane| {
                    // The entry counted it on its way here.
                    if let Some(lane) = lane {
                        lane.queued -= 1;
                    }
                    this.route(ctx, envelope);
                });
            }
            RegionMsg::Owner { shard, owner, rev } => {
                self.with_lane(ctx, shard, |this, ctx, _| {
                    let Some(view) = this.views.get_mut(shard as usize) else {
                        return;
                    };
                    if rev < view.rev {
                        return;
                    }
                    view.rev = rev;
                    view.owner = owner.map(|h| h.node);
                    let moved_away = view.owner.as_deref() != Some(this.me.as_str());
                    let now = view.owner.clone();
                    this.allocating.remove(&shard);
                    if moved_away && this.stop_shard(ctx, shard) {
                        tracing::warn!(region = %this.type_name, shard, now = ?now, "sharding: a shard running here moved to another owner; stopping it");
                    }
                    this.drain_if_moved(ctx, shard);
                    this.release(ctx, shard);
                });
            }
            RegionMsg::Peer { node, region } => {
                tracing::debug!(me = %self.me, peer = %node, found = region.is_some(), "sharding: peer region");
                self.with_all_lanes(ctx, |this, ctx| {
                    this.finding.remove(&node);
                    match region {
                        Some(region) => {
                            ctx.watch(&region);
                            this.peers.insert(node.clone(), region);
                            let waiting: Vec<u32> = this
                                .held
                                .keys()
                                .copied()
                                .filter(|s| this.views[*s as usize].owner.as_deref() == Some(&node))
                                .collect();
                            for shard in waiting {
                                this.release(ctx, shard);
                            }
                        }
                        None => {
                            if let Some(old) = this.peers.remove(&node) {
                                ctx.unwatch(&old);
                            }
                        }
                    }
                });
            }
            RegionMsg::HandOff { shard, done } => {
                self.with_lane(ctx, shard, |this, ctx, _| {
                    if this.stop_shard(ctx, shard) {
                        this.handing_off.insert(shard, Some(done));
                    } else {
                        this.handing_off.insert(shard, None);
                        let _ = done.send(());
                    }
                });
            }
            RegionMsg::HandOffEnded(shard) => {
                self.with_lane(ctx, shard, |this, ctx, _| {
                    this.handing_off.remove(&shard);
                    this.release(ctx, shard);
                });
            }
            RegionMsg::Recalled { shard, ids } => {
                self.with_lane(ctx, shard, |this, ctx, _| {
                    let Some(view) = this.views.get(shard as usize) else {
                        return;
                    };
                    let here = view.owner.as_deref() == Some(this.me.as_str());
                    let rev = view.rev;
                    if !here
                        || this.fenced
                        || this.handing_off.contains_key(&shard)
                        || this.stopping.contains(&shard)
                    {
                        return;
                    }
                    if let Some(local) = this.local_shard(ctx, shard, rev) {
                        for id in ids {
                            local.tell(ShardMsg::Wake(id));
                        }
                    }
                });
            }
            RegionMsg::Fenced(fenced) => {
                self.with_all_lanes(ctx, |this, ctx| {
                    this.fenced = fenced;
                    if fenced {
                        let shards: Vec<u32> = this.local.keys().copied().collect();
                        for shard in shards {
                            this.stop_shard(ctx, shard);
                        }
                    } else {
                        let shards: Vec<u32> = this.held.keys().copied().collect();
                        for shard in shards {
                            this.release(ctx, shard);
                        }
                    }
                });
            }
            RegionMsg::DrainTimeout { shard, id } => {
                self.with_lane(ctx, shard, |this, ctx, _| {
                    this.drain_timed_out(ctx, shard, id);
                });
            }
            RegionMsg::DrainUnreachable { shard, id } => {
                self.with_lane(ctx, shard, |this, ctx, _| {
                    this.drain_unreachable(ctx, shard, id);
                });
            }
        }
    }

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        let Signal::Terminated(id, _) = signal else {
            return;
        };
        if let Some(shard) = self.local_ids.remove(&id) {
            // Stopped on request, or failed for good under its supervisor.
            self.with_lane(ctx, shard, |this, ctx, _| {
                this.stopping.remove(&shard);
                if this.local.get(&shard).is_some_and(|a| a.id() == id) {
                    this.local.remove(&shard);
                }
                this.counters.shards.fetch_sub(1, Ordering::Relaxed);
                match this.handing_off.get_mut(&shard) {
                    Some(waiter) => {
                        if let Some(done) = waiter.take() {
                            let _ = done.send(());
                        }
                    }
                    None => this.release(ctx, shard),
                }
            });
            return;
        }
        // A peer region ended (its node went down or restarted): find it
        // again when a message needs it; drains through it are over.
        self.with_all_lanes(ctx, |this, ctx| {
            let gone: Vec<String> = this
                .peers
                .iter()
                .filter(|(_, peer)| peer.id() == id)
                .map(|(node, _)| node.clone())
                .collect();
            for node in gone {
                this.peers.remove(&node);
                this.drains_gone(ctx, &node);
            }
        });
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.lanes.close();
    }
}

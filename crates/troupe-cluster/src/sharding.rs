//! Cluster sharding: many entities of one type (accounts, carts, devices)
//! spread over the nodes that run a region of the type, each entity alive
//! on one node at a time, reached by its id from any node.
//!
//! An entity id maps to one of `shards` shards (a fixed hash, so every
//! node and every version agree: [`shard_of`]); each shard is owned by one
//! node through a [lease](crate::lease) in the NATS key-value bucket. A
//! node's [`ShardRegion`] routes each message to the owning node's region,
//! which starts the entity on its first message, passivates it when it has
//! been idle for `passivate_after`, and starts it again on the next
//! message. Persistent entities are started with
//! [`ShardRegion::start_persistent`], which recovers each from a journal
//! every node reads and refuses one that only a node reads (see
//! `sharding/persistent.rs` for why).
//!
//! Entity ids are 1 to [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) bytes and
//! pass the type's validator ([`ShardingSettings::validate`]); any other
//! id is refused where it enters, with an answer to an asker, and again
//! before an entity starts (`sharding/ids.rs`).
//!
//! Shards move when a node leaves ([`ShardRegion::leave`] hands its shards
//! over), when a node is declared down (its shards go to the live nodes),
//! and to rebalance (a node with more than one shard over the least loaded
//! hands some over). A handoff stops the shard's entities first, holds the
//! messages that arrive meanwhile (bounded, the excess counted), moves the
//! lease in one compare-and-set, and then forwards what it held. A node
//! whose process stalled past half the heartbeat timeout hands its shards
//! over the same way and hosts again once the others cannot have declared
//! it down (`sharding/coordinator.rs`).
//!
//! What it guarantees (see `docs/semantics.md`, "Cluster sharding"):
//!
//! * **One activation per entity while the nodes can talk**: an entity
//!   runs only in the shard of the node its lease names, and a shard is
//!   handed over only after its entities stopped. A node cut off or paused
//!   long enough to be declared down may run its old activations until it
//!   sees the lease moved or has been disconnected for `self_fence_after`;
//!   each activation gets the lease revision as its fencing token
//!   ([`EntityContext::token`]), so a persistent entity's old activation
//!   cannot write once the new one has.
//! * **Order**: messages from one sender to one entity arrive in the order
//!   sent while the entity's shard stays put; a move can reorder messages
//!   sent across it (some were forwarded by the old owner, some not).
//! * **At-most-once** across nodes, as every remote tell: a message
//!   forwarded to a node that dies before handling it is lost.
//!
//! ```no_run
//! use std::sync::Arc;
//! use troupe::{Actor, ActorSystem, Context, Props};
//! use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
//! use troupe_remote::{Node, RemoteConfig};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! enum Counter { Add(u64) }
//! impl troupe_remote::RemoteMessage for Counter { const TAG: &'static str = "example.Counter"; }
//!
//! struct Count { id: String, total: u64 }
//! impl Actor for Count {
//!     type Msg = Counter;
//!     fn receive(&mut self, _ctx: &mut Context<'_, Self>, Counter::Add(n): Counter) {
//!         self.total += n;
//!         println!("{} is at {}", self.id, self.total);
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let system = ActorSystem::builder().build()?;
//! let node = Arc::new(Node::start(&system, RemoteConfig::new("nats://127.0.0.1:4222", "node-a")).await?);
//! let counters = ShardRegion::start(node.clone(), &system, ShardingSettings::new("counter"), |entity| {
//!     let id = entity.id.clone();
//!     Props::new(move || Count { id: id.clone(), total: 0 })
//! })
//! .await?;
//! counters.tell("visits-home", Counter::Add(1)); // on whichever node owns its shard
//! counters.leave().await; // hand this node's shards over before it stops
//! node.shutdown().await;
//! # Ok(()) }
//! ```

mod backoff;
mod coordinator;
mod envelope;
mod ids;
mod lanes;
mod persistent;
mod region;
mod remember;
mod settings;
mod shard;

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use troupe::{Actor, ActorRef, ActorSystem, Props};
use troupe_remote::{Node, RemoteMessage};

use crate::lease::{LeaseError, Leases};
use coordinator::{Coordinator, Plan};
use envelope::Envelope;
use ids::IdCheck;
pub use ids::IdValidator;
use lanes::{Lanes, RegionEntry};
pub use persistent::ShardingError;
use region::{Command, Region, RegionMsg, RegionParts};
use remember::Remembered;
pub use settings::{EntityBackoff, ShardingSettings};

/// What an entity's factory is told about the entity it starts.
#[derive(Debug, Clone)]
pub struct EntityContext {
    /// The entity type's name.
    pub type_name: Arc<str>,
    /// The entity's id.
    pub id: String,
    /// Its shard.
    pub shard: u32,
    /// The revision of the shard's lease on this node: a fencing token,
    /// larger for every new owner of the shard, so an old activation on a
    /// node that lost the shard cannot write after the new one.
    /// [`ShardRegion::start_persistent`] gives it to each persistent
    /// entity itself.
    pub token: u64,
    /// What this activation says of itself (see
    /// [`report_failure`](Self::report_failure)); made by the shard.
    activation: backoff::Activation,
}

impl EntityContext {
    /// Says that this activation failed for `reason` (it could not load
    /// its state, its store is unreachable): when it stops, its shard
    /// starts the next activation only after a backoff, and refuses its
    /// messages once it has failed too often in a row
    /// ([`ShardingSettings::entity_backoff`]). Call it when the entity is
    /// about to stop, before it stops (from the actor, with a clone of this
    /// context): from then on its shard hands it no more messages, they
    /// wait for the next activation. The first reason of an activation is
    /// the one kept. Persistent entities
    /// started with [`ShardRegion::start_persistent`] report their journal
    /// failures themselves.
    pub fn report_failure(&self, reason: impl Into<String>) {
        self.activation.failed(reason.into());
    }

    /// Says that this activation works (it has loaded its state): a
    /// failure it reports later is counted as the first in a row, not
    /// added to the failures before it.
    pub fn report_recovered(&self) {
        self.activation.recovered();
    }
}

/// The shard an entity id belongs to among `shards`: CRC-32C of the id's
/// bytes, modulo `shards`. Fixed: changing it would move every entity.
pub fn shard_of(entity: &str, shards: u32) -> u32 {
    crc32c::crc32c(entity.as_bytes()) % shards.max(1)
}

/// Counters shared by a region and its shards.
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub(crate) owned: AtomicU64,
    pub(crate) shards: AtomicU64,
    pub(crate) entities_started: AtomicU64,
    pub(crate) entities_stopped: AtomicU64,
    pub(crate) passivated: AtomicU64,
    pub(crate) held: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) forwarded: AtomicU64,
    pub(crate) refused: AtomicU64,
    /// Of `refused`: for an entity whose activations kept failing.
    pub(crate) refused_failing: AtomicU64,
    pub(crate) failed_activations: AtomicU64,
    pub(crate) drains: AtomicU64,
    pub(crate) drain_timeouts: AtomicU64,
}

/// What a region has done, on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionStats {
    /// Shards this node owns now (by its view of the leases).
    pub shards: u64,
    /// Shards running here now: owned ones that have had a message since
    /// they came here.
    pub active_shards: u64,
    /// Entities running here now.
    pub entities: u64,
    /// Entity activations started here, in all.
    pub started: u64,
    /// Entities stopped for being idle, in all.
    pub passivated: u64,
    /// Messages held now (owner unknown, or a handoff in progress).
    pub held: u64,
    /// Messages dropped: buffer full, an entity that could not start, or
    /// (a defect) forwarded too often.
    pub dropped: u64,
    /// Messages forwarded to another node's region.
    pub forwarded: u64,
    /// Messages refused for their entity id (empty, over
    /// [`MAX_ID_BYTES`](crate::MAX_ID_BYTES), or refused by
    /// [`ShardingSettings::validate`]): by this node's handle before
    /// routing, or by a shard here before starting the entity. Each is
    /// logged, and an ask in it answered with `AskError::Refused`. Also
    /// the messages refused for an entity whose activations failed
    /// [`EntityBackoff::max_failures`] times in a row, or held beyond
    /// [`EntityBackoff::max_held`] while it waits for its next attempt.
    pub refused: u64,
    /// Entity activations that failed here, in all: reported a failure
    /// (a persistent entity's journal failure), stopped during their
    /// recovery, or stopped by their supervisor. Each delays the entity's
    /// next activation ([`ShardingSettings::entity_backoff`]).
    pub failed_activations: u64,
    /// Markers sent to drain a moved shard's old route, in all: after a
    /// move of a shard this node had sent messages to on another node,
    /// its next messages for the shard wait until a marker sent after the
    /// earlier ones reached the new owner, so none overtakes an earlier
    /// one.
    pub drains: u64,
    /// Of `drains`: those that sent on after 2 s without the marker's
    /// answer (logged): a message still on the old route may then arrive
    /// after later ones.
    pub drain_timeouts: u64,
}

/// This node's region of one sharded entity type.
///
/// Dropping it without [`leave`](ShardRegion::leave) makes its coordinator
/// leave on its own (the region actor stops with the actor system).
pub struct ShardRegion<M: RemoteMessage> {
    entry: ActorRef<Envelope<M>>,
    region: ActorRef<RegionMsg<M>>,
    shards: u32,
    type_name: Arc<str>,
    ids: IdCheck,
    counters: Arc<Counters>,
    commands: mpsc::UnboundedSender<Command>,
    coordinator: Option<JoinHandle<()>>,
    system: ActorSystem,
    /// `leave` ran (or began): dropping has nothing more to do.
    left: bool,
}

/// Dropped without [`leave`](ShardRegion::leave): the coordinator is told
/// to leave on its own (the region actor holds a sender of the same
/// channel, so the channel's end alone would never tell it).
impl<M: RemoteMessage> Drop for ShardRegion<M> {
    fn drop(&mut self) {
        if !self.left {
            let (done, _) = oneshot::channel();
            let _ = self.commands.send(Command::Leave(done));
        }
    }
}

/// An entity's ref: wraps each message for the region, or refuses it if
/// the id was refused when the ref was made.
struct EntityTarget<M: RemoteMessage> {
    entry: ActorRef<Envelope<M>>,
    entity: String,
    shard: u32,
    /// Why the id is refused (checked once, when the ref was made).
    refused: Option<Arc<str>>,
    type_name: Arc<str>,
    counters: Arc<Counters>,
}

impl<M: RemoteMessage> troupe::ExternalTarget<M> for EntityTarget<M> {
    fn send(&self, msg: M) {
        if let Some(reason) = &self.refused {
            return ids::refuse(&self.type_name, &self.counters, &self.entity, reason, msg);
        }
        self.entry
            .tell(Envelope::message(self.entity.clone(), self.shard, msg));
    }

    fn is_closed(&self) -> bool {
        self.entry.is_terminated()
    }

    fn name(&self) -> Option<&str> {
        Some(&self.entity)
    }
}

/// The entity type of a proxy region, which never starts one.
struct NoEntity<M>(std::marker::PhantomData<fn(M)>);

impl<M: Send + 'static> Actor for NoEntity<M> {
    type Msg = M;
    fn receive(&mut self, _ctx: &mut troupe::Context<'_, Self>, _msg: M) {}
}

fn valid_type_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl<M: RemoteMessage> ShardRegion<M> {
    /// Starts this node's region of `settings.type_name`: publishes it
    /// (as `region-<type>-<node>`), registers it in the lease bucket and
    /// loads who owns which shard. `factory` makes an entity's props from
    /// its [`EntityContext`]; the entity's message type must convert from
    /// `M` (it may be `M` itself). For persistent entities use
    /// [`start_persistent`](Self::start_persistent): this one cannot see
    /// the journal inside the props, so it cannot refuse a node-local
    /// one.
    ///
    /// Call from the tokio runtime the node runs on. Fails if the type
    /// name is invalid, the bucket cannot be opened or made within 30 s,
    /// or the region cannot be published (a region of this type already
    /// runs on this node).
    pub async fn start<A, F>(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: ShardingSettings,
        factory: F,
    ) -> Result<ShardRegion<M>, LeaseError>
    where
        A: Actor,
        A::Msg: From<M>,
        F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
    {
        Self::start_region(node, system, settings, factory, false).await
    }

    /// Starts a proxy region of `settings.type_name` on this node: it
    /// routes messages to the entities like a region, and never owns a
    /// shard (no entity of the type runs here). For nodes that send to
    /// entities and do not host them: clients, gateways.
    ///
    /// Fails as [`start`](Self::start).
    pub async fn start_proxy(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: ShardingSettings,
    ) -> Result<ShardRegion<M>, LeaseError> {
        let never = |_: &EntityContext| -> Props<NoEntity<M>> {
            unreachable!("a proxy region owns no shard, so it starts no entity")
        };
        Self::start_region(node, system, settings, never, true).await
    }

    async fn start_region<A, F>(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: ShardingSettings,
        factory: F,
        proxy: bool,
    ) -> Result<ShardRegion<M>, LeaseError>
    where
        A: Actor,
        A::Msg: From<M>,
        F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
    {
        if !valid_type_name(&settings.type_name) {
            return Err(LeaseError::InvalidKey(settings.type_name));
        }
        let shards = settings.shards.max(1);
        let leases = Leases::open(&node, &settings.bucket, settings.replicas).await?;
        let remembered = if settings.remember_entities && !proxy {
            Some(Remembered::open(&node, &settings.type_name, settings.replicas).await?)
        } else {
            None
        };
        let counters = Arc::new(Counters::default());
        let ids = IdCheck {
            validate: settings.validate.clone(),
        };
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let lanes = Lanes::new(shards);
        let name = format!("region-{}-{}", settings.type_name, node.name());
        let name_ref: region::NameRef<M> = {
            let (node, type_name) = (node.clone(), settings.type_name.clone());
            Arc::new(move |of: &str| {
                node.select::<Envelope<M>>(&format!("region-{type_name}-{of}"))
                    .ok()
            })
        };
        let parts = std::sync::Mutex::new(Some(RegionParts {
            me: node.name().to_string(),
            type_name: settings.type_name.as_str().into(),
            shards,
            factory: Arc::new(factory),
            passivate_after: settings.passivate_after,
            buffer: settings.buffer,
            counters: counters.clone(),
            coordinator: commands.clone(),
            remembered: remembered.clone(),
            lanes: lanes.clone(),
            name_ref,
            ids: ids.clone(),
            refuse: ids::refuse::<M>,
            backoff: settings.entity_backoff.clone(),
            refuse_failing: backoff::refuse_failing::<M>,
        }));
        // The region does not fail (its shards are its children and are
        // supervised there); a factory that could run twice would need
        // its parts twice, so a restart is refused loudly.
        let region = system
            .spawn(Props::new(move || {
                let parts = parts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("a shard region is never restarted");
                Region::<A, F, M>::new(parts)
            }))
            .map_err(|e| LeaseError::Unavailable(format!("cannot start the region: {e}")))?;
        // What the user and other nodes send through: it passes the
        // region actor by once a shard's route is settled (`lanes.rs`).
        let entry = ActorRef::from_external(
            system,
            RegionEntry {
                lanes,
                to_region: {
                    let region = region.clone();
                    Box::new(move |envelope| region.tell(RegionMsg::Deliver(envelope)))
                },
                region_ended: {
                    let region = region.clone();
                    Box::new(move || region.is_terminated())
                },
                counters: counters.clone(),
            },
        );
        if let Err(e) = node.publish(&name, &entry).await {
            system.stop(&region);
            return Err(LeaseError::Unavailable(format!(
                "cannot publish the region as {name}: {e}"
            )));
        }
        let coordinator = Coordinator {
            node: node.clone(),
            leases,
            plan: Plan {
                type_name: settings.type_name.clone(),
                shards,
                rebalance_interval: settings.rebalance_interval,
                rebalance_limit: settings.rebalance_limit,
                self_fence_after: settings
                    .self_fence_after
                    .unwrap_or(node.config().heartbeat_timeout / 2),
                proxy,
            },
            region: region.clone(),
            commands: commands_rx,
            owners: vec![(None, 0); shards as usize],
            regions: BTreeMap::new(),
            finders: HashMap::new(),
            counters: counters.clone(),
            pending: Default::default(),
            hosting: !proxy,
            stepping_down: false,
            stepped_down: None,
            handled_stall: None,
            registered_incarnation: node.incarnation(),
            remembered,
        };
        let (ready, started) = oneshot::channel();
        let coordinator = tokio::spawn(coordinator.run(ready));
        match started.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                node.unpublish(&name).await;
                system.stop(&region);
                return Err(e);
            }
            Err(_) => {
                node.unpublish(&name).await;
                system.stop(&region);
                return Err(LeaseError::Unavailable("the coordinator ended".into()));
            }
        }
        Ok(ShardRegion {
            entry,
            region,
            shards,
            type_name: settings.type_name.as_str().into(),
            ids,
            counters,
            commands,
            coordinator: Some(coordinator),
            system: system.clone(),
            left: false,
        })
    }

    /// Sends `msg` to the entity `entity`, wherever it runs (starting it
    /// if it is not running).
    ///
    /// An id this region does not accept (empty, over
    /// [`MAX_ID_BYTES`](crate::MAX_ID_BYTES), or refused by
    /// [`ShardingSettings::validate`]) is refused here: the message is not
    /// sent, it is counted in [`RegionStats::refused`] and logged, and an
    /// ask inside it is answered with `AskError::Refused`.
    pub fn tell(&self, entity: impl Into<String>, msg: M) {
        let entity = entity.into();
        if let Some(reason) = self.ids.refusal(&entity) {
            return ids::refuse(&self.type_name, &self.counters, &entity, &reason, msg);
        }
        let shard = shard_of(&entity, self.shards);
        self.entry.tell(Envelope::message(entity, shard, msg));
    }

    /// An ordinary ref to the entity `entity`: `tell`, `ask`, or hand it
    /// to another actor. It never counts as terminated while the region
    /// runs (the entity is started again by its next message).
    ///
    /// The id is checked once, here, as [`tell`](Self::tell) checks it: a
    /// ref to an id this region does not accept refuses every message
    /// (counted, logged), and an ask through it fails at once with
    /// `AskError::Refused` and the reason.
    pub fn entity_ref(&self, entity: impl Into<String>) -> ActorRef<M> {
        let entity = entity.into();
        let shard = shard_of(&entity, self.shards);
        let refused = self.ids.refusal(&entity).map(Arc::from);
        ActorRef::from_external(
            &self.system,
            EntityTarget {
                entry: self.entry.clone(),
                entity,
                shard,
                refused,
                type_name: self.type_name.clone(),
                counters: self.counters.clone(),
            },
        )
    }

    /// The shard `entity` belongs to.
    pub fn shard_of(&self, entity: &str) -> u32 {
        shard_of(entity, self.shards)
    }

    /// What this node's region has done so far.
    pub fn stats(&self) -> RegionStats {
        let c = &self.counters;
        let started = c.entities_started.load(Ordering::Relaxed);
        RegionStats {
            shards: c.owned.load(Ordering::Relaxed),
            active_shards: c.shards.load(Ordering::Relaxed),
            entities: started.saturating_sub(c.entities_stopped.load(Ordering::Relaxed)),
            started,
            passivated: c.passivated.load(Ordering::Relaxed),
            held: c.held.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            forwarded: c.forwarded.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            failed_activations: c.failed_activations.load(Ordering::Relaxed),
            drains: c.drains.load(Ordering::Relaxed),
            drain_timeouts: c.drain_timeouts.load(Ordering::Relaxed),
        }
    }

    /// Leaves: hands every shard this node owns to the other nodes (their
    /// entities stopped first), or releases them if no other node runs a
    /// region of the type, then stops the region. Call before
    /// `Node::shutdown`.
    pub async fn leave(mut self) {
        self.stop().await;
    }

    async fn stop(&mut self) {
        self.left = true;
        let (done, left) = oneshot::channel();
        let _ = self.commands.send(Command::Leave(done));
        let _ = left.await;
        if let Some(coordinator) = self.coordinator.take() {
            let _ = coordinator.await;
        }
        self.system.stop(&self.region);
    }
}

//! Cluster singletons: one instance of an actor in the whole cluster, on
//! whichever node holds its [lease](crate::lease), reached from every node
//! through a proxy.
//!
//! Every node that may run the singleton calls [`Singleton::start`] with the
//! same name and a factory. One node acquires the lease and runs the
//! instance; the others follow it. When the holder's node goes down (no
//! heartbeat for its `heartbeat_timeout`, or a restart) a follower takes the
//! lease over and starts a new instance; when the holder
//! [leaves](Singleton::leave), it stops its instance first and releases the
//! lease, and a follower takes over at once.
//!
//! What it guarantees (see `docs/semantics.md`, "Cluster singletons"):
//!
//! * **At most one holder at a time**, decided by the NATS cluster's
//!   replicated key-value store: every change of holder is a
//!   compare-and-set on the lease's revision.
//! * **Fencing**: each instance is started with the lease revision as its
//!   fencing token, larger for every new holder. Instances can overlap in
//!   time when the old holder's node was paused or cut off and declared
//!   down while it still ran: it stops its instance as soon as it sees the
//!   lease moved, or after `self_fence_after` without a NATS connection.
//!   A [`Persistent`](crate::persistence::Persistent) instance given the
//!   token (`.fencing_token(token)`) cannot write to its journal once a
//!   newer holder has.
//! * **The proxy holds messages during a handover** (up to `buffer`, the
//!   oldest dropped and counted beyond that) and forwards them, in order,
//!   to the next instance. Messages forwarded to an instance that dies
//!   before handling them are lost: tells across nodes are at-most-once.
//!
//! ```no_run
//! use std::sync::Arc;
//! use troupe::{Actor, ActorSystem, Context, Props};
//! use troupe_cluster::singleton::{Singleton, SingletonSettings};
//! use troupe_remote::{Node, RemoteConfig};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! enum Tick { Now(u64) }
//! impl troupe_remote::RemoteMessage for Tick { const TAG: &'static str = "example.Tick"; }
//!
//! /// The one scheduler of the cluster.
//! struct Scheduler { token: u64 }
//! impl Actor for Scheduler {
//!     type Msg = Tick;
//!     fn receive(&mut self, _ctx: &mut Context<'_, Self>, Tick::Now(t): Tick) {
//!         println!("tick {t} handled by the holder of token {}", self.token);
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let system = ActorSystem::builder().build()?;
//! let node = Arc::new(Node::start(&system, RemoteConfig::new("nats://127.0.0.1:4222", "node-a")).await?);
//! let scheduler = Singleton::start(
//!     node.clone(),
//!     &system,
//!     SingletonSettings::new("scheduler"),
//!     |token| Props::new(move || Scheduler { token }),
//! )
//! .await?;
//! scheduler.proxy().tell(Tick::Now(1)); // to whichever node runs it
//! scheduler.leave().await; // hand it over before this node stops
//! node.shutdown().await;
//! # Ok(()) }
//! ```

mod front;
mod manager;
mod proxy;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use troupe::{Actor, ActorRef, ActorSystem, Props};
use troupe_remote::{Node, RemoteMessage};

use crate::lease::{LeaseError, Leases};
use manager::{Entry, Manager};
use proxy::{Proxy, ProxyMsg};

/// How a singleton runs.
#[derive(Debug, Clone)]
pub struct SingletonSettings {
    /// The singleton's name (letters, digits, `-`, `_`). Its lease key and
    /// the name its instance is published under are `singleton-<name>`.
    pub name: String,
    /// The key-value bucket of the leases (made on first use).
    pub bucket: String,
    /// Copies of the bucket when it is made: one per NATS server, at most
    /// 5 (3 on a three-server cluster survive the loss of one server).
    pub replicas: usize,
    /// Messages the proxy holds while no instance is known; beyond it the
    /// oldest is dropped and counted.
    pub buffer: usize,
    /// How long a holder may be disconnected from NATS before it stops
    /// its instance on its own (by then the others may have declared its
    /// node down). `None`: half the node's heartbeat timeout.
    pub self_fence_after: Option<Duration>,
}

impl SingletonSettings {
    /// Settings for the singleton `name`: bucket `troupe-leases`, one
    /// replica, a buffer of 1,000 messages.
    pub fn new(name: impl Into<String>) -> Self {
        SingletonSettings {
            name: name.into(),
            bucket: "troupe-leases".into(),
            replicas: 1,
            buffer: 1000,
            self_fence_after: None,
        }
    }
}

/// Where the singleton runs, as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SingletonStatus {
    /// Not known yet, or between holders (a handover, or the lease bucket
    /// unavailable).
    Vacant,
    /// This node runs the instance, with this fencing token.
    Holding {
        /// The lease revision the instance was started with.
        token: u64,
    },
    /// Another node runs it.
    Following {
        /// The holder's node name.
        node: String,
    },
}

/// This node's part of a cluster singleton: its proxy and its manager.
///
/// Dropping it without [`leave`](Singleton::leave) closes the manager's
/// leave channel, so the manager leaves as `leave` would, on its own (the
/// proxy stops with the actor system).
pub struct Singleton<M: Send + 'static> {
    proxy: ActorRef<M>,
    status: watch::Receiver<SingletonStatus>,
    dropped: Arc<AtomicU64>,
    leave: Option<oneshot::Sender<()>>,
    manager: Option<JoinHandle<()>>,
    proxy_actor: ActorRef<ProxyMsg<M>>,
    system: ActorSystem,
}

impl<M: RemoteMessage> Singleton<M> {
    /// Joins the singleton `settings.name` from this node: starts the
    /// node's proxy and its manager, which competes for the lease and runs
    /// `factory(token)` while it holds it. Call from the tokio runtime the
    /// node runs on. Fails if the lease bucket cannot be opened or made
    /// within 30 s, or the name is invalid.
    ///
    /// The instance's message type is the protocol `M`. For an instance
    /// with messages of its own, see [`start_converting`](Self::start_converting).
    pub async fn start<A, F>(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: SingletonSettings,
        factory: F,
    ) -> Result<Singleton<M>, LeaseError>
    where
        A: Actor<Msg = M>,
        F: FnMut(u64) -> Props<A> + Send + 'static,
    {
        Self::start_with(node, system, settings, factory, front::direct).await
    }

    /// As [`start`](Self::start), for an instance whose message type is
    /// wider than the protocol: it converts from `M` (`A::Msg: From<M>`)
    /// and may hold messages that never cross nodes, such as its own
    /// timers' ticks, `pipe_to_self` results or adapters' messages, with no
    /// serde and no `RemoteMessage`; or it is a
    /// [`Persistent`](crate::persistence::Persistent) actor, whose
    /// `Msg<M>` converts from its command type `M`. The proxy, the
    /// published name and the lookups carry `M`; on the holder's node a
    /// front actor converts each message and tells the instance (one more
    /// hop there), and stops when the instance stops.
    ///
    /// Name the protocol where the compiler cannot tell it:
    /// `Singleton::<Protocol>::start_converting(..)`, or the type of the
    /// variable that holds the singleton.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
    /// use troupe_cluster::singleton::{Singleton, SingletonSettings};
    /// use troupe_remote::Node;
    ///
    /// /// What other nodes send: serde and a tag.
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// enum Sweeps { Done(ReplyTo<u64>) }
    /// impl troupe_remote::RemoteMessage for Sweeps { const TAG: &'static str = "example.Sweeps"; }
    ///
    /// /// What the instance handles: the protocol, and its own timer's tick,
    /// /// which never leaves its node.
    /// enum SweeperMsg { Remote(Sweeps), Tick }
    /// impl From<Sweeps> for SweeperMsg {
    ///     fn from(m: Sweeps) -> Self { SweeperMsg::Remote(m) }
    /// }
    ///
    /// const EVERY: Duration = Duration::from_secs(60);
    ///
    /// struct Sweeper { done: u64 }
    /// impl Actor for Sweeper {
    ///     type Msg = SweeperMsg;
    ///     fn started(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.timers().start_single("sweep", EVERY, SweeperMsg::Tick);
    ///     }
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: SweeperMsg) {
    ///         match msg {
    ///             SweeperMsg::Tick => {
    ///                 self.done += 1; // a sweep
    ///                 ctx.timers().start_single("sweep", EVERY, SweeperMsg::Tick);
    ///             }
    ///             SweeperMsg::Remote(Sweeps::Done(reply)) => _ = reply.reply(self.done),
    ///         }
    ///     }
    /// }
    ///
    /// # async fn run(node: Arc<Node>, system: ActorSystem) -> Result<(), Box<dyn std::error::Error>> {
    /// let sweeper: Singleton<Sweeps> = Singleton::start_converting(
    ///     node.clone(),
    ///     &system,
    ///     SingletonSettings::new("sweeper"),
    ///     |_token| Props::new(|| Sweeper { done: 0 }),
    /// )
    /// .await?;
    /// let done = sweeper.proxy().ask(Sweeps::Done, Duration::from_secs(5)).await?;
    /// # let _ = done; Ok(()) }
    /// ```
    pub async fn start_converting<A, F>(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: SingletonSettings,
        factory: F,
    ) -> Result<Singleton<M>, LeaseError>
    where
        A: Actor,
        A::Msg: From<M>,
        F: FnMut(u64) -> Props<A> + Send + 'static,
    {
        Self::start_with(node, system, settings, factory, front::spawn::<M, A::Msg>).await
    }

    async fn start_with<A, F>(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: SingletonSettings,
        factory: F,
        entry: Entry<M, A::Msg>,
    ) -> Result<Singleton<M>, LeaseError>
    where
        A: Actor,
        F: FnMut(u64) -> Props<A> + Send + 'static,
    {
        let key = format!("singleton-{}", settings.name);
        if settings.name.is_empty()
            || !settings
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(LeaseError::InvalidKey(key));
        }
        let leases = Leases::open(&node, &settings.bucket, settings.replicas).await?;
        let dropped = Arc::new(AtomicU64::new(0));
        let (adapter_to, adapter) = oneshot::channel();
        let capacity = settings.buffer;
        let counted = dropped.clone();
        let adapter_to = std::sync::Mutex::new(Some(adapter_to));
        let proxy_actor = system
            .spawn(Props::new(move || {
                // The first start hands the adapter out; a restart (the
                // proxy does not fail, but a factory must allow it) keeps
                // the one the user holds.
                let to = adapter_to.lock().unwrap_or_else(|e| e.into_inner()).take();
                Proxy::new(capacity, counted.clone(), to)
            }))
            .map_err(|e| LeaseError::Unavailable(format!("cannot start the proxy: {e}")))?;
        let proxy = adapter
            .await
            .map_err(|_| LeaseError::Unavailable("the proxy did not start".into()))?;
        let (status_tx, status) = watch::channel(SingletonStatus::Vacant);
        let (leave, leave_rx) = oneshot::channel();
        let self_fence_after = settings
            .self_fence_after
            .unwrap_or(node.config().heartbeat_timeout / 2);
        let manager = Manager {
            node,
            system: system.clone(),
            leases,
            key,
            factory,
            entry,
            proxy: proxy_actor.clone(),
            status: status_tx,
            leave: leave_rx,
            self_fence_after,
        };
        let manager = tokio::spawn(manager.run());
        Ok(Singleton {
            proxy,
            status,
            dropped,
            leave: Some(leave),
            manager: Some(manager),
            proxy_actor,
            system: system.clone(),
        })
    }

    /// A ref that reaches the instance wherever it runs: tell it as you
    /// would the instance (see the module docs for what a handover costs).
    pub fn proxy(&self) -> ActorRef<M> {
        self.proxy.clone()
    }

    /// Where the singleton runs now, as this node sees it.
    pub fn status(&self) -> SingletonStatus {
        self.status.borrow().clone()
    }

    /// The status, to wait on (`changed().await`, `wait_for(..)`).
    pub fn status_changes(&self) -> watch::Receiver<SingletonStatus> {
        self.status.clone()
    }

    /// Messages this node's proxy dropped because its buffer was full
    /// during a handover.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Leaves the singleton: if this node runs the instance, stops it,
    /// waits for its end and releases the lease so another node takes over
    /// at once; then stops the proxy. Call before `Node::shutdown`.
    pub async fn leave(mut self) {
        self.stop().await;
    }

    async fn stop(&mut self) {
        if let Some(leave) = self.leave.take() {
            let _ = leave.send(());
        }
        if let Some(manager) = self.manager.take() {
            let _ = manager.await;
        }
        self.system.stop(&self.proxy_actor);
    }
}

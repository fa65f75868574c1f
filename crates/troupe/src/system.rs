//! The actor system: dispatchers, the scheduler, top-level actors (under the
//! guardian), dead letters, and the shutdown protocol.
//!
//! # Shutdown protocol
//!
//! 1. [`ActorSystem::shutdown`] (or a failure escalated to the top) marks the
//!    guardian as stopping, refuses new top-level spawns and sends `Stop` to
//!    every top-level actor. Each stops its children first (recursively),
//!    then itself; queued messages go to dead letters.
//! 2. When the last top-level actor reports its termination, the system
//!    *finishes*: dispatchers and the scheduler are told to stop and the
//!    termination latch opens.
//! 3. [`ActorSystem::await_termination`] waits for the latch and joins every
//!    thread the system started, so none is left running.
//!
//! The guardian keeps strong references to top-level actors and each actor to
//! its children, so an actor lives until it stops even with no `ActorRef`
//! left; after shutdown nothing refers back to the system.

#[cfg(feature = "tokio")]
mod async_runtime;
pub(crate) mod config;
pub(crate) mod dead_letters;
mod event_stream;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::actor::Actor;
use crate::actor_ref::{ActorId, ActorRef};
use crate::cell::{send_system, ActorCell, Cell, Parent, SystemMsg};
use crate::dispatch::on_shared_thread;
use crate::dispatch::pinned::{on_pinned_thread, PinnedThread};
use crate::dispatch::pool::{Pool, PoolSettings};
use crate::dispatch::Executor;
use crate::props::Props;
use crate::scheduler::Scheduler;
use crate::supervision::{Directive, Failure};
pub use config::{ConfigError, DispatcherConfig, DispatcherKind, Stealing, DEFAULT_THROUGHPUT};
use dead_letters::DeadLetters;
pub use dead_letters::{DeadLetter, DeadLetterReason};
pub use event_stream::{ActorEvent, ActorEventKind, EventStream};

/// Why an actor could not be spawned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnError {
    /// A sibling already has this name.
    NameTaken(String),
    /// Names must be non-empty, at most 255 bytes, without `/` and not start with `$`.
    InvalidName(String),
    /// No dispatcher of this name is configured.
    UnknownDispatcher(String),
    /// The system is shutting down.
    ShuttingDown,
    /// The parent is stopping or restarting.
    ParentStopping,
    /// The operating system refused a thread (pinned dispatcher).
    Thread(String),
    /// More than 2^32 live top-level actors.
    TooManyActors,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::NameTaken(n) => write!(f, "an actor named {n:?} already exists here"),
            SpawnError::InvalidName(n) => write!(
                f,
                "invalid actor name {n:?}: names are 1..=255 bytes, without '/', not starting with '$'"
            ),
            SpawnError::UnknownDispatcher(d) => write!(f, "no dispatcher named {d:?} is configured"),
            SpawnError::ShuttingDown => f.write_str("the actor system is shutting down"),
            SpawnError::ParentStopping => f.write_str("the parent actor is stopping or restarting"),
            SpawnError::Thread(e) => write!(f, "cannot start a pinned thread: {e}"),
            SpawnError::TooManyActors => f.write_str("too many live top-level actors"),
        }
    }
}

impl std::error::Error for SpawnError {}

pub(crate) fn validate_name(name: &str) -> Result<(), SpawnError> {
    if name.is_empty() || name.len() > 255 || name.contains('/') || name.starts_with('$') {
        return Err(SpawnError::InvalidName(name.to_string()));
    }
    Ok(())
}

/// Why the system terminated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminationReason {
    /// [`ActorSystem::shutdown`] was called.
    Requested,
    /// A top-level actor escalated this failure.
    Escalated(Failure),
}

/// Why waiting for termination failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AwaitError {
    /// Called on an actor's thread (a pool worker or a pinned thread), which
    /// the system must stop first.
    WouldDeadlock,
    /// The system did not terminate within the given time.
    Timeout,
}

impl fmt::Display for AwaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AwaitError::WouldDeadlock => {
                f.write_str("cannot wait for termination on an actor's thread")
            }
            AwaitError::Timeout => f.write_str("the actor system did not terminate in time"),
        }
    }
}

impl std::error::Error for AwaitError {}

enum Dispatcher {
    Pool(Arc<Pool>),
    Pinned {
        throughput: usize,
        spin: u32,
    },
    /// Runs actors as tasks on a runtime the system was given; nothing to
    /// start or stop.
    #[cfg(feature = "tokio")]
    Tokio(Arc<crate::dispatch::tokio_dispatcher::TokioExecutor>),
}

/// The parent of the top-level actors.
#[derive(Default)]
struct Guardian {
    /// Top-level cells by registry slot: a slab, so that a million idle
    /// actors cost 16 bytes each here (a hash map would cost about 50).
    slots: Vec<Option<Arc<dyn Cell>>>,
    /// Empty slots, reused first.
    free: Vec<u32>,
    /// Occupied slots.
    live: usize,
    names: HashMap<Box<str>, ActorId>,
    stopping: bool,
}

#[derive(Default)]
struct Termination {
    finished: bool,
    reason: Option<TerminationReason>,
}

#[derive(Default)]
struct Threads {
    scheduler: Option<JoinHandle<()>>,
    pinned: Vec<(Arc<PinnedThread>, JoinHandle<()>)>,
}

/// State shared by the system handle, every cell and every ask.
pub(crate) struct SystemInner {
    pub(crate) name: String,
    pub(crate) scheduler: Scheduler,
    dispatchers: HashMap<String, Dispatcher>,
    next_id: AtomicU64,
    /// Actor cells created and not yet freed (leak detection).
    pub(crate) live_cells: AtomicUsize,
    /// Ask promises alive: created and not yet dropped by both ends.
    pub(crate) live_asks: Arc<AtomicUsize>,
    guardian: Mutex<Guardian>,
    dead_letters: DeadLetters,
    /// The receptionist actor, spawned on first use (`receptionist.rs`).
    receptionist: Mutex<Option<ActorRef<crate::receptionist::Command>>>,
    /// The event stream's topics (`system/event_stream.rs`).
    pub(crate) events: event_stream::Topics,
    termination: Mutex<Termination>,
    terminated: Condvar,
    threads: Mutex<Threads>,
    /// Where actors' futures run (`Context::pipe_to_self`).
    #[cfg(feature = "tokio")]
    pub(crate) async_runtime: async_runtime::AsyncRuntime,
}

impl SystemInner {
    pub(crate) fn next_id(&self) -> ActorId {
        ActorId(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The executor for a new actor on dispatcher `name` (default: `"default"`).
    pub(crate) fn executor_for(
        &self,
        name: Option<&str>,
        actor_name: Option<&str>,
        id: ActorId,
    ) -> Result<Arc<dyn Executor>, SpawnError> {
        let name = name.unwrap_or("default");
        match self.dispatchers.get(name) {
            Some(Dispatcher::Pool(pool)) => Ok(pool.clone()),
            #[cfg(feature = "tokio")]
            Some(Dispatcher::Tokio(exec)) => Ok(exec.clone()),
            Some(Dispatcher::Pinned { throughput, spin }) => {
                let label = actor_name.map_or_else(|| id.0.to_string(), str::to_string);
                let (exec, handle) = PinnedThread::start(&label, *throughput, *spin)
                    .map_err(|e| SpawnError::Thread(e.to_string()))?;
                self.threads
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .pinned
                    .push((exec.clone(), handle));
                Ok(exec)
            }
            None => Err(SpawnError::UnknownDispatcher(name.to_string())),
        }
    }

    pub(crate) fn dead_letter(
        &self,
        recipient: ActorId,
        name: Option<&str>,
        ty: &'static str,
        reason: DeadLetterReason,
    ) {
        self.dead_letters.record(recipient, name, ty, reason);
        #[cfg(feature = "metrics")]
        crate::runtime_metrics::dead_letter(reason);
        self.events.dead_letter(|| DeadLetter {
            reason,
            recipient,
            recipient_name: name.map(str::to_string),
            message_type: ty,
        });
    }

    /// A top-level actor has stopped.
    pub(crate) fn guardian_child_terminated(&self, slot: u32, name: Option<&str>) {
        let finish = {
            let mut g = self.guardian.lock().unwrap_or_else(|e| e.into_inner());
            if g.slots[slot as usize].take().is_some() {
                g.free.push(slot);
                g.live -= 1;
            }
            if let Some(name) = name {
                g.names.remove(name);
            }
            g.stopping && g.live == 0
        };
        if finish {
            self.finish();
        }
    }

    /// A top-level actor failed; an escalation stops the system.
    pub(crate) fn guardian_child_failed(&self, failure: Failure, directive: Directive) {
        if directive == Directive::Escalate {
            tracing::error!(system = %self.name, "escalated to the top, shutting down: {failure}");
            self.begin_shutdown(TerminationReason::Escalated(failure));
        }
    }

    fn begin_shutdown(&self, reason: TerminationReason) {
        let (children, finish) = {
            let mut g = self.guardian.lock().unwrap_or_else(|e| e.into_inner());
            if g.stopping {
                return;
            }
            g.stopping = true;
            self.termination
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reason = Some(reason);
            let children: Vec<_> = g.slots.iter().flatten().cloned().collect();
            let finish = children.is_empty();
            (children, finish)
        };
        for child in &children {
            send_system(child, SystemMsg::Stop);
        }
        if finish {
            self.finish();
        }
    }

    /// Every actor has stopped: stop the threads and open the latch.
    fn finish(&self) {
        for d in self.dispatchers.values() {
            if let Dispatcher::Pool(pool) = d {
                pool.shutdown();
            }
        }
        for (pinned, _) in &self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pinned
        {
            pinned.stop();
        }
        self.scheduler.shutdown();
        #[cfg(feature = "tokio")]
        self.async_runtime.shutdown();
        let mut t = self.termination.lock().unwrap_or_else(|e| e.into_inner());
        t.finished = true;
        drop(t);
        self.terminated.notify_all();
    }
}

/// A handle to an actor system. Cheap to clone.
///
/// ```
/// use troupe::{ActorSystem, DispatcherConfig};
///
/// let system = ActorSystem::builder()
///     .name("example")
///     .threads(2)
///     .dispatcher("single", DispatcherConfig::pool(1).throughput(1))
///     .build()
///     .unwrap();
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
#[derive(Clone)]
pub struct ActorSystem {
    inner: Arc<SystemInner>,
}

impl fmt::Debug for ActorSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActorSystem")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl ActorSystem {
    /// A builder with the defaults: a `"default"` pool with one worker per
    /// core and throughput 5, and a `"pinned"` dispatcher.
    pub fn builder() -> ActorSystemBuilder {
        ActorSystemBuilder::new()
    }

    pub(crate) fn from_inner(inner: Arc<SystemInner>) -> Self {
        ActorSystem { inner }
    }

    /// The shared state, for refs made outside a spawn (external refs).
    pub(crate) fn inner(&self) -> &Arc<SystemInner> {
        &self.inner
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Spawns a top-level actor.
    pub fn spawn<A: Actor>(&self, props: Props<A>) -> Result<ActorRef<A::Msg>, SpawnError> {
        if let Some(name) = &props.name {
            validate_name(name)?;
        }
        let mut g = self
            .inner
            .guardian
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if g.stopping {
            return Err(SpawnError::ShuttingDown);
        }
        if let Some(name) = &props.name {
            if g.names.contains_key(name.as_str()) {
                return Err(SpawnError::NameTaken(name.clone()));
            }
        }
        let slot = match g.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(g.slots.len()).map_err(|_| SpawnError::TooManyActors)?;
                g.slots.push(None);
                slot
            }
        };
        let cell = match ActorCell::create(&self.inner, props, Parent::Guardian { slot }) {
            Ok(cell) => cell,
            Err(e) => {
                g.free.push(slot);
                return Err(e);
            }
        };
        if let Some(name) = cell_name(&cell) {
            g.names.insert(name.into(), cell.id);
        }
        g.slots[slot as usize] = Some(cell.clone());
        g.live += 1;
        drop(g);
        cell.schedule_first();
        Ok(ActorRef { cell })
    }

    /// Stops an actor (children first); its queued messages go to dead letters.
    pub fn stop<M: Send + 'static>(&self, actor: &ActorRef<M>) {
        let cell: Arc<dyn Cell> = actor.cell.clone();
        send_system(&cell, SystemMsg::Stop);
    }

    /// The scheduler, for delayed messages.
    pub fn scheduler(&self) -> &Scheduler {
        &self.inner.scheduler
    }

    /// What the workers of the pool dispatcher `name` (`"default"` for
    /// the default one) did so far: runs, steals, migrations of actors
    /// between workers, parks and wake-ups; `None` if there is no pool
    /// dispatcher of that name. Take two snapshots and
    /// [`since`](crate::DispatcherStats::since) for an interval.
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context, Props};
    ///
    /// struct Sink;
    /// impl Actor for Sink {
    ///     type Msg = u32;
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: u32) {}
    /// }
    ///
    /// let system = ActorSystem::builder().threads(2).build().unwrap();
    /// let before = system.dispatcher_stats("default").unwrap();
    /// let sink = system.spawn(Props::new(|| Sink)).unwrap();
    /// for n in 0..100 {
    ///     sink.tell(n);
    /// }
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// let run = system.dispatcher_stats("default").unwrap().since(&before);
    /// assert!(run.tasks >= 1);
    /// assert!(system.dispatcher_stats("no-such-dispatcher").is_none());
    /// ```
    pub fn dispatcher_stats(&self, name: &str) -> Option<crate::DispatcherStats> {
        match self.inner.dispatchers.get(name)? {
            Dispatcher::Pool(pool) => Some(pool.stats()),
            _ => None,
        }
    }

    /// Dead letters so far: messages dropped because their recipient had
    /// stopped, its bounded mailbox was full, or (across nodes) they could
    /// not be delivered; each kind is a `DeadLetterReason`.
    pub fn dead_letter_count(&self) -> u64 {
        self.inner.dead_letters.count()
    }

    /// The system's receptionist: register actors under typed keys, look
    /// them up, subscribe to listings (see [`crate::receptionist`]). Its
    /// actor is spawned on first use, as a top-level actor of the system.
    pub fn receptionist(&self) -> crate::receptionist::Receptionist {
        let mut slot = self
            .inner
            .receptionist
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = self
                .spawn(Props::new(crate::receptionist::ReceptionistActor::new))
                .ok();
        }
        crate::receptionist::Receptionist {
            actor: slot.clone(),
            system: self.clone(),
        }
    }

    /// The system's event stream: publish/subscribe by message type; the
    /// runtime publishes [`DeadLetter`]s and [`ActorEvent`]s there.
    pub fn event_stream(&self) -> EventStream {
        EventStream {
            inner: self.inner.clone(),
        }
    }

    /// Calls `listener` for every dead letter from now on (on the thread that
    /// found the recipient stopped; keep it short).
    pub fn on_dead_letter(&self, listener: impl Fn(&DeadLetter) + Send + Sync + 'static) {
        self.inner.dead_letters.subscribe(Arc::new(listener));
    }

    /// The number of live top-level actors.
    pub fn top_level_count(&self) -> usize {
        self.inner
            .guardian
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .live
    }

    /// Actor cells that exist and have not been freed: running actors, and
    /// stopped ones still referenced by an [`ActorRef`]. With every ref
    /// dropped after termination it is 0 unless something leaks a cell.
    ///
    /// ```
    /// # use troupe::prelude::*;
    /// # struct Idle;
    /// # impl Actor for Idle { type Msg = (); fn receive(&mut self, _: &mut Context<'_, Self>, _: ()) {} }
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let idle = system.spawn(Props::new(|| Idle)).unwrap();
    /// assert_eq!(system.live_actor_cells(), 1);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// drop(idle);
    /// assert_eq!(system.live_actor_cells(), 0);
    /// ```
    pub fn live_actor_cells(&self) -> usize {
        self.inner.live_cells.load(Ordering::Acquire)
    }

    /// Asks whose promise is still alive: not yet answered, timed out or
    /// dropped at both ends. 0 once every ask of a finished workload has
    /// been awaited (or dropped) and every request handled; more means a
    /// `ReplyTo` is being kept somewhere.
    pub fn pending_asks(&self) -> usize {
        self.inner.live_asks.load(Ordering::Acquire)
    }

    /// Starts a graceful shutdown (see the module docs); returns at once.
    pub fn shutdown(&self) {
        self.inner.begin_shutdown(TerminationReason::Requested);
    }

    /// Whether every actor has stopped and the threads were told to exit.
    pub fn is_terminated(&self) -> bool {
        self.inner
            .termination
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finished
    }

    /// Waits until the system has terminated and all its threads have exited.
    pub fn await_termination(&self) -> Result<TerminationReason, AwaitError> {
        self.await_termination_until(None)
    }

    /// As [`await_termination`](Self::await_termination), giving up after `timeout`.
    pub fn await_termination_timeout(
        &self,
        timeout: Duration,
    ) -> Result<TerminationReason, AwaitError> {
        self.await_termination_until(Some(Instant::now() + timeout))
    }

    fn await_termination_until(
        &self,
        deadline: Option<Instant>,
    ) -> Result<TerminationReason, AwaitError> {
        if on_shared_thread() || on_pinned_thread() {
            return Err(AwaitError::WouldDeadlock);
        }
        let mut t = self
            .inner
            .termination
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while !t.finished {
            t = match deadline {
                None => self
                    .inner
                    .terminated
                    .wait(t)
                    .unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(AwaitError::Timeout);
                    }
                    self.inner
                        .terminated
                        .wait_timeout(t, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        let reason = t.reason.clone().unwrap_or(TerminationReason::Requested);
        drop(t);
        self.join_threads();
        Ok(reason)
    }

    fn join_threads(&self) {
        for d in self.inner.dispatchers.values() {
            if let Dispatcher::Pool(pool) = d {
                pool.join();
            }
        }
        let threads =
            std::mem::take(&mut *self.inner.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, handle) in threads.pinned {
            let _ = handle.join();
        }
        if let Some(handle) = threads.scheduler {
            let _ = handle.join();
        }
    }
}

fn cell_name<A: Actor>(cell: &ActorCell<A>) -> Option<&str> {
    Cell::name(cell)
}

/// Builds an [`ActorSystem`], in code or from a TOML configuration
/// ([`config_str`](Self::config_str), [`config_file`](Self::config_file)).
///
/// The configuration format:
///
/// ```toml
/// name = "trading"
/// scheduler_tick_ms = 1      # timer resolution (default 1 ms)
///
/// [dispatchers.default]      # the dispatcher actors use unless told otherwise
/// threads = 2                # default: the number of cores
/// throughput = 5             # messages per actor per run (default 5)
/// spin = 64                  # backoff rounds an idle worker spins before parking
/// stealing = "adaptive"      # the default; or "eager", or "late" (see `Stealing`)
///
/// [dispatchers.engines]
/// kind = "pool"              # "pool" (work stealing) or "pinned" (a thread per actor)
/// threads = 1
/// throughput = 100
/// ```
///
/// Unknown keys and impossible values (zero threads, zero throughput) are
/// errors that name the offending key.
#[derive(Debug, Clone)]
pub struct ActorSystemBuilder {
    name: String,
    dispatchers: Vec<(String, DispatcherConfig)>,
    /// Tokio dispatchers: name, runtime, throughput.
    #[cfg(feature = "tokio")]
    tokio_dispatchers: Vec<(String, tokio::runtime::Handle, usize)>,
    /// The runtime for actors' futures, if given.
    #[cfg(feature = "tokio")]
    async_runtime: Option<tokio::runtime::Handle>,
    /// Worker threads of the runtime the system starts when none is given.
    #[cfg(feature = "tokio")]
    async_threads: usize,
    scheduler_tick: Duration,
    /// Virtual time for tests, if set.
    manual_clock: Option<crate::scheduler::ManualClock>,
}

impl ActorSystemBuilder {
    fn new() -> Self {
        ActorSystemBuilder {
            name: "troupe".to_string(),
            dispatchers: vec![
                ("default".to_string(), DispatcherConfig::pool_per_core()),
                ("pinned".to_string(), DispatcherConfig::pinned()),
            ],
            #[cfg(feature = "tokio")]
            tokio_dispatchers: Vec::new(),
            #[cfg(feature = "tokio")]
            async_runtime: None,
            #[cfg(feature = "tokio")]
            async_threads: 1,
            scheduler_tick: config::DEFAULT_SCHEDULER_TICK,
            manual_clock: None,
        }
    }

    /// The scheduler's tick: timers fire on tick boundaries, never early and
    /// about one tick late at most (default 1 ms).
    pub fn scheduler_tick(mut self, tick: Duration) -> Self {
        self.scheduler_tick = tick;
        self
    }

    /// Runs the system's scheduler on `clock`: time moves only when the
    /// test advances it, and timers, ask timeouts, receive timeouts and
    /// restart backoff fire then, in order (see
    /// [`ManualClock`](crate::scheduler::ManualClock)). For tests.
    pub fn manual_clock(mut self, clock: &crate::scheduler::ManualClock) -> Self {
        self.manual_clock = Some(clock.clone());
        self
    }

    /// The system's name (used in thread names and logs).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds or replaces a dispatcher.
    pub fn dispatcher(mut self, name: impl Into<String>, config: DispatcherConfig) -> Self {
        let name = name.into();
        self.dispatchers.retain(|(n, _)| *n != name);
        #[cfg(feature = "tokio")]
        self.tokio_dispatchers.retain(|(n, _, _)| *n != name);
        self.dispatchers.push((name, config));
        self
    }

    /// Adds or replaces a dispatcher that runs its actors as tasks on the
    /// tokio runtime of `handle`, each run handling at most `throughput`
    /// messages (feature `tokio`; see `dispatch/tokio_dispatcher.rs`). Name
    /// it `"default"` to run every actor there. For actors that serve async
    /// code on that runtime: their turns and the tasks awaiting their
    /// replies share its threads, with no hand-off between thread pools.
    /// The runtime must outlive the actor system.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
    ///
    /// struct Doubler;
    /// impl Actor for Doubler {
    ///     type Msg = (u64, ReplyTo<u64>);
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, (n, reply): Self::Msg) {
    ///         reply.reply(2 * n);
    ///     }
    /// }
    ///
    /// let runtime = tokio::runtime::Builder::new_multi_thread()
    ///     .worker_threads(2)
    ///     .build()
    ///     .unwrap();
    /// let system = ActorSystem::builder()
    ///     .tokio_dispatcher("default", runtime.handle().clone(), 5)
    ///     .build()
    ///     .unwrap();
    /// let doubler = system.spawn(Props::new(|| Doubler)).unwrap();
    /// let answer = runtime.block_on(doubler.ask(|r| (21, r), Duration::from_secs(5)));
    /// assert_eq!(answer.unwrap(), 42);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    #[cfg(feature = "tokio")]
    pub fn tokio_dispatcher(
        mut self,
        name: impl Into<String>,
        handle: tokio::runtime::Handle,
        throughput: usize,
    ) -> Self {
        let name = name.into();
        self.dispatchers.retain(|(n, _)| *n != name);
        self.tokio_dispatchers.retain(|(n, _, _)| *n != name);
        self.tokio_dispatchers
            .push((name, handle, throughput.max(1)));
        self
    }

    /// The tokio runtime that actors' futures run on
    /// ([`Context::pipe_to_self`](crate::Context::pipe_to_self); feature
    /// `tokio`). Without one, the system starts its own multi-thread
    /// runtime (of [`async_threads`](Self::async_threads) workers) the
    /// first time an actor pipes a future, and shuts it down when the
    /// system terminates. A given runtime must outlive the system.
    #[cfg(feature = "tokio")]
    pub fn async_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.async_runtime = Some(handle);
        self
    }

    /// Worker threads of the async runtime the system starts on first use
    /// when none is given (default 1: actors' futures mostly wait on I/O).
    #[cfg(feature = "tokio")]
    pub fn async_threads(mut self, threads: usize) -> Self {
        self.async_threads = threads;
        self
    }

    fn update_default(mut self, f: impl FnOnce(DispatcherConfig) -> DispatcherConfig) -> Self {
        if let Some((_, d)) = self.dispatchers.iter_mut().find(|(n, _)| n == "default") {
            *d = f(d.clone());
        }
        self
    }

    /// Worker threads of the default dispatcher.
    pub fn threads(self, threads: usize) -> Self {
        self.update_default(|d| DispatcherConfig {
            kind: DispatcherKind::Pool { threads },
            ..d
        })
    }

    /// Throughput budget of the default dispatcher.
    pub fn throughput(self, throughput: usize) -> Self {
        self.update_default(|d| d.throughput(throughput))
    }

    /// Applies a TOML configuration given as text (the format is on
    /// [`ActorSystemBuilder`]).
    pub fn config_str(mut self, text: &str) -> Result<Self, ConfigError> {
        let parsed = config::parse(text, "configuration")?;
        if let Some(name) = parsed.name {
            self.name = name;
        }
        if let Some(tick) = parsed.scheduler_tick {
            self.scheduler_tick = tick;
        }
        for (name, d) in parsed.dispatchers {
            self = self.dispatcher(name, d);
        }
        Ok(self)
    }

    /// Applies a TOML configuration file (the format is on
    /// [`ActorSystemBuilder`]).
    pub fn config_file(mut self, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let parsed = config::load(path.as_ref())?;
        if let Some(name) = parsed.name {
            self.name = name;
        }
        if let Some(tick) = parsed.scheduler_tick {
            self.scheduler_tick = tick;
        }
        for (name, d) in parsed.dispatchers {
            self = self.dispatcher(name, d);
        }
        Ok(self)
    }

    /// Starts the system's threads.
    pub fn build(self) -> Result<ActorSystem, ConfigError> {
        let mut dispatchers = HashMap::new();
        for (name, d) in &self.dispatchers {
            d.validate(name)?;
            let dispatcher = match d.kind {
                DispatcherKind::Pool { threads } => Dispatcher::Pool(
                    Pool::start(PoolSettings {
                        name: format!("{}-{name}", self.name),
                        threads,
                        throughput: d.throughput,
                        spin: d.spin,
                        stealing: d.stealing,
                    })
                    .map_err(|e| ConfigError(format!("cannot start dispatcher {name}: {e}")))?,
                ),
                DispatcherKind::Pinned => Dispatcher::Pinned {
                    throughput: d.throughput,
                    spin: d.spin,
                },
            };
            dispatchers.insert(name.clone(), dispatcher);
        }
        #[cfg(feature = "tokio")]
        for (name, handle, throughput) in self.tokio_dispatchers {
            let exec = crate::dispatch::tokio_dispatcher::TokioExecutor::new(handle, throughput);
            dispatchers.insert(name, Dispatcher::Tokio(Arc::new(exec)));
        }
        #[cfg(feature = "tokio")]
        if self.async_threads == 0 {
            return Err(ConfigError("async_threads must be at least 1".into()));
        }
        if self.scheduler_tick.is_zero() {
            return Err(ConfigError(
                "scheduler_tick must be longer than zero".into(),
            ));
        }
        let (scheduler, scheduler_thread) =
            Scheduler::start(&self.name, self.scheduler_tick, self.manual_clock.as_ref())
                .map_err(|e| ConfigError(format!("cannot start the scheduler: {e}")))?;
        let inner = Arc::new(SystemInner {
            name: self.name,
            scheduler,
            dispatchers,
            next_id: AtomicU64::new(1),
            live_cells: AtomicUsize::new(0),
            live_asks: Arc::new(AtomicUsize::new(0)),
            guardian: Mutex::new(Guardian::default()),
            dead_letters: DeadLetters::default(),
            events: event_stream::Topics::default(),
            receptionist: Mutex::new(None),
            termination: Mutex::new(Termination::default()),
            terminated: Condvar::new(),
            threads: Mutex::new(Threads {
                scheduler: scheduler_thread,
                pinned: Vec::new(),
            }),
            #[cfg(feature = "tokio")]
            async_runtime: async_runtime::AsyncRuntime::new(self.async_runtime, self.async_threads),
        });
        Ok(ActorSystem { inner })
    }
}

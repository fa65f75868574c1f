//! The actor system's facade: [`ActorSystem`]'s API (spawn, stop, the
//! dispatchers' counters, shutdown) and its builder, on top of the kernel
//! (`kernel.rs`: the state every cell shares, the guardian of top-level
//! actors, dead letters, the termination latch), and the shutdown
//! protocol. The event stream (`system/event_stream.rs`) and the
//! receptionist (`receptionist.rs`) are clients of this facade.
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

pub(crate) mod config;
mod event_stream;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::actor::cell::{send_system, ActorCell, Cell, Parent, SystemMsg};
use crate::actor::Actor;
use crate::actor_ref::ActorRef;
use crate::dispatch::on_shared_thread;
use crate::dispatch::pinned::on_pinned_thread;
use crate::dispatch::pool::{Pool, PoolSettings};
use crate::ids::validate_name;
pub use crate::ids::{DeadLetterReason, SpawnError};
#[cfg(feature = "tokio")]
use crate::kernel::AsyncRuntime;
pub use crate::kernel::{ActorEvent, ActorEventKind, ActorSystem, DeadLetter, TerminationReason};
use crate::kernel::{Dispatcher, Kernel, Topics, Waited};
use crate::props::Props;
use crate::scheduler::Scheduler;
pub use config::{ConfigError, DispatcherConfig, DispatcherKind, Stealing, DEFAULT_THROUGHPUT};
pub use event_stream::EventStream;

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

impl ActorSystem {
    /// A builder with the defaults: a `"default"` pool with one worker per
    /// core and throughput 5, and a `"pinned"` dispatcher.
    pub fn builder() -> ActorSystemBuilder {
        ActorSystemBuilder::new()
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
        let cell = self.inner.add_top_level(props, |props, slot| {
            ActorCell::create(&self.inner, props, Parent::Guardian { slot })
        })?;
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
    pub fn dispatcher_stats(&self, name: &str) -> Option<crate::dispatch::DispatcherStats> {
        self.inner.pool(name).map(|pool| pool.stats())
    }

    /// Dead letters so far: messages dropped because their recipient had
    /// stopped, its bounded mailbox was full, or (across nodes) they could
    /// not be delivered; each kind is a `DeadLetterReason`.
    pub fn dead_letter_count(&self) -> u64 {
        self.inner.dead_letter_count()
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
        self.inner.on_dead_letter(Arc::new(listener));
    }

    /// The number of live top-level actors.
    pub fn top_level_count(&self) -> usize {
        self.inner.top_level_count()
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
        self.inner.is_terminated()
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
        match self.inner.wait_terminated(deadline) {
            Waited::TimedOut => Err(AwaitError::Timeout),
            Waited::Terminated(reason) => {
                self.inner.join_threads();
                Ok(reason)
            }
        }
    }
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
        let inner = Arc::new(Kernel::new(
            self.name,
            scheduler,
            scheduler_thread,
            dispatchers,
            Topics::new(
                event_stream::publish_dead_letter,
                event_stream::publish_actor_event,
            ),
            #[cfg(feature = "tokio")]
            AsyncRuntime::new(self.async_runtime, self.async_threads),
        ));
        Ok(ActorSystem { inner })
    }
}

//! The kernel: what every cell, ref and ask shares with its actor system,
//! below all of them. The shared state (the dispatchers, the scheduler,
//! the id counter, the dead-letter office, the event stream's topics, the
//! guardian of the top-level actors and the termination latch), and
//! [`ActorSystem`], the cheap handle to it.
//!
//! A cell holds an `Arc<Kernel>` and asks it for an id, an executor, a
//! clock, a dead letter, or to hear that a top-level actor stopped or
//! failed; it never reaches into `system.rs`, which builds on the kernel:
//! the `ActorSystem` API (spawn, stop, shutdown, the builder) is there,
//! and the event stream's and the receptionist's are in their own modules.
//! The kernel knows a top-level actor only as a [`TopLevel`] (something it
//! can stop), and the event stream only as its topics' storage and the
//! function that publishes a dead letter ([`Topics`]).

#[cfg(feature = "tokio")]
mod async_runtime;
mod dead_letters;
mod topics;

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::dispatch::pinned::PinnedThread;
use crate::dispatch::pool::Pool;
use crate::dispatch::Executor;
use crate::ids::{ActorId, DeadLetterReason, SpawnError};
use crate::props::Props;
use crate::scheduler::Scheduler;
use crate::supervision::{Directive, Failure};
#[cfg(feature = "tokio")]
pub(crate) use async_runtime::AsyncRuntime;
pub use dead_letters::DeadLetter;
use dead_letters::DeadLetters;
pub(crate) use topics::Topics;
pub use topics::{ActorEvent, ActorEventKind};

/// Why the system terminated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminationReason {
    /// [`ActorSystem::shutdown`] was called.
    Requested,
    /// A top-level actor escalated this failure.
    Escalated(Failure),
}

/// A top-level actor, as the guardian keeps it: alive until it stops, and
/// told to stop when the system shuts down.
pub(crate) trait TopLevel: Send + Sync {
    /// The actor's id.
    fn top_level_id(&self) -> ActorId;
    /// The name it was spawned with, if any.
    fn top_level_name(&self) -> Option<&str>;
    /// Sends the actor `Stop` on its system lane.
    fn stop(self: Arc<Self>);
}

pub(crate) enum Dispatcher {
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
    slots: Vec<Option<Arc<dyn TopLevel>>>,
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
pub(crate) struct Kernel {
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
    /// The receptionist's ref once spawned (`receptionist.rs`), erased:
    /// the kernel holds it, only the receptionist knows its type.
    pub(crate) receptionist: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    /// The event stream's topics (`system/event_stream.rs`).
    pub(crate) events: Topics,
    termination: Mutex<Termination>,
    terminated: Condvar,
    threads: Mutex<Threads>,
    /// Where actors' futures run (`Context::pipe_to_self`).
    #[cfg(feature = "tokio")]
    pub(crate) async_runtime: AsyncRuntime,
}

/// What [`Kernel::wait_terminated`] saw.
pub(crate) enum Waited {
    Terminated(TerminationReason),
    TimedOut,
}

impl Kernel {
    pub(crate) fn new(
        name: String,
        scheduler: Scheduler,
        scheduler_thread: Option<JoinHandle<()>>,
        dispatchers: HashMap<String, Dispatcher>,
        events: Topics,
        #[cfg(feature = "tokio")] async_runtime: AsyncRuntime,
    ) -> Self {
        Kernel {
            name,
            scheduler,
            dispatchers,
            next_id: AtomicU64::new(1),
            live_cells: AtomicUsize::new(0),
            live_asks: Arc::new(AtomicUsize::new(0)),
            guardian: Mutex::new(Guardian::default()),
            dead_letters: DeadLetters::default(),
            events,
            receptionist: Mutex::new(None),
            termination: Mutex::new(Termination::default()),
            terminated: Condvar::new(),
            threads: Mutex::new(Threads {
                scheduler: scheduler_thread,
                pinned: Vec::new(),
            }),
            #[cfg(feature = "tokio")]
            async_runtime,
        }
    }

    /// Adds a top-level actor under the guardian: `create` builds it for
    /// its registry slot, under the guardian's lock, so that a shutdown
    /// cannot begin between the check and the registration.
    pub(crate) fn add_top_level<A, C: TopLevel + 'static>(
        &self,
        props: Props<A>,
        create: impl FnOnce(Props<A>, u32) -> Result<Arc<C>, SpawnError>,
    ) -> Result<Arc<C>, SpawnError> {
        let mut g = self.guardian.lock().unwrap_or_else(|e| e.into_inner());
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
        let cell = match create(props, slot) {
            Ok(cell) => cell,
            Err(e) => {
                g.free.push(slot);
                return Err(e);
            }
        };
        if let Some(name) = cell.top_level_name() {
            g.names.insert(name.into(), cell.top_level_id());
        }
        g.slots[slot as usize] = Some(cell.clone());
        g.live += 1;
        Ok(cell)
    }

    /// The number of live top-level actors.
    pub(crate) fn top_level_count(&self) -> usize {
        self.guardian.lock().unwrap_or_else(|e| e.into_inner()).live
    }

    /// The pool dispatcher `name`, if there is one.
    pub(crate) fn pool(&self, name: &str) -> Option<&Arc<Pool>> {
        match self.dispatchers.get(name)? {
            Dispatcher::Pool(pool) => Some(pool),
            _ => None,
        }
    }

    pub(crate) fn dead_letter_count(&self) -> u64 {
        self.dead_letters.count()
    }

    pub(crate) fn on_dead_letter(&self, listener: Arc<dyn Fn(&DeadLetter) + Send + Sync>) {
        self.dead_letters.subscribe(listener);
    }

    /// Whether every actor has stopped and the threads were told to exit.
    pub(crate) fn is_terminated(&self) -> bool {
        self.termination
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finished
    }

    /// Waits for the termination latch, until `deadline` if there is one.
    pub(crate) fn wait_terminated(&self, deadline: Option<Instant>) -> Waited {
        let mut t = self.termination.lock().unwrap_or_else(|e| e.into_inner());
        while !t.finished {
            t = match deadline {
                None => self.terminated.wait(t).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Waited::TimedOut;
                    }
                    self.terminated
                        .wait_timeout(t, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        Waited::Terminated(t.reason.clone().unwrap_or(TerminationReason::Requested))
    }

    /// Joins every thread the system started (after termination).
    pub(crate) fn join_threads(&self) {
        for d in self.dispatchers.values() {
            if let Dispatcher::Pool(pool) = d {
                pool.join();
            }
        }
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, handle) in threads.pinned {
            let _ = handle.join();
        }
        if let Some(handle) = threads.scheduler {
            let _ = handle.join();
        }
    }

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
        self.events.dead_letter(&|| DeadLetter {
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

    pub(crate) fn begin_shutdown(&self, reason: TerminationReason) {
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
            child.clone().stop();
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
    pub(crate) inner: Arc<Kernel>,
}

impl fmt::Debug for ActorSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActorSystem")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl ActorSystem {
    pub(crate) fn from_inner(inner: Arc<Kernel>) -> Self {
        ActorSystem { inner }
    }

    /// The shared state, for refs made outside a spawn (external refs).
    pub(crate) fn inner(&self) -> &Arc<Kernel> {
        &self.inner
    }
}

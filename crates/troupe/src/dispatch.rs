//! Dispatchers: what runs scheduled actors on which threads.
//!
//! A dispatcher is an [`Executor`]: it receives runnable actors ([`Task`]s)
//! and runs each for one batch on one of its threads. Three kinds exist:
//!
//! * [`pool::Pool`]: a fixed set of worker threads with per-worker run queues,
//!   work stealing, a LIFO slot and spin-then-park idling (the default).
//! * [`pinned::PinnedThread`]: one thread per actor, for actors that must own
//!   a thread (blocking IO, a hot loop that should not share its core).
//! * `tokio_dispatcher::TokioExecutor` (feature `tokio`): each run is a task
//!   on a tokio runtime the system is given, for actors serving async code.
//!
//! Dispatchers know nothing about actors: a task is anything [`Runnable`].
//! The actor cell (`actor/cell.rs`) decides how many messages one run handles (the
//! dispatcher's `throughput`) and whether to come back ([`Executor::reschedule`]).
//! A queued [`Task`] does not own its actor; see its docs for why that is sound.

use std::ptr::NonNull;

mod governor;
pub(crate) mod pinned;
pub(crate) mod pool;
pub(crate) mod stealing;
#[cfg(feature = "tokio")]
pub(crate) mod tokio_dispatcher;

/// Whether the current thread is one that many actors share: a pool worker,
/// or a thread running an actor for a tokio dispatcher. A blocking wait
/// here can deadlock the dispatcher (a pinned thread is an actor's own).
pub(crate) fn on_shared_thread() -> bool {
    #[cfg(feature = "tokio")]
    if tokio_dispatcher::on_tokio_dispatcher() {
        return true;
    }
    pool::on_worker_thread()
}

/// Something a dispatcher can run: one batch of an actor's mailbox.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// Runs one batch. The task reschedules itself through its executor if
    /// it still owns work after the batch. Says whether the task has
    /// finished for good (its actor stopped: a thread dedicated to it may
    /// exit, and `me` must not be used again) and how many messages it
    /// handled.
    ///
    /// # Safety
    ///
    /// `me` must be the [`Task`] of `self` (made by [`Task::new`] from the
    /// `Arc` that owns `self`), and the caller must hold the right to run it
    /// (it was handed to an executor and taken off its queue).
    unsafe fn run(&self, me: Task) -> Ran;
}

/// What one run of a task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ran {
    /// The task has finished for good (see [`Runnable::run`]).
    pub(crate) finished: bool,
    /// User messages it handled: the work that the adaptive pool's
    /// governor measures (a task count would favour whichever mode cuts
    /// runs into smaller batches).
    pub(crate) messages: u32,
}

/// A scheduled runnable, as queued in a dispatcher: a *non-owning* pointer.
///
/// Queuing an actor costs no reference-count traffic. This is sound because
/// of the cell's liveness rule (see `actor/cell.rs`): a cell can only be scheduled
/// while its mailbox is open, and an open cell is owned by its parent (or the
/// system's guardian) until its final run, which holds a strong reference of
/// its own until it returns.
#[derive(Clone, Copy)]
pub(crate) struct Task(NonNull<dyn Runnable>);

// SAFETY: a `Task` only ever points to a `Runnable`, which is `Send + Sync`,
// and it is used (run) by one thread at a time: the one that took it off a
// queue.
unsafe impl Send for Task {}

impl Task {
    /// The task of the runnable at `ptr`, which must come from `Arc::as_ptr`
    /// (callers pass `Arc::as_ptr(&arc)`, coerced to `dyn Runnable`), so that
    /// it keeps the provenance of the whole allocation: the runnable rebuilds
    /// a borrowed `Arc` from it (see `ActorCell::run`).
    #[inline]
    pub(crate) fn new(ptr: *const dyn Runnable) -> Task {
        Task(NonNull::new(ptr.cast_mut()).expect("an Arc is never null"))
    }

    /// The raw pointer, for the runnable to rebuild its `Arc`.
    #[inline]
    pub(crate) fn as_ptr(self) -> *const dyn Runnable {
        self.0.as_ptr()
    }

    /// Runs the task.
    ///
    /// # Safety
    ///
    /// The caller must hold the right to run it (see [`Runnable::run`]); the
    /// pointee is alive by the liveness rule above.
    pub(crate) unsafe fn run(self) -> Ran {
        // the pointee is alive: a task is queued only while its cell's
        // mailbox is open, when the cell's parent (or the guardian) still holds
        // it, and the final run keeps a strong reference of its own until it
        // returns. `self` is the pointee's own task, and the caller holds the
        // right to run it (this function's contract).
        // SAFETY: by the argument just above.
        unsafe { self.0.as_ref().run(self) }
    }
}

/// The executor of a cell that is never scheduled (an external ref, a
/// message adapter): it answers every offer with `Request::Owned`, so
/// nothing asks to run it.
pub(crate) struct NeverScheduled;

impl Executor for NeverScheduled {
    fn execute(&self, _task: Task) {
        debug_assert!(false, "a cell without a mailbox was scheduled");
    }
    fn reschedule(&self, _task: Task) {
        debug_assert!(false, "a cell without a mailbox was rescheduled");
    }
    fn throughput(&self) -> usize {
        1
    }
}

/// What a pool dispatcher's workers did, summed over its workers since it
/// started ([`ActorSystem::dispatcher_stats`](crate::ActorSystem::dispatcher_stats)):
/// why a workload is fast or slow on it. Counted always (each worker adds
/// to its own cache line), read with relaxed loads: a snapshot while the
/// pool runs is approximate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatcherStats {
    /// Actor runs (each handles up to `throughput` messages).
    pub tasks: u64,
    /// User messages those runs handled.
    pub messages: u64,
    /// Batches an idle worker took from another worker's queue.
    pub steals: u64,
    /// Runs of an actor on another worker than its previous run.
    pub migrations: u64,
    /// Times a worker parked (went to sleep with nothing to do).
    pub parks: u64,
    /// Parked workers woken up (by workers and by sends from outside).
    pub wakeups: u64,
    /// Times a helping worker handed its work back to the home worker
    /// once the home kept up again (late stealing; see `Stealing::Late`).
    pub givebacks: u64,
    /// Times the adaptive governor tried the other way of stealing
    /// ([`Stealing::Adaptive`](crate::Stealing::Adaptive); 0 otherwise).
    pub probes: u64,
    /// Microseconds the pool spent spreading work (eager stealing) rather
    /// than keeping it local: all of its life under `Eager`, none under
    /// `Late`, what the governor chose under `Adaptive`.
    pub spread_us: u64,
}

impl DispatcherStats {
    /// The counters of every pool dispatcher of every actor system this
    /// process has run, those that ended included: for measuring a piece
    /// of work that builds its own systems.
    pub fn process() -> DispatcherStats {
        pool::process_stats()
    }

    pub(crate) fn plus(&self, other: &DispatcherStats) -> DispatcherStats {
        DispatcherStats {
            tasks: self.tasks + other.tasks,
            steals: self.steals + other.steals,
            migrations: self.migrations + other.migrations,
            parks: self.parks + other.parks,
            wakeups: self.wakeups + other.wakeups,
            spread_us: self.spread_us + other.spread_us,
            givebacks: self.givebacks + other.givebacks,
            probes: self.probes + other.probes,
            messages: self.messages + other.messages,
        }
    }

    /// What happened between `earlier` and `self` (counters only grow).
    pub fn since(&self, earlier: &DispatcherStats) -> DispatcherStats {
        DispatcherStats {
            tasks: self.tasks.saturating_sub(earlier.tasks),
            steals: self.steals.saturating_sub(earlier.steals),
            migrations: self.migrations.saturating_sub(earlier.migrations),
            parks: self.parks.saturating_sub(earlier.parks),
            wakeups: self.wakeups.saturating_sub(earlier.wakeups),
            spread_us: self.spread_us.saturating_sub(earlier.spread_us),
            givebacks: self.givebacks.saturating_sub(earlier.givebacks),
            probes: self.probes.saturating_sub(earlier.probes),
            messages: self.messages.saturating_sub(earlier.messages),
        }
    }
}

/// A dispatcher, as seen by actor cells.
pub(crate) trait Executor: Send + Sync + 'static {
    /// Hands over a task that a send just made runnable. On one of the
    /// dispatcher's own workers this uses the LIFO slot, so that a reply runs
    /// next on the thread that sent the request.
    fn execute(&self, task: Task);

    /// Hands back a task that used up its throughput budget and still has
    /// work: it goes to the back of the queue, behind its peers.
    fn reschedule(&self, task: Task);

    /// Messages an actor may handle per run before yielding its thread.
    fn throughput(&self) -> usize;
}

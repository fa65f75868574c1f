//! Dispatchers: what runs scheduled actors on which threads.
//!
//! A dispatcher is an [`Executor`]: it receives runnable actors ([`Task`]s)
//! and runs each for one batch on one of its threads. Two kinds exist:
//!
//! * [`pool::Pool`]: a fixed set of worker threads with per-worker run queues,
//!   work stealing, a LIFO slot and spin-then-park idling (the default).
//! * [`pinned::PinnedThread`]: one thread per actor, for actors that must own
//!   a thread (blocking IO, a hot loop that should not share its core).
//!
//! Dispatchers know nothing about actors: a task is anything [`Runnable`].
//! The actor cell (`cell.rs`) decides how many messages one run handles (the
//! dispatcher's `throughput`) and whether to come back ([`Executor::reschedule`]).

pub(crate) mod pinned;
pub(crate) mod pool;

use std::sync::Arc;

/// Something a dispatcher can run: one batch of an actor's mailbox.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// Runs one batch. The task reschedules itself through its executor if
    /// it still owns work after the batch.
    fn run(self: Arc<Self>);

    /// Whether the task has finished for good (its actor has stopped), so a
    /// thread dedicated to it may exit.
    fn is_finished(&self) -> bool;
}

/// A runnable actor, as queued in a dispatcher.
pub(crate) type Task = Arc<dyn Runnable>;

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

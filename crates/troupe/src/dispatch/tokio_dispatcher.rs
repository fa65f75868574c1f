//! The tokio dispatcher (feature `tokio`): actors run as tasks on a tokio
//! runtime the system is given, on that runtime's worker threads.
//!
//! # Why
//!
//! An actor that serves async code (an HTTP handler asking it, say) on the
//! work-stealing pool pays two thread hand-offs per request: the handler's
//! tokio thread wakes a pool worker, and the reply wakes the handler's
//! thread again. On a machine with few cores each wake-up costs
//! microseconds. Run on the handler's own runtime, the actor's turn is a
//! tokio task on the same worker, and its reply wakes the handler there
//! (tokio's LIFO slot), with no thread crossing.
//!
//! # Design
//!
//! Every run of an actor (one batch of at most `throughput` messages, as on
//! the pool) is one spawned tokio task that runs the actor's [`Task`] on its
//! first poll. A send that makes an actor runnable spawns it; an actor that
//! used up its budget with work left spawns itself again, behind the tasks
//! already queued. There is no queue of troupe's own: tokio's scheduler
//! orders, steals and parks.
//!
//! # Rules
//!
//! * The runtime must outlive the actor system: a task dropped unpolled (the
//!   runtime shut down first) leaves its actor scheduled forever, and the
//!   system never finishes terminating.
//! * Handlers must not block, as on any dispatcher; `Ask::wait` inside a
//!   handler is refused here as on the pool ([`on_tokio_dispatcher`]).
//! * The cost per run is a task spawn (an allocation): fine for actors that
//!   serve requests, slower than the pool for actors that only message one
//!   another in tight loops.

use std::cell::Cell;

use super::{Executor, Task};

thread_local! {
    /// Set while this thread runs an actor's task for the tokio dispatcher.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is running an actor on a tokio dispatcher
/// (used to refuse blocking waits inside handlers).
pub(crate) fn on_tokio_dispatcher() -> bool {
    RUNNING.with(Cell::get)
}

/// A dispatcher over a tokio runtime (see the module header).
pub(crate) struct TokioExecutor {
    handle: tokio::runtime::Handle,
    throughput: usize,
}

impl TokioExecutor {
    pub(crate) fn new(handle: tokio::runtime::Handle, throughput: usize) -> Self {
        TokioExecutor { handle, throughput }
    }

    fn spawn(&self, task: Task) {
        // The task handle is dropped: the run is detached, as a pool's is.
        drop(self.handle.spawn(async move {
            RUNNING.with(|r| r.set(true));
            // this task was handed to the executor by the send that
            // won the mailbox's `SCHEDULED` bit (or by the owner
            // rescheduling itself), and each hand-over spawns exactly one
            // tokio task, which runs it once: this run holds the right to
            // run it. Its cell is alive by the liveness rule of `Task`.
            // SAFETY: by the argument just above.
            unsafe { task.run() };
            RUNNING.with(|r| r.set(false));
        }));
    }
}

impl Executor for TokioExecutor {
    fn execute(&self, task: Task) {
        self.spawn(task);
    }

    fn reschedule(&self, task: Task) {
        self.spawn(task);
    }

    fn throughput(&self) -> usize {
        self.throughput
    }
}

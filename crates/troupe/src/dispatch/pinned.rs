//! The pinned dispatcher: one dedicated thread per actor.
//!
//! Some actors must own a thread: they block on IO, or run a hot loop that
//! should not share its core with other actors. A [`PinnedThread`] is an
//! executor with exactly one task, its actor. `execute` stores the task in a
//! one-slot mailbox for the thread and wakes it; the thread runs the task,
//! spins briefly (exponential backoff) when there is nothing to do, and then
//! parks: a reply that comes back within the spin costs no wake-up. The thread exits once its actor has
//! finished (stopped for good) or the system shuts down.
//!
//! Handing over needs no queue: the mailbox state word (see `mailbox/state.rs`)
//! guarantees a task is scheduled at most once at a time, so the slot never
//! holds two tasks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle, Thread};

use crossbeam_utils::Backoff;

use super::{Executor, Task};

thread_local! {
    /// Set on pinned threads, for refusing waits that would deadlock them.
    static ON_PINNED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the current thread is a pinned actor's thread.
pub(crate) fn on_pinned_thread() -> bool {
    ON_PINNED.with(|p| p.get())
}

/// An executor owning one thread for one actor.
pub(crate) struct PinnedThread {
    throughput: usize,
    /// Backoff rounds to spin for a task before parking.
    spin: u32,
    /// The scheduled task, set by `execute`/`reschedule`, taken by the thread.
    slot: Mutex<Option<Task>>,
    /// Whether `slot` holds a task: set (release) after filling it, so the
    /// spinning thread polls a flag instead of the lock.
    ready: AtomicBool,
    /// Set by `stop`; read by the thread.
    stopping: AtomicBool,
    /// Written once when the thread starts; read by wakers.
    thread: OnceLock<Thread>,
}

impl PinnedThread {
    /// Starts the thread; it runs tasks handed to the returned executor.
    pub(crate) fn start(
        name: &str,
        throughput: usize,
        spin: u32,
    ) -> std::io::Result<(Arc<PinnedThread>, JoinHandle<()>)> {
        let exec = Arc::new(PinnedThread {
            throughput,
            spin,
            slot: Mutex::new(None),
            ready: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            thread: OnceLock::new(),
        });
        let runner = exec.clone();
        let handle = thread::Builder::new()
            .name(format!("troupe-pinned-{name}"))
            .spawn(move || runner.run_thread())?;
        // The thread handle is known as soon as the spawn returns; storing it
        // here (not only in the thread) means a wake-up can never miss it.
        let _ = exec.thread.set(handle.thread().clone());
        Ok((exec, handle))
    }

    /// Asks the thread to exit when idle (system shutdown).
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    fn run_thread(&self) {
        ON_PINNED.with(|p| p.set(true));
        loop {
            let backoff = Backoff::new();
            for _ in 0..self.spin {
                if self.ready.load(Ordering::Acquire) {
                    break;
                }
                backoff.snooze();
            }
            self.ready.store(false, Ordering::Relaxed);
            let task = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            match task {
                Some(task) => {
                    // the task was handed over to this thread, the only
                    // one that runs it.
                    // SAFETY: by the argument just above.
                    if unsafe { task.run() }.finished {
                        return;
                    }
                }
                None if self.stopping.load(Ordering::SeqCst) => return,
                // A spurious wake-up is harmless: the loop looks again.
                None => thread::park(),
            }
        }
    }

    fn hand_over(&self, task: Task) {
        let previous = self
            .slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task);
        debug_assert!(previous.is_none(), "a pinned task was scheduled twice");
        self.ready.store(true, Ordering::Release);
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

impl Executor for PinnedThread {
    fn execute(&self, task: Task) {
        self.hand_over(task);
    }

    fn reschedule(&self, task: Task) {
        self.hand_over(task);
    }

    fn throughput(&self) -> usize {
        self.throughput
    }
}

//! The work-stealing worker pool: the default dispatcher.
//!
//! # Design
//!
//! Each worker owns a FIFO run queue (a Chase-Lev deque from
//! `crossbeam-deque`) and a one-task **LIFO slot**. Tasks made runnable by a
//! send from a worker of the same pool go into that worker's LIFO slot, so a
//! request's reply runs next, on the same thread, with a warm cache (the
//! pattern of Go's and tokio's schedulers). A task displaced from the slot
//! goes to the worker's queue, where idle workers can steal it. Sends from
//! other threads go to the shared injector queue.
//!
//! A worker looks for work in this order: the LIFO slot (at most
//! [`MAX_LIFO_STREAK`] times in a row, so two actors bouncing messages cannot
//! starve the queue), its own queue, the injector, the other workers' queues;
//! and every [`INJECTOR_INTERVAL`] tasks the injector first, so a worker kept
//! busy by its own actors still picks up work sent from outside the pool.
//! Having found nothing it spins for `spin` rounds of exponential backoff, then
//! parks.
//!
//! # Parking protocol (no lost wake-ups)
//!
//! * A worker going to sleep registers in `sleepers` (under its mutex) and
//!   bumps `num_sleepers`, then issues a `SeqCst` fence and looks for work once
//!   more. Only if it still finds none does it park, until its `notified` flag
//!   is set.
//! * A thread that adds a stealable task issues a `SeqCst` fence and then reads
//!   `num_sleepers`; if it is non-zero it pops one sleeper, sets its flag and
//!   unparks it.
//! * The two fences order "register, then look" against "push, then count":
//!   either the sleeper's last look sees the task or the pusher sees the
//!   sleeper. Tasks placed in a LIFO slot wake nobody: the worker that owns
//!   the slot is awake, running the sender.
//!
//! # Shutdown
//!
//! `shutdown` sets a flag and wakes every worker; a worker exits when it finds
//! no work and sees the flag. The actor system calls it only after every actor
//! on the pool has stopped, so no task is lost; `join` waits for the threads.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle, Thread};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::Backoff;

use super::{Executor, Task};

/// Consecutive runs from the LIFO slot before the worker looks at its queue.
pub(crate) const MAX_LIFO_STREAK: u32 = 64;

/// Every this many tasks a worker takes from the injector first, even when
/// its own slot and queue have work: actors that keep messaging each other
/// on one worker would otherwise starve everything sent from outside the
/// pool. Odd, so it does not fall into step with [`MAX_LIFO_STREAK`].
pub(crate) const INJECTOR_INTERVAL: u32 = 61;

/// Settings of one pool.
#[derive(Debug, Clone)]
pub(crate) struct PoolSettings {
    pub(crate) name: String,
    pub(crate) threads: usize,
    pub(crate) throughput: usize,
    pub(crate) spin: u32,
}

/// One worker's parking spot.
struct Parker {
    /// Set by a notifier (release), consumed by the worker (acquire).
    notified: AtomicBool,
    /// Written once by the worker thread at start, read by notifiers.
    thread: OnceLock<Thread>,
}

/// A pool of worker threads (see the module header).
pub(crate) struct Pool {
    settings: PoolSettings,
    /// Any thread pushes; workers steal.
    injector: Injector<Task>,
    /// One per worker, fixed at construction; read by every worker.
    stealers: Box<[Stealer<Task>]>,
    /// Indices of parked (or parking) workers; guarded by its mutex.
    sleepers: Mutex<Vec<usize>>,
    /// `sleepers.len()`, readable without the lock (see the parking protocol).
    num_sleepers: AtomicUsize,
    parkers: Box<[Parker]>,
    /// Set once by `shutdown`; read by workers.
    shutdown: AtomicBool,
    /// Join handles, taken by `join`.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The worker-thread view of its pool, reachable through [`CURRENT`].
struct Local {
    pool: *const Pool,
    index: usize,
    queue: Worker<Task>,
    lifo: Cell<Option<Task>>,
}

thread_local! {
    /// The `Local` of the worker running on this thread, or null. Set when a
    /// worker thread starts, cleared before its `Local` is dropped.
    static CURRENT: Cell<*const Local> = const { Cell::new(ptr::null()) };
}

/// Runs `f` with this thread's `Local` if it is a worker of `pool`.
#[inline]
fn with_local<R>(pool: &Pool, f: impl FnOnce(Option<&Local>) -> R) -> R {
    CURRENT.with(|current| {
        let p = current.get();
        if p.is_null() {
            return f(None);
        }
        // `CURRENT` is non-null only while `run_worker` is on the stack
        // of this very thread with its `Local` alive (it clears the pointer
        // before returning), and `Local` is only accessed through `&`.
        // SAFETY: by the argument just above.
        let local = unsafe { &*p };
        if ptr::eq(local.pool, pool) {
            f(Some(local))
        } else {
            f(None)
        }
    })
}

/// Whether the current thread is a worker of any pool (used to refuse
/// blocking waits that would deadlock a worker).
pub(crate) fn on_worker_thread() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

impl Pool {
    /// Starts a pool and its threads.
    pub(crate) fn start(settings: PoolSettings) -> std::io::Result<Arc<Pool>> {
        let threads = settings.threads.max(1);
        let queues: Vec<Worker<Task>> = (0..threads).map(|_| Worker::new_fifo()).collect();
        let pool = Arc::new(Pool {
            injector: Injector::new(),
            stealers: queues.iter().map(Worker::stealer).collect(),
            sleepers: Mutex::new(Vec::with_capacity(threads)),
            num_sleepers: AtomicUsize::new(0),
            parkers: (0..threads)
                .map(|_| Parker {
                    notified: AtomicBool::new(false),
                    thread: OnceLock::new(),
                })
                .collect(),
            shutdown: AtomicBool::new(false),
            threads: Mutex::new(Vec::with_capacity(threads)),
            settings,
        });
        for (index, queue) in queues.into_iter().enumerate() {
            let worker_pool = pool.clone();
            let handle = thread::Builder::new()
                .name(format!("troupe-{}-{}", pool.settings.name, index))
                .spawn(move || run_worker(worker_pool, index, queue))?;
            pool.threads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(handle);
        }
        Ok(pool)
    }

    /// Asks every worker to exit once it finds no work.
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for parker in self.parkers.iter() {
            parker.notified.store(true, Ordering::Release);
            if let Some(t) = parker.thread.get() {
                t.unpark();
            }
        }
    }

    /// Waits for the worker threads to exit (after `shutdown`).
    pub(crate) fn join(&self) {
        let handles = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            // A worker panics only if a runtime invariant broke; report it
            // rather than hiding it.
            if h.join().is_err() {
                tracing::error!(pool = %self.settings.name, "a worker thread panicked");
            }
        }
    }

    /// Wakes one parked worker, if any (see the parking protocol).
    #[inline]
    fn notify_one(&self) {
        fence(Ordering::SeqCst);
        if self.num_sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        let index = {
            let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            let Some(index) = sleepers.pop() else { return };
            self.num_sleepers.fetch_sub(1, Ordering::Relaxed);
            index
        };
        let parker = &self.parkers[index];
        parker.notified.store(true, Ordering::Release);
        if let Some(t) = parker.thread.get() {
            t.unpark();
        }
    }

    /// Whether any queue a worker could take from is non-empty.
    fn has_stealable_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    fn push_stealable(&self, task: Task, local: Option<&Local>) {
        match local {
            Some(local) => local.queue.push(task),
            None => self.injector.push(task),
        }
        self.notify_one();
    }
}

impl Executor for Pool {
    #[inline]
    fn execute(&self, task: Task) {
        with_local(self, |local| match local {
            Some(local) => {
                if let Some(displaced) = local.lifo.replace(Some(task)) {
                    self.push_stealable(displaced, Some(local));
                }
            }
            None => self.push_stealable(task, None),
        })
    }

    fn reschedule(&self, task: Task) {
        with_local(self, |local| self.push_stealable(task, local))
    }

    #[inline]
    fn throughput(&self) -> usize {
        self.settings.throughput
    }
}

fn run_worker(pool: Arc<Pool>, index: usize, queue: Worker<Task>) {
    let _ = pool.parkers[index].thread.set(thread::current());
    let local = Local {
        pool: Arc::as_ptr(&pool),
        index,
        queue,
        lifo: Cell::new(None),
    };
    CURRENT.with(|c| c.set(&local));
    let mut turn = Turn::default();
    loop {
        if let Some(task) = next_task(&pool, &local, &mut turn) {
            // the task was handed to this pool and taken off its queues
            // by this worker alone, which gives the right to run it.
            // SAFETY: by the argument just above.
            unsafe { task.run() };
            continue;
        }
        if let Some(task) = spin_for_task(&pool, &local) {
            turn.streak = 0;
            // `spin_for_task` took the task off this pool's queues for
            // this worker alone, which gives the right to run it.
            // SAFETY: by the argument just above.
            unsafe { task.run() };
            continue;
        }
        if pool.shutdown.load(Ordering::SeqCst) {
            break;
        }
        park(&pool, &local);
    }
    CURRENT.with(|c| c.set(ptr::null()));
    // No task can be left: the pool shuts down only after every actor on it
    // has stopped. Tasks do not own their cells, so there is nothing to drop.
}

/// A worker's fairness counters.
#[derive(Default)]
struct Turn {
    /// Consecutive tasks taken from the LIFO slot.
    streak: u32,
    /// Tasks taken since the injector last went first.
    since_injector: u32,
}

/// The next task by the worker's priority order (see the module header).
#[inline]
fn next_task(pool: &Pool, local: &Local, turn: &mut Turn) -> Option<Task> {
    turn.since_injector += 1;
    if turn.since_injector >= INJECTOR_INTERVAL {
        turn.since_injector = 0;
        // The slot keeps its task: it runs next, or is displaced into the
        // queue (and so stays stealable) if this task sends first.
        if let Some(task) = take_injected(pool) {
            return Some(task);
        }
    }
    if let Some(task) = local.lifo.take() {
        if turn.streak < MAX_LIFO_STREAK {
            turn.streak += 1;
            return Some(task);
        }
        // Fairness: let the queue go first this time.
        local.queue.push(task);
        pool.notify_one();
    }
    turn.streak = 0;
    local.queue.pop().or_else(|| steal(pool, local))
}

/// One task from the injector, if it has any.
fn take_injected(pool: &Pool) -> Option<Task> {
    loop {
        match pool.injector.steal() {
            Steal::Success(task) => return Some(task),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}

/// Takes a batch from the injector or another worker, returning one task.
fn steal(pool: &Pool, local: &Local) -> Option<Task> {
    loop {
        let mut retry = false;
        match pool.injector.steal_batch_and_pop(&local.queue) {
            Steal::Success(task) => return Some(task),
            Steal::Retry => retry = true,
            Steal::Empty => {}
        }
        let n = pool.stealers.len();
        for k in 1..n {
            let victim = (local.index + k) % n;
            match pool.stealers[victim].steal_batch_and_pop(&local.queue) {
                Steal::Success(task) => return Some(task),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
        }
        if !retry {
            return None;
        }
    }
}

/// Spins with exponential backoff looking for work before parking.
fn spin_for_task(pool: &Pool, local: &Local) -> Option<Task> {
    let backoff = Backoff::new();
    for _ in 0..pool.settings.spin {
        backoff.snooze();
        if let Some(task) = local.lifo.take().or_else(|| steal(pool, local)) {
            return Some(task);
        }
        if pool.shutdown.load(Ordering::Relaxed) {
            return None;
        }
    }
    None
}

/// Parks the worker until notified (see the parking protocol).
fn park(pool: &Pool, local: &Local) {
    let parker = &pool.parkers[local.index];
    {
        let mut sleepers = pool.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        sleepers.push(local.index);
        pool.num_sleepers.fetch_add(1, Ordering::Relaxed);
    }
    fence(Ordering::SeqCst);
    if pool.has_stealable_work() || pool.shutdown.load(Ordering::SeqCst) {
        let mut sleepers = pool.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pos) = sleepers.iter().position(|&i| i == local.index) {
            sleepers.swap_remove(pos);
            pool.num_sleepers.fetch_sub(1, Ordering::Relaxed);
        } else {
            // A notifier picked us meanwhile; consume its notification.
            drop(sleepers);
            while !parker.notified.swap(false, Ordering::Acquire) {
                thread::park();
            }
        }
        return;
    }
    while !parker.notified.swap(false, Ordering::Acquire) {
        thread::park();
    }
}

//! The scheduler: runs actions and delivers messages at a later time, on one
//! driver thread per actor system.
//!
//! # Design
//!
//! Pending entries sit in a binary heap ordered by deadline (then by
//! insertion order, so entries with equal deadlines fire in the order they
//! were scheduled). The driver thread sleeps on a condition variable until the
//! earliest deadline or until an earlier entry is inserted. Cancellation is
//! lazy: [`Cancellable::cancel`] sets a flag and the driver skips the entry
//! when its deadline comes.
//!
//! Messages are delivered through the ordinary `tell` path, so a timer
//! message is ordered after everything its sender told the target before
//! scheduling it, and goes to dead letters if the target has stopped.
//!
//! # Precision
//!
//! Never early: an entry fires at or after its deadline. Lateness is the
//! driver's wake-up latency (typically tens of microseconds) plus the time to
//! run the entries due before it.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::actor_ref::ActorRef;

type Action = Box<dyn FnOnce() + Send>;

struct Entry {
    deadline: Instant,
    seq: u64,
    cancelled: Arc<AtomicBool>,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline && self.seq == other.seq
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    // Reversed, so that `BinaryHeap` (a max-heap) pops the earliest entry.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

struct Queue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    shutdown: bool,
}

struct Inner {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// A handle that cancels a scheduled entry.
#[derive(Debug, Clone)]
pub struct Cancellable {
    cancelled: Arc<AtomicBool>,
}

impl Cancellable {
    /// Cancels the entry; it will not fire if it has not yet. Idempotent.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

/// The system's scheduler (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct Scheduler {
    inner: Arc<Inner>,
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Scheduler")
    }
}

impl Scheduler {
    /// Starts the driver thread.
    pub(crate) fn start(system_name: &str) -> std::io::Result<(Scheduler, JoinHandle<()>)> {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                heap: BinaryHeap::new(),
                next_seq: 0,
                shutdown: false,
            }),
            wake: Condvar::new(),
        });
        let driver = inner.clone();
        let handle = thread::Builder::new()
            .name(format!("troupe-{system_name}-scheduler"))
            .spawn(move || drive(&driver))?;
        Ok((Scheduler { inner }, handle))
    }

    /// Runs `action` on the driver thread at `deadline` (or later). The action
    /// must be short: it delays every entry due after it.
    pub(crate) fn run_at(
        &self,
        deadline: Instant,
        action: impl FnOnce() + Send + 'static,
    ) -> Cancellable {
        let handle = Cancellable {
            cancelled: Arc::new(AtomicBool::new(false)),
        };
        self.insert(deadline, &handle, Box::new(action));
        handle
    }

    /// Queues `action` at `deadline` under an existing handle (repeating
    /// entries share one handle across their repetitions).
    fn insert(&self, deadline: Instant, handle: &Cancellable, action: Action) {
        let mut queue = self.inner.queue.lock().unwrap_or_else(|e| e.into_inner());
        if queue.shutdown {
            return;
        }
        let seq = queue.next_seq;
        queue.next_seq += 1;
        let earliest = queue.heap.peek().is_none_or(|top| deadline < top.deadline);
        queue.heap.push(Entry {
            deadline,
            seq,
            cancelled: handle.cancelled.clone(),
            action,
        });
        drop(queue);
        if earliest {
            self.inner.wake.notify_one();
        }
    }

    /// Runs `fire` at `first`, then every `period`: measured from the previous
    /// deadline (`fixed_rate`, catching up after a delay) or from the time the
    /// previous firing ran. `fire` returns false to stop repeating.
    fn repeat(
        &self,
        first: Instant,
        period: Duration,
        fixed_rate: bool,
        handle: Cancellable,
        fire: Arc<dyn Fn() -> bool + Send + Sync>,
    ) {
        let scheduler = self.clone();
        let next_handle = handle.clone();
        let action = move || {
            if !fire() || next_handle.is_cancelled() {
                return;
            }
            let next = if fixed_rate {
                first + period
            } else {
                Instant::now() + period
            };
            scheduler.repeat(next, period, fixed_rate, next_handle, fire);
        };
        self.insert(first, &handle, Box::new(action));
    }

    /// Runs `fire` at `first` and then every `period` (fixed rate) until it
    /// returns false or the handle is cancelled.
    pub(crate) fn every(
        &self,
        first: Instant,
        period: Duration,
        fire: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Cancellable {
        let handle = Cancellable {
            cancelled: Arc::new(AtomicBool::new(false)),
        };
        let period = period.max(Duration::from_micros(1));
        self.repeat(first, period, true, handle.clone(), fire);
        handle
    }

    /// Delivers a clone of `msg` to `target` after `initial`, then every
    /// `interval` after the previous *deadline* (late firings catch up).
    /// Stops when cancelled or when the target has stopped.
    pub fn schedule_at_fixed_rate<M: Clone + Send + Sync + 'static>(
        &self,
        initial: Duration,
        interval: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        self.schedule_repeating(initial, interval, true, target, msg)
    }

    /// Delivers a clone of `msg` to `target` after `initial`, then `delay`
    /// after each previous *delivery*. Stops when cancelled or when the
    /// target has stopped.
    pub fn schedule_with_fixed_delay<M: Clone + Send + Sync + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        self.schedule_repeating(initial, delay, false, target, msg)
    }

    fn schedule_repeating<M: Clone + Send + Sync + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        fixed_rate: bool,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        let handle = Cancellable {
            cancelled: Arc::new(AtomicBool::new(false)),
        };
        let target = target.clone();
        // A zero period would fire in a busy loop; one tick of the clock is
        // the least that makes sense.
        let period = period.max(Duration::from_micros(1));
        self.repeat(
            Instant::now() + initial,
            period,
            fixed_rate,
            handle.clone(),
            Arc::new(move || {
                if target.is_terminated() {
                    return false;
                }
                target.tell(msg.clone());
                true
            }),
        );
        handle
    }

    /// Delivers `msg` to `target` after `delay`, through the ordinary `tell`
    /// path. The returned handle cancels the delivery.
    pub fn schedule_once<M: Send + 'static>(
        &self,
        delay: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        let target = target.clone();
        self.run_at(Instant::now() + delay, move || target.tell(msg))
    }

    /// Number of entries not yet fired or skipped (cancelled ones included
    /// until their deadline).
    pub fn pending(&self) -> usize {
        self.inner
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .heap
            .len()
    }

    /// Stops the driver; entries not yet due are dropped.
    pub(crate) fn shutdown(&self) {
        let mut queue = self.inner.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.shutdown = true;
        queue.heap.clear();
        drop(queue);
        self.inner.wake.notify_all();
    }
}

fn drive(inner: &Inner) {
    // Due entries are taken out in batches under one lock hold and run with
    // the lock released, so that inserting threads are not held up by the
    // actions and the lock is not taken twice per entry.
    let mut due: Vec<Entry> = Vec::new();
    let mut queue = inner.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if queue.shutdown {
            return;
        }
        let now = Instant::now();
        while due.len() < 4096 && queue.heap.peek().is_some_and(|top| top.deadline <= now) {
            due.push(queue.heap.pop().expect("peeked"));
        }
        if !due.is_empty() {
            drop(queue);
            for entry in due.drain(..) {
                if !entry.cancelled.load(Ordering::Acquire) {
                    (entry.action)();
                }
            }
            queue = inner.queue.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        queue = match queue.heap.peek() {
            Some(top) => {
                let wait = top.deadline - now;
                inner
                    .wake
                    .wait_timeout(queue, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => inner.wake.wait(queue).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

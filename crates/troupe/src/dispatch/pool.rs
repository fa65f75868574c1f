//! The worker pool: the default dispatcher. Its idle workers steal either
//! eagerly ([`Stealing::Eager`](Stealing)) or late, locality first
//! ([`Stealing::Late`](Stealing)), or whichever of the two a
//! governor thread measures to be faster
//! ([`Stealing::Adaptive`](Stealing), the default; see
//! `governor.rs`). The way of stealing is one flag (`late`) that any code
//! path reads afresh, so the governor can flip it at any moment.
//!
//! # Design
//!
//! Each worker owns a FIFO run queue (a Chase-Lev deque from
//! `crossbeam-deque`) and a one-task **LIFO slot**. Tasks made runnable by a
//! send from a worker of the same pool go into that worker's LIFO slot, so a
//! request's reply runs next, on the same thread, with a warm cache (the
//! pattern of Go's and tokio's schedulers). A task displaced from the slot,
//! or rescheduled after its throughput budget, goes to the worker's own
//! queue. Sends from other threads go to the shared injector queue.
//!
//! **Eager stealing**: a task pushed into a worker's queue
//! wakes a sleeper, and an idle worker takes batches from the others'
//! queues whenever it has nothing of its own; the slot is never stolen.
//!
//! **Late stealing, locality first.** A worker's queue is its own: actors that message
//! each other stay on the worker they run on, whose cache holds them, and
//! another worker takes from that queue only when the owner is not keeping
//! up. Taking an actor to another CPU costs a cache-line transfer per
//! touched line (a few hundred nanoseconds on some machines), far more than
//! running a small handler, so an idle worker does not pounce on every task
//! displaced into a queue (which made two workers five times slower than
//! one on chameneos). Instead at most one idle worker **watches**
//! ([`watch`]): every [`GRACE`] it looks at the other workers' queues and
//! their progress counters, and steals half of a queue (a batch, not one
//! task) only if that queue was already non-empty a grace period ago and
//! now holds more tasks than its owner ran in that period: then its tasks
//! wait longer than a grace period (the owner is stuck in a long handler,
//! or has more work than one worker keeps up with: real parallelism). A
//! queue of a few small tasks, which its owner empties many times per
//! period, is never taken: its actors stay where they are. The watcher sleeps between
//! looks (no spinning), and parks for good after [`IDLE_WATCH`] without
//! seeing a queued task.
//!
//! A worker looks for work in this order: the LIFO slot (at most
//! [`MAX_LIFO_STREAK`] times in a row, so two actors bouncing messages cannot
//! starve the queue), its own queue, the injector; and every
//! [`INJECTOR_INTERVAL`] tasks the injector first, so a worker kept busy by
//! its own actors still picks up work sent from outside the pool. Having
//! found nothing it spins for `spin` rounds of exponential backoff on its
//! slot and the injector, then watches (if nobody does), then parks.
//!
//! # Parking protocol (no lost wake-ups)
//!
//! A task in a worker's own queue needs no wake-up to run: its owner is
//! awake (a worker parks only with an empty slot and queue), so waking
//! another worker for it is about parallelism, never liveness. Only the
//! injector needs the protocol (under eager stealing, pushes into a
//! worker's queue follow it too, and a parking worker looks at every
//! queue):
//!
//! * A worker going to sleep registers in `sleepers` (under its mutex) and
//!   bumps `num_sleepers`, then issues a `SeqCst` fence and looks at the
//!   injector once more. Only if it still finds nothing does it park, until
//!   its `notified` flag is set.
//! * A thread that pushes into the injector issues a `SeqCst` fence and then
//!   reads `num_sleepers`; if it is non-zero it pops one sleeper, sets its
//!   flag and unparks it. (If a watcher is awake it is unparked instead, as
//!   a hint: it looks at the injector first, and when it stops watching it
//!   parks through this same protocol.)
//! * The two fences order "register, then look" against "push, then count":
//!   either the sleeper's last look sees the task or the pusher sees the
//!   sleeper.
//!
//! Under late stealing, a push into a worker's own queue wakes a sleeper
//! only when nobody watches (two relaxed loads on that path), so that one worker keeps an
//! eye on the queues; the watcher, when it steals, hands the watch on to
//! another sleeper if queues are still non-empty.
//!
//! # Counters
//!
//! Every worker counts the tasks it ran, the batches it stole, how often it
//! parked and how many sleepers it woke, in its own cache line (relaxed
//! adds by the owner only); [`Pool::stats`] sums them.
//!
//! # Shutdown
//!
//! `shutdown` sets a flag and wakes every worker; a worker exits when it finds
//! no work and sees the flag. The actor system calls it only after every actor
//! on the pool has stopped, so no task is lost; `join` waits for the threads.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::{Backoff, CachePadded};

mod cpu_clock;
mod home;
#[cfg(test)]
mod models;

use cpu_clock::CpuClock;

use super::governor::{self, Governed, Mode};
use super::stealing::Stealing;
use super::{DispatcherStats, Executor, Task};

/// Consecutive runs from the LIFO slot before the worker looks at its queue.
pub(crate) const MAX_LIFO_STREAK: u32 = 64;

/// Every this many tasks a worker takes from the injector first, even when
/// its own slot and queue have work: actors that keep messaging each other
/// on one worker would otherwise starve everything sent from outside the
/// pool. Odd, so it does not fall into step with [`MAX_LIFO_STREAK`].
pub(crate) const INJECTOR_INTERVAL: u32 = 61;

/// How long a queued task waits before an idle worker may take it from its
/// owner: the watcher's look interval (a timed park, so in practice a bit
/// longer). Go's scheduler gives a `runnext` task about 3 us; a whole
/// queue gets more here, since a migration costs every actor's cache lines.
pub(crate) const GRACE: Duration = Duration::from_micros(50);

/// How long a watcher watches without seeing any queued task before it
/// parks for good (a busy pool keeps its watcher; an idle one sleeps).
pub(crate) const IDLE_WATCH: Duration = Duration::from_millis(1);

/// Settings of one pool.
#[derive(Debug, Clone)]
pub(crate) struct PoolSettings {
    pub(crate) name: String,
    pub(crate) threads: usize,
    pub(crate) throughput: usize,
    pub(crate) spin: u32,
    pub(crate) stealing: Stealing,
}

/// One worker's parking spot.
struct Parker {
    /// Set by a notifier (release), consumed by the worker (acquire).
    notified: AtomicBool,
    /// Written once by the worker thread at start, read by notifiers.
    thread: OnceLock<Thread>,
    /// The worker thread's CPU clock, set by the worker at start where the
    /// platform has one; read by the governor.
    cpu: OnceLock<CpuClock>,
}

/// Every pool of the process: the live ones, and the counts of those that
/// ended (see [`process_stats`]).
struct Registry {
    live: Vec<std::sync::Weak<Pool>>,
    ended: DispatcherStats,
}

static PROCESS: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    ended: DispatcherStats {
        tasks: 0,
        messages: 0,
        steals: 0,
        migrations: 0,
        parks: 0,
        wakeups: 0,
        probes: 0,
        spread_us: 0,
        givebacks: 0,
    },
});

/// The counters of every pool dispatcher this process has run, of every
/// actor system, the ended ones included: what a benchmark reads around a
/// run without holding the systems it made.
pub(crate) fn process_stats() -> DispatcherStats {
    let all = PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    all.live
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .fold(all.ended, |sum, pool| sum.plus(&pool.counted()))
}

impl Drop for Pool {
    fn drop(&mut self) {
        let counted = self.counted();
        let mut all = PROCESS.lock().unwrap_or_else(|e| e.into_inner());
        all.ended = all.ended.plus(&counted);
    }
}

/// One worker's counters, in a cache line of its own (written by the
/// worker alone, read by `stats` and by the watcher).
#[derive(Default)]
struct Counters {
    /// Tasks run: the progress the watcher compares.
    runs: AtomicU64,
    /// Messages those tasks handled: the work the governor measures.
    messages: AtomicU64,
    steals: AtomicU64,
    /// Runs of an actor that last ran on another worker.
    migrations: AtomicU64,
    parks: AtomicU64,
    wakeups: AtomicU64,
    /// Times this worker, helping, handed its work back to the home.
    givebacks: AtomicU64,
}

impl Counters {
    /// Adds one (owner only, so a load and a store, no locked add).
    #[inline]
    fn bump(counter: &AtomicU64) {
        Self::add(counter, 1);
    }

    /// Adds `n` (owner only).
    #[inline]
    fn add(counter: &AtomicU64, n: u64) {
        counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// This worker's counters as stats.
    #[cfg(feature = "metrics")]
    fn stats(&self) -> DispatcherStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DispatcherStats {
            tasks: get(&self.runs),
            messages: get(&self.messages),
            steals: get(&self.steals),
            migrations: get(&self.migrations),
            parks: get(&self.parks),
            wakeups: get(&self.wakeups),
            probes: 0,
            spread_us: 0,
            givebacks: get(&self.givebacks),
        }
    }

    /// Publishes this worker's counters (feature `metrics`; see
    /// `runtime_metrics::dispatcher_worker`).
    #[cfg(feature = "metrics")]
    fn publish(&self, pool: &str, worker: usize) {
        let stats = self.stats();
        crate::runtime_metrics::dispatcher_worker(
            pool,
            worker,
            crate::runtime_metrics::WorkerCounts {
                runs: stats.tasks,
                messages: stats.messages,
                steals: stats.steals,
                migrations: stats.migrations,
                parks: stats.parks,
                wakeups: stats.wakeups,
            },
        );
    }
}

/// A pool of worker threads (see the module header).
pub(crate) struct Pool {
    /// Whether stealing is late (locality first) now: fixed under `Late`
    /// and `Eager`, set by the governor under `Adaptive`. Read (relaxed)
    /// on every push; a change needs no ordering, since no task depends on
    /// it to be run (see the parking protocol).
    late: AtomicBool,
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
    /// Per worker, by index.
    counters: Box<[CachePadded<Counters>]>,
    /// Wake-ups sent from threads outside the pool (injector pushes).
    outside_wakeups: AtomicU64,
    /// The watching worker's index plus one, or 0 when nobody watches.
    watcher: AtomicUsize,
    /// Which worker is the home (see `home.rs`).
    home: home::HomeToken,
    /// Set once by `shutdown`; read by workers.
    shutdown: AtomicBool,
    /// The governor's thread (under `Adaptive` with more than one worker),
    /// woken by `shutdown`.
    governor: OnceLock<Thread>,
    /// Trials the governor made, and the microseconds the pool spread.
    probes: AtomicU64,
    spread_us: AtomicU64,
    /// When the pool started: an eager pool spreads all its life.
    started: Instant,
    /// Join handles, taken by `join`.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The worker-thread view of its pool, reachable through [`CURRENT`].
struct Local {
    /// The worker's pool (`run_worker` holds it for the worker's life).
    pool: Arc<Pool>,
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
    with_current(|local| f(local.filter(|l| ptr::eq(Arc::as_ptr(&l.pool), pool))))
}

/// Runs `f` with this thread's `Local` if it is a worker of any pool.
#[inline]
fn with_current<R>(f: impl FnOnce(Option<&Local>) -> R) -> R {
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
        f(Some(local))
    })
}

/// Called by a cell at the start of each run with the index of the worker
/// it last ran on (`u32::MAX` at first): counts a migration when this is
/// another worker of the pool, and records this one. Off the pools (a
/// pinned thread, a tokio task) it does nothing.
#[inline]
pub(crate) fn note_run(last: &mut u32) {
    with_current(|local| {
        let Some(local) = local else { return };
        let index = local.index as u32;
        if *last != index {
            if *last != u32::MAX {
                Counters::bump(&local.pool.counters[local.index].migrations);
            }
            *last = index;
        }
    });
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
            // `Adaptive` starts local (see `governor`).
            late: AtomicBool::new(settings.stealing != Stealing::Eager),
            injector: Injector::new(),
            stealers: queues.iter().map(Worker::stealer).collect(),
            sleepers: Mutex::new(Vec::with_capacity(threads)),
            num_sleepers: AtomicUsize::new(0),
            parkers: (0..threads)
                .map(|_| Parker {
                    notified: AtomicBool::new(false),
                    thread: OnceLock::new(),
                    cpu: OnceLock::new(),
                })
                .collect(),
            counters: (0..threads).map(|_| CachePadded::default()).collect(),
            outside_wakeups: AtomicU64::new(0),
            watcher: AtomicUsize::new(0),
            home: home::HomeToken::new(),
            shutdown: AtomicBool::new(false),
            governor: OnceLock::new(),
            probes: AtomicU64::new(0),
            spread_us: AtomicU64::new(0),
            started: Instant::now(),
            threads: Mutex::new(Vec::with_capacity(threads + 1)),
            settings,
        });
        pool.register();
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
        if pool.settings.stealing == Stealing::Adaptive && threads > 1 {
            let governed = pool.clone();
            let handle = thread::Builder::new()
                .name(format!("troupe-{}-governor", pool.settings.name))
                .spawn(move || {
                    let _ = governed.governor.set(thread::current());
                    governor::govern(&*governed, |d| {
                        let start = Instant::now();
                        thread::park_timeout(d);
                        start.elapsed()
                    });
                })?;
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
        if let Some(t) = self.governor.get() {
            t.unpark();
        }
    }

    /// Whether stealing is late now (see the field).
    #[inline]
    fn late(&self) -> bool {
        self.late.load(Ordering::Relaxed)
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

    /// The pool's counters, summed over its workers.
    pub(crate) fn stats(&self) -> DispatcherStats {
        self.counted()
    }

    fn counted(&self) -> DispatcherStats {
        let sum = |f: fn(&Counters) -> &AtomicU64| -> u64 {
            self.counters
                .iter()
                .map(|c| f(c).load(Ordering::Relaxed))
                .sum()
        };
        DispatcherStats {
            tasks: sum(|c| &c.runs),
            messages: sum(|c| &c.messages),
            steals: sum(|c| &c.steals),
            parks: sum(|c| &c.parks),
            wakeups: sum(|c| &c.wakeups) + self.outside_wakeups.load(Ordering::Relaxed),
            migrations: sum(|c| &c.migrations),
            givebacks: sum(|c| &c.givebacks),
            probes: self.probes.load(Ordering::Relaxed),
            spread_us: match self.settings.stealing {
                Stealing::Eager if self.stealers.len() > 1 => {
                    self.started.elapsed().as_micros() as u64
                }
                _ => self.spread_us.load(Ordering::Relaxed),
            },
        }
    }

    /// Adds this pool to the process-wide registry (see [`process_stats`]).
    fn register(self: &Arc<Pool>) {
        let mut all = PROCESS.lock().unwrap_or_else(|e| e.into_inner());
        // Pools that ended have left their counts in `ended`.
        all.live.retain(|p| p.strong_count() > 0);
        all.live.push(Arc::downgrade(self));
    }

    /// Counts a wake-up sent by `local` (or from outside the pool).
    fn count_wakeup(&self, local: Option<&Local>) {
        match local {
            Some(local) => Counters::bump(&self.counters[local.index].wakeups),
            None => {
                self.outside_wakeups.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Wakes one parked worker, if any (see the parking protocol).
    #[inline]
    fn notify_one(&self, local: Option<&Local>) {
        fence(Ordering::SeqCst);
        if self.num_sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.wake_sleeper(local);
    }

    /// Pops one sleeper and wakes it, if there still is one.
    fn wake_sleeper(&self, local: Option<&Local>) {
        let index = {
            let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            let Some(index) = sleepers.pop() else { return };
            self.num_sleepers.fetch_sub(1, Ordering::Relaxed);
            index
        };
        self.count_wakeup(local);
        let parker = &self.parkers[index];
        parker.notified.store(true, Ordering::Release);
        if let Some(t) = parker.thread.get() {
            t.unpark();
        }
    }

    /// Queues a task: into the worker's own queue on a worker of this pool,
    /// else into the injector (see the parking protocol for the wake-ups).
    fn push(&self, task: Task, local: Option<&Local>) {
        match local {
            Some(local) if !self.late() => {
                // Eager: an idle worker may take it at once.
                local.queue.push(task);
                self.notify_one(Some(local));
            }
            Some(local) => {
                local.queue.push(task);
                // Nobody watches the queues while there are sleepers: wake
                // one to watch. (No fence: the owner runs this task anyway.)
                if self.watcher.load(Ordering::Relaxed) == 0
                    && self.num_sleepers.load(Ordering::Relaxed) != 0
                {
                    self.wake_sleeper(Some(local));
                }
            }
            None => {
                self.injector.push(task);
                fence(Ordering::SeqCst);
                // Under late stealing a home that is awake takes it, but it
                // may be stuck in a long handler: a watcher is still woken,
                // and takes from the injector if the home stays stuck.
                match self.watcher.load(Ordering::Relaxed) {
                    // A hint to the awake watcher (see the protocol).
                    w if w != 0 => {
                        if let Some(t) = self.parkers[w - 1].thread.get() {
                            t.unpark();
                        }
                    }
                    _ if self.num_sleepers.load(Ordering::Relaxed) != 0 => self.wake_sleeper(None),
                    _ => {}
                }
            }
        }
    }
}

impl Executor for Pool {
    #[inline]
    fn execute(&self, task: Task) {
        with_local(self, |local| match local {
            Some(local) => {
                if let Some(displaced) = local.lifo.replace(Some(task)) {
                    self.push(displaced, Some(local));
                }
            }
            None => self.push(task, None),
        })
    }

    fn reschedule(&self, task: Task) {
        with_local(self, |local| self.push(task, local))
    }

    #[inline]
    fn throughput(&self) -> usize {
        self.settings.throughput
    }
}

impl Governed for Pool {
    fn messages(&self) -> u64 {
        self.counters
            .iter()
            .map(|c| c.messages.load(Ordering::Relaxed))
            .sum()
    }

    /// The sum of the workers' CPU clocks; `None` until every worker has
    /// set its clock, or where there are none.
    fn cpu(&self) -> Option<Duration> {
        self.parkers
            .iter()
            .map(|p| p.cpu.get().and_then(|c| c.read()))
            .sum()
    }

    fn set_mode(&self, mode: Mode) {
        self.late.store(mode == Mode::Local, Ordering::Relaxed);
        if mode == Mode::Spread {
            // Idle workers are parked; one woken now starts taking work
            // (and wakes others as it pushes), rather than at the next push.
            self.notify_one(None);
        }
    }

    fn account(&self, trials: u64, spread: Duration) {
        self.probes.fetch_add(trials, Ordering::Relaxed);
        self.spread_us
            .fetch_add(spread.as_micros() as u64, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        crate::runtime_metrics::dispatcher_governor(
            &self.settings.name,
            self.probes.load(Ordering::Relaxed),
            self.spread_us.load(Ordering::Relaxed),
        );
    }

    fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }
}

fn run_worker(pool: Arc<Pool>, index: usize, queue: Worker<Task>) {
    let _ = pool.parkers[index].thread.set(thread::current());
    if let Some(clock) = CpuClock::of_current_thread() {
        let _ = pool.parkers[index].cpu.set(clock);
    }
    let local = Local {
        pool: pool.clone(),
        index,
        queue,
        lifo: Cell::new(None),
    };
    CURRENT.with(|c| c.set(&local));
    let counters = &pool.counters[index];
    let mut turn = Turn::default();
    let mut watch_state = vec![Watched::default(); pool.stealers.len()];
    let mut helping = None;
    loop {
        let task = next_task(&pool, &local, &mut turn).or_else(|| {
            turn.streak = 0;
            spin_for_task(&pool, &local).or_else(|| watch(&pool, &local, &mut watch_state))
        });
        if let Some(task) = task {
            // the task was handed to this pool and taken off its queues
            // by this worker alone, which gives the right to run it.
            // SAFETY: by the argument just above.
            let ran = unsafe { task.run() };
            Counters::bump(&counters.runs);
            Counters::add(&counters.messages, u64::from(ran.messages));
            home::after_task(&pool, &local, &mut helping);
            #[cfg(feature = "metrics")]
            if counters.runs.load(Ordering::Relaxed).is_multiple_of(65_536) {
                counters.publish(&pool.settings.name, index);
            }
            continue;
        }
        if pool.shutdown.load(Ordering::SeqCst) {
            break;
        }
        #[cfg(feature = "metrics")]
        counters.publish(&pool.settings.name, index);
        helping = None;
        pool.leave_home(&local);
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

/// The next task by the worker's priority order (see the module header):
/// its own slot and queue, and the injector. Never another worker's queue.
#[inline]
fn next_task(pool: &Pool, local: &Local, turn: &mut Turn) -> Option<Task> {
    turn.since_injector += 1;
    if turn.since_injector >= INJECTOR_INTERVAL {
        turn.since_injector = 0;
        // The slot keeps its task: it runs next, or is displaced into the
        // queue if this task sends first.
        if let Some(task) = take_injected(pool, local) {
            return Some(task);
        }
    }
    if let Some(task) = local.lifo.take() {
        if turn.streak < MAX_LIFO_STREAK {
            turn.streak += 1;
            return Some(task);
        }
        // Fairness: let the queue go first this time.
        pool.push(task, Some(local));
    }
    turn.streak = 0;
    local
        .queue
        .pop()
        .or_else(|| take_injected(pool, local))
        .or_else(|| steal_eagerly(pool, local))
}

/// Under eager stealing, a batch from another worker's queue, returning
/// one task; nothing under late stealing (the watcher decides).
fn steal_eagerly(pool: &Pool, local: &Local) -> Option<Task> {
    if pool.late() {
        return None;
    }
    let n = pool.stealers.len();
    let task = (1..n).find_map(|k| steal_from(&pool.stealers[(local.index + k) % n], local));
    if task.is_some() {
        Counters::bump(&pool.counters[local.index].steals);
    }
    task
}

/// A batch from the injector into the worker's queue, returning one task,
/// if this worker may take from it (under late stealing: the home only).
fn take_injected(pool: &Pool, local: &Local) -> Option<Task> {
    if !pool.may_take_injected(local) {
        return None;
    }
    take_injected_anyway(pool, local)
}

/// A batch from the injector, whoever holds the home token.
fn take_injected_anyway(pool: &Pool, local: &Local) -> Option<Task> {
    loop {
        match pool.injector.steal_batch_and_pop(&local.queue) {
            Steal::Success(task) => return Some(task),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}

/// Spins with exponential backoff on the slot and the injector before
/// watching or parking: a quick send from outside is picked up without a
/// wake-up.
fn spin_for_task(pool: &Pool, local: &Local) -> Option<Task> {
    let backoff = Backoff::new();
    for _ in 0..pool.settings.spin {
        backoff.snooze();
        let found = local.lifo.take().or_else(|| take_injected(pool, local));
        if let Some(task) = found.or_else(|| steal_eagerly(pool, local)) {
            return Some(task);
        }
        if pool.shutdown.load(Ordering::Relaxed) {
            return None;
        }
    }
    None
}

/// What the watcher saw of one other worker at its last look.
#[derive(Clone, Copy, Default)]
struct Watched {
    /// Its tasks run then.
    runs: u64,
    /// Whether its queue was non-empty then.
    queued: bool,
    /// Whether the watcher has looked at it since it started watching.
    looked: bool,
}

/// Ends the watch when dropped.
struct Watching<'a>(&'a Pool);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.0.watcher.store(0, Ordering::Release);
    }
}

/// Watches the other workers' queues (see the module header) if nobody
/// else does: returns a task taken from the injector or stolen from a
/// worker that is not keeping up, or `None` once idle for [`IDLE_WATCH`]
/// (or when another worker watches, or at shutdown).
fn watch(pool: &Pool, local: &Local, seen: &mut [Watched]) -> Option<Task> {
    let n = pool.stealers.len();
    if n == 1
        || !pool.late()
        || pool
            .watcher
            .compare_exchange(0, local.index + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        return None;
    }
    let watching = Watching(pool);
    seen.iter_mut().for_each(|w| *w = Watched::default());
    let mut last_queued = Instant::now();
    loop {
        let injected = || {
            take_injected(pool, local).or_else(|| {
                pool.home_is_stuck(seen)
                    .then(|| take_injected_anyway(pool, local))?
            })
        };
        if let Some(task) = local.lifo.take().or_else(injected) {
            return Some(task);
        }
        // Stop watching when the governor turns to spreading: eager
        // stealing is every idle worker's job then.
        if pool.shutdown.load(Ordering::Relaxed) || !pool.late() {
            return None;
        }
        let mut any_queued = false;
        for k in 1..n {
            let victim = (local.index + k) % n;
            let stealer = &pool.stealers[victim];
            let w = &mut seen[victim];
            let runs = pool.counters[victim].runs.load(Ordering::Relaxed);
            let queued = stealer.len() as u64;
            let ran = runs.wrapping_sub(w.runs);
            let was_queued = std::mem::replace(&mut w.queued, queued > 0);
            w.runs = runs;
            w.looked = true;
            if queued == 0 {
                continue;
            }
            any_queued = true;
            // Queued a period ago and more left than a period's work.
            if was_queued && queued > ran {
                if let Some(task) = steal_from(stealer, local) {
                    Counters::bump(&pool.counters[local.index].steals);
                    w.queued = false;
                    drop(watching);
                    // Hand the watch on while queues still hold work.
                    if pool.stealers.iter().any(|s| !s.is_empty()) {
                        pool.notify_one(Some(local));
                    }
                    return Some(task);
                }
            }
        }
        // Work waiting in the injector keeps the watch too: a stuck home
        // cannot take it, and the watcher will (see `home.rs`).
        any_queued |= !pool.injector.is_empty();
        let now = Instant::now();
        if any_queued {
            last_queued = now;
        } else if now.duration_since(last_queued) >= IDLE_WATCH {
            return None;
        }
        // Until the next look, or a hint (an injector push, shutdown).
        thread::park_timeout(GRACE);
    }
}

/// Half of `victim`'s queue into the worker's own, returning one task.
fn steal_from(victim: &Stealer<Task>, local: &Local) -> Option<Task> {
    loop {
        match victim.steal_batch_and_pop(&local.queue) {
            Steal::Success(task) => return Some(task),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}

/// Parks the worker until notified (see the parking protocol).
fn park(pool: &Pool, local: &Local) {
    let parker = &pool.parkers[local.index];
    Counters::bump(&pool.counters[local.index].parks);
    {
        let mut sleepers = pool.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        sleepers.push(local.index);
        pool.num_sleepers.fetch_add(1, Ordering::Relaxed);
    }
    fence(Ordering::SeqCst);
    // Under eager stealing the other queues are this worker's to take too;
    // under late stealing the injector is the home's, if one is awake
    // (it looks at the injector before it parks).
    let injected = !pool.injector.is_empty() && (!pool.late() || pool.home.is_free());
    let stealable = injected || (!pool.late() && pool.stealers.iter().any(|s| !s.is_empty()));
    if stealable || pool.shutdown.load(Ordering::SeqCst) {
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

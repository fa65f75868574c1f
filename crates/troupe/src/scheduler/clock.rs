//! Where the scheduler's time comes from: the real monotonic clock, or a
//! [`ManualClock`] that a test advances by hand.
//!
//! # Design
//!
//! Everything in the runtime that measures time against a deadline (timer
//! entries, ask timeouts, receive timeouts, restart windows and backoff)
//! reads it from the system's scheduler (`Scheduler::now`), so one switch
//! here makes all of it virtual. A manual clock is an offset added to the
//! instant it was created: time moves only in [`ManualClock::advance`],
//! which then fires every entry that has come due on the calling thread,
//! one deadline at a time and in deadline order (insertion order among
//! equal deadlines), with the clock set to each deadline as it fires it.
//! So a periodic timer advanced over ten periods fires ten times, and what
//! an action schedules (a repeat, a backoff) fires within the same advance
//! when its deadline falls inside it. No driver thread runs for a system on
//! a manual clock.
//!
//! A thread that blocks on a deadline of virtual time (`Ask::wait`) depends
//! on some other thread advancing the clock; if none does, it would wait
//! for ever, and a test would hang without a word. So such a wait watches
//! the clock with a [`StandStill`] guard: once the clock has not moved for
//! the guard's length of *real* time (10 s by default,
//! [`ManualClock::set_wait_guard`]), the wait panics with a message naming
//! the manual clock. Panicking at once when nobody can advance the clock is
//! not possible: any thread holding a clone of it may, and the runtime
//! cannot know whether one will; a clock standing still for a long real
//! time is the observable sign.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use super::Inner;

/// The scheduler's source of time.
#[derive(Clone)]
pub(crate) enum Clock {
    Real,
    Manual(Arc<ManualTime>),
}

impl Clock {
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        match self {
            Clock::Real => Instant::now(),
            Clock::Manual(time) => time.now(),
        }
    }
}

/// The state behind a [`ManualClock`].
pub(crate) struct ManualTime {
    base: Instant,
    /// Nanoseconds since `base`.
    offset: AtomicU64,
    /// The scheduler it drives, once a system is built with it.
    scheduler: Mutex<Option<Weak<Inner>>>,
    /// Held for a whole advance, so that two advances do not interleave.
    advancing: Mutex<()>,
    /// Nanoseconds of real time a blocking wait lets the clock stand still
    /// before it panics (`u64::MAX`: no limit); see the module docs.
    wait_guard: AtomicU64,
}

/// The guard's default: long enough for any wait that another thread ends
/// by advancing the clock, short enough that a hung test says why well
/// before a CI job's limit.
const DEFAULT_WAIT_GUARD: Duration = Duration::from_secs(10);

impl ManualTime {
    pub(crate) fn now(&self) -> Instant {
        self.base + Duration::from_nanos(self.offset.load(Ordering::Acquire))
    }

    /// Moves the clock to `at`, never backwards.
    fn set(&self, at: Instant) {
        let nanos = at.saturating_duration_since(self.base).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX);
        self.offset.fetch_max(nanos, Ordering::AcqRel);
    }

    fn offset(&self) -> u64 {
        self.offset.load(Ordering::Acquire)
    }

    /// Attaches the scheduler of a system being built; a clock drives one
    /// system at a time.
    pub(super) fn attach(&self, inner: &Arc<Inner>) -> Result<(), String> {
        let mut slot = self.scheduler.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|w| w.strong_count() > 0) {
            return Err("this manual clock already drives another actor system".into());
        }
        *slot = Some(Arc::downgrade(inner));
        Ok(())
    }
}

/// Virtual time for tests: a system built with
/// [`ActorSystemBuilder::manual_clock`](crate::ActorSystemBuilder::manual_clock)
/// sees time move only when the test calls [`advance`](Self::advance).
/// Timers, periodic timers, receive timeouts, ask timeouts and restart
/// backoff then fire deterministically, in deadline order, without the
/// test sleeping. Cheap to clone (clones share the time).
///
/// A thread blocked in [`Ask::wait`](crate::Ask::wait) on such a system
/// depends on another thread advancing the clock; when the clock stands
/// still for [`wait_guard`](Self::wait_guard) of real time (10 s unless
/// [set](Self::set_wait_guard)), the wait panics with a message naming the
/// manual clock instead of hanging the test.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use troupe::scheduler::ManualClock;
/// use troupe::{Actor, ActorSystem, Context, Props};
///
/// struct Echo(mpsc::Sender<&'static str>);
/// impl Actor for Echo {
///     type Msg = &'static str;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: &'static str) {
///         self.0.send(msg).unwrap();
///     }
/// }
///
/// let clock = ManualClock::new();
/// let system = ActorSystem::builder().manual_clock(&clock).build().unwrap();
/// let (out, heard) = mpsc::channel();
/// let echo = system.spawn(Props::new(move || Echo(out.clone()))).unwrap();
/// system.scheduler().schedule_once(Duration::from_secs(3600), &echo, "an hour later");
/// clock.advance(Duration::from_secs(3599));
/// assert!(heard.try_recv().is_err(), "not yet");
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(heard.recv_timeout(Duration::from_secs(5)).unwrap(), "an hour later");
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
#[derive(Clone)]
pub struct ManualClock {
    pub(crate) time: Arc<ManualTime>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

impl ManualClock {
    /// A clock standing at the instant it is created.
    pub fn new() -> Self {
        ManualClock {
            time: Arc::new(ManualTime {
                base: Instant::now(),
                offset: AtomicU64::new(0),
                scheduler: Mutex::new(None),
                advancing: Mutex::new(()),
                wait_guard: AtomicU64::new(DEFAULT_WAIT_GUARD.as_nanos() as u64),
            }),
        }
    }

    /// Sets how long, in real time, a thread blocked on a deadline of this
    /// clock (`Ask::wait`) waits while the clock does not move before it
    /// panics (default 10 s; `Duration::MAX`: never). Every advance starts
    /// the guard over, so a test that advances the clock from another
    /// thread is not cut short however long it runs. Clones share it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::scheduler::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// assert_eq!(clock.wait_guard(), Duration::from_secs(10));
    /// // A test that expects a wait to be stuck need not sit for 10 s.
    /// clock.set_wait_guard(Duration::from_millis(100));
    /// assert_eq!(clock.clone().wait_guard(), Duration::from_millis(100));
    /// ```
    pub fn set_wait_guard(&self, guard: Duration) {
        let nanos = u64::try_from(guard.as_nanos()).unwrap_or(u64::MAX);
        self.time.wait_guard.store(nanos, Ordering::Relaxed);
    }

    /// The guard [`set_wait_guard`](Self::set_wait_guard) set.
    pub fn wait_guard(&self) -> Duration {
        Duration::from_nanos(self.time.wait_guard.load(Ordering::Relaxed))
    }

    /// The clock's current time.
    pub fn now(&self) -> Instant {
        self.time.now()
    }

    /// How far the clock has been advanced since it was created.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.time.offset.load(Ordering::Acquire))
    }

    /// Moves time forward by `by`, firing every scheduler entry that comes
    /// due, one deadline at a time in deadline order, on this thread; returns
    /// how many fired. Messages they send are on their way when this
    /// returns (the actors handle them on their dispatchers as usual).
    pub fn advance(&self, by: Duration) -> usize {
        let _one_at_a_time = self
            .time
            .advancing
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let target = self.now() + by;
        let scheduler = self
            .time
            .scheduler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(Weak::upgrade);
        let mut fired = 0;
        if let Some(inner) = scheduler {
            let last = inner.tick_at(target);
            let mut due = Vec::new();
            loop {
                let mut state = inner.lock();
                let next = match state.wheel.next_deadline() {
                    Some(tick) if tick <= last && !state.shutdown => tick,
                    _ => break,
                };
                self.time.set(inner.instant_of(next));
                state
                    .wheel
                    .advance_to(next, |_, _, action| due.push(action));
                drop(state);
                fired += due.len();
                // Run with the lock released: an action may schedule more.
                for action in due.drain(..) {
                    action.run();
                }
            }
        }
        self.time.set(target);
        fired
    }
}

/// Watches a manual clock for a thread blocked on one of its deadlines (see
/// the module docs): parks the thread, and tells when the clock has stood
/// still for the whole guard.
pub(crate) struct StandStill<'a> {
    time: &'a ManualTime,
    guard: Duration,
    /// The clock's offset when the current guard period began.
    seen: u64,
    /// When the current guard period ends; `None`: no guard.
    until: Option<Instant>,
}

impl<'a> StandStill<'a> {
    pub(crate) fn new(time: &'a ManualTime) -> Self {
        let nanos = time.wait_guard.load(Ordering::Relaxed);
        let guard = Duration::from_nanos(nanos);
        let until = if nanos == u64::MAX {
            None
        } else {
            Instant::now().checked_add(guard)
        };
        StandStill {
            time,
            guard,
            seen: time.offset(),
            until,
        }
    }

    /// The guard's length.
    pub(crate) fn guard(&self) -> Duration {
        self.guard
    }

    /// Parks until unparked (or spuriously), at most until the guard period
    /// ends; `false` once a whole period has passed with the clock standing
    /// still. A period in which the clock moved starts another.
    pub(crate) fn park(&mut self) -> bool {
        let Some(until) = self.until else {
            thread::park();
            return true;
        };
        let now = Instant::now();
        if now < until {
            thread::park_timeout(until - now);
            return true;
        }
        let offset = self.time.offset();
        if offset == self.seen {
            return false;
        }
        self.seen = offset;
        self.until = now.checked_add(self.guard);
        true
    }
}

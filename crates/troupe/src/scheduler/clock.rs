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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
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
}

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
            }),
        }
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

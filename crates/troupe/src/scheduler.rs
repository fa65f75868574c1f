//! The scheduler: runs actions and delivers messages at a later time, on one
//! driver thread per actor system.
//!
//! # Design
//!
//! Pending entries sit in a hashed timing wheel ([`troupe_timer::Wheel`],
//! 4,096 slots) whose ticks are `tick` long (1 ms by default, set with
//! `ActorSystemBuilder::scheduler_tick`). A deadline becomes the first tick
//! at or after it. Inserting and cancelling are O(1) under one mutex; the
//! driver thread wakes at the next occupied tick (or when an earlier entry is
//! inserted), takes every due entry under one lock hold, and runs them with
//! the lock released. A one-shot entry is cancelled by removing it from the
//! wheel; a repeating one by a flag its next firing checks.
//!
//! An entry's action is stored in the wheel itself when it is small (a
//! scheduled `tell` of a message up to 16 bytes: see `scheduler/action.rs`),
//! so a pending timer costs one wheel entry of 56 bytes and no allocation.
//!
//! Messages are delivered through the ordinary `tell` path, so a timer
//! message is ordered after everything its sender told the target before
//! scheduling it, and goes to dead letters if the target has stopped.
//!
//! # Precision
//!
//! Never early: an entry fires at or after its deadline. It is late by at
//! most one tick plus the driver's wake-up latency and the time to run the
//! entries due with it.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use troupe_timer::{TimerKey, Wheel};

mod action;
mod clock;
mod tell;

use action::Action;
pub use clock::ManualClock;
pub(crate) use clock::{Clock, StandStill};

// A pending timer is one wheel entry and nothing else (see `action.rs`).
const _: () = assert!(Wheel::<Action>::ENTRY_SIZE <= 56);

/// Slots of the wheel: one second of 1 ms ticks fits in one rotation.
const SLOTS: usize = 4096;

struct State {
    wheel: Wheel<Action>,
    /// The tick the driver sleeps until (`u64::MAX`: until notified).
    sleeping_until: u64,
    shutdown: bool,
}

struct Inner {
    state: Mutex<State>,
    wake: Condvar,
    /// Tick 0.
    epoch: Instant,
    tick: Duration,
    /// Where now comes from (see `scheduler/clock.rs`).
    clock: Clock,
}

impl Inner {
    /// The first tick at or after `at` (so an entry is never early).
    fn tick_at_or_after(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.epoch).as_nanos();
        let tick = self.tick.as_nanos().max(1);
        since.div_ceil(tick).min(u64::MAX as u128) as u64
    }

    /// The last tick that has begun by `now`.
    fn tick_at(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.epoch).as_nanos();
        (since / self.tick.as_nanos().max(1)).min(u64::MAX as u128) as u64
    }

    fn instant_of(&self, tick: u64) -> Instant {
        self.epoch + self.tick.saturating_mul(tick.min(u32::MAX as u64) as u32)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A handle that cancels a scheduled entry.
#[derive(Debug, Clone)]
pub struct Cancellable {
    how: Cancel,
}

#[derive(Debug, Clone)]
enum Cancel {
    /// A one-shot entry: removed from the wheel (no allocation per entry).
    Entry {
        scheduler: Weak<Inner>,
        key: TimerKey,
    },
    /// A repeating entry: its next firing sees the flag and stops.
    Flag(Arc<AtomicBool>),
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Scheduler")
    }
}

impl Cancellable {
    /// Cancels the entry; it will not fire if it has not yet. Idempotent.
    pub fn cancel(&self) {
        match &self.how {
            Cancel::Entry { scheduler, key } => {
                if let Some(inner) = scheduler.upgrade() {
                    let removed = inner.lock().wheel.cancel(*key);
                    // Drop the action outside the lock: it may own anything.
                    drop(removed);
                }
            }
            Cancel::Flag(flag) => flag.store(true, Ordering::Release),
        }
    }

    /// Whether the entry may still fire: a one-shot entry that has neither
    /// fired nor been cancelled, a repeating one that has not been cancelled.
    pub fn is_pending(&self) -> bool {
        match &self.how {
            Cancel::Entry { scheduler, key } => scheduler
                .upgrade()
                .is_some_and(|inner| inner.lock().wheel.contains(*key)),
            Cancel::Flag(flag) => !flag.load(Ordering::Acquire),
        }
    }

    fn flag() -> (Cancellable, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        (
            Cancellable {
                how: Cancel::Flag(flag.clone()),
            },
            flag,
        )
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
    /// Starts the scheduler with ticks of `tick`: on the real clock with a
    /// driver thread; on a manual clock without one (the clock's `advance`
    /// fires the entries).
    pub(crate) fn start(
        system_name: &str,
        tick: Duration,
        manual: Option<&ManualClock>,
    ) -> std::io::Result<(Scheduler, Option<JoinHandle<()>>)> {
        let clock = manual.map_or(Clock::Real, |m| Clock::Manual(m.time.clone()));
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                wheel: Wheel::new(SLOTS, 0),
                sleeping_until: u64::MAX,
                shutdown: false,
            }),
            wake: Condvar::new(),
            epoch: clock.now(),
            tick: tick.max(Duration::from_micros(1)),
            clock,
        });
        if let Some(manual) = manual {
            manual
                .time
                .attach(&inner)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
            return Ok((Scheduler { inner }, None));
        }
        let driver = inner.clone();
        let handle = thread::Builder::new()
            .name(format!("troupe-{system_name}-scheduler"))
            .spawn(move || drive(&driver))?;
        Ok((Scheduler { inner }, Some(handle)))
    }

    /// The scheduler's now: the real monotonic clock, or the manual clock
    /// the system was built with. Deadlines for the scheduler are measured
    /// from it.
    #[inline]
    pub fn now(&self) -> Instant {
        self.inner.clock.now()
    }

    /// Whether time is driven by a manual clock.
    pub(crate) fn is_manual(&self) -> bool {
        matches!(self.inner.clock, Clock::Manual(_))
    }

    /// A guard for a thread about to block on a deadline of this
    /// scheduler's manual clock; `None` on the real clock.
    pub(crate) fn stand_still(&self) -> Option<StandStill<'_>> {
        match &self.inner.clock {
            Clock::Real => None,
            Clock::Manual(time) => Some(StandStill::new(time)),
        }
    }

    /// The tick length.
    pub fn tick(&self) -> Duration {
        self.inner.tick
    }

    /// Runs `action` on the driver thread at `deadline` (or later). The action
    /// must be short: it delays every entry due after it.
    pub(crate) fn run_at(
        &self,
        deadline: Instant,
        action: impl FnOnce() + Send + 'static,
    ) -> Cancellable {
        let key = self.insert(deadline, Action::new(action));
        Cancellable {
            how: Cancel::Entry {
                scheduler: Arc::downgrade(&self.inner),
                key,
            },
        }
    }

    /// Puts `action` in the wheel and wakes the driver if it sleeps past it.
    fn insert(&self, deadline: Instant, action: Action) -> TimerKey {
        let tick = self.inner.tick_at_or_after(deadline);
        let mut state = self.inner.lock();
        let key = state.wheel.insert(tick, action);
        let wake = tick < state.sleeping_until && !state.shutdown;
        if wake {
            state.sleeping_until = tick;
        }
        drop(state);
        if wake {
            self.inner.wake.notify_one();
        }
        key
    }

    /// Runs `fire` at `first`, then every `period`: measured from the previous
    /// deadline (`fixed_rate`, catching up after a delay) or from the time the
    /// previous firing ran. `fire` returns false to stop repeating.
    fn repeat(
        &self,
        first: Instant,
        period: Duration,
        fixed_rate: bool,
        cancelled: Arc<AtomicBool>,
        fire: Arc<dyn Fn() -> bool + Send + Sync>,
    ) {
        let scheduler = self.clone();
        let action = move || {
            if cancelled.load(Ordering::Acquire) || !fire() || cancelled.load(Ordering::Acquire) {
                return;
            }
            let next = if fixed_rate {
                first + period
            } else {
                scheduler.now() + period
            };
            scheduler.repeat(next, period, fixed_rate, cancelled, fire);
        };
        self.insert(first, Action::new(action));
    }

    /// Runs `fire` at `first` and then every `period` (fixed rate) until it
    /// returns false or the handle is cancelled.
    pub(crate) fn every(
        &self,
        first: Instant,
        period: Duration,
        fire: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Cancellable {
        let (handle, flag) = Cancellable::flag();
        let period = period.max(Duration::from_micros(1));
        self.repeat(first, period, true, flag, fire);
        handle
    }

    /// Entries not yet fired or cancelled.
    pub fn pending(&self) -> usize {
        self.inner.lock().wheel.len()
    }

    /// Stops the driver; entries not yet due are dropped.
    pub(crate) fn shutdown(&self) {
        let mut state = self.inner.lock();
        state.shutdown = true;
        let wheel = std::mem::replace(&mut state.wheel, Wheel::new(1, 0));
        drop(state);
        // Dropped outside the lock: the actions may own actor references.
        drop(wheel);
        self.inner.wake.notify_all();
    }
}

fn drive(inner: &Inner) {
    // Due entries are taken out under one lock hold and run with the lock
    // released, so that inserting threads are not held up by the actions.
    let mut due: Vec<Action> = Vec::new();
    let mut state = inner.lock();
    loop {
        if state.shutdown {
            return;
        }
        let now = inner.tick_at(Instant::now());
        state.wheel.advance_to(now, |_, _, action| due.push(action));
        #[cfg(feature = "metrics")]
        crate::runtime_metrics::timers_pending(state.wheel.len());
        if !due.is_empty() {
            drop(state);
            for action in due.drain(..) {
                action.run();
            }
            state = inner.lock();
            continue;
        }
        match state.wheel.next_deadline_hint() {
            Some(tick) => {
                state.sleeping_until = tick;
                let wait = inner
                    .instant_of(tick)
                    .saturating_duration_since(Instant::now());
                state = inner
                    .wake
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            None => {
                state.sleeping_until = u64::MAX;
                state = inner.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        state.sleeping_until = u64::MAX;
    }
}

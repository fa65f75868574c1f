//! The home worker: what makes late stealing keep a pool's work on **one**
//! worker, not merely keep each actor where it last ran.
//!
//! Late stealing alone leaves work wherever it first landed. Sends from
//! outside the pool go to the shared injector, and any idle worker takes
//! them, so a workload seeded from outside (the trading system's clients,
//! started from the main thread) starts its chains on both workers, and
//! then each worker keeps its share for ever: two workers busy, and the
//! actors they share (engines, receivers) fed from both CPUs, every send a
//! cache-line transfer. Measured on the trading system (request-reply, 40
//! clients, host in its slow cross-CPU mode), the pool's late windows
//! handled 5,700 messages a millisecond where one worker alone handled
//! 11,000.
//!
//! So under late stealing one worker holds the pool's **home token**:
//!
//! * Only the home takes work from the injector. A worker takes the token
//!   when nobody holds it (the first to find work, or the one woken by a
//!   send from outside); the home gives it up just before it parks, so a
//!   token holder is always awake and looks at the injector before it
//!   sleeps (the parking protocol): nothing pushed there is stranded.
//! * Any other worker runs only what the watcher stole for it, when the
//!   home was not keeping up (see the pool's header). Such a **helper**
//!   looks at the home every [`GRACE`]: once the home's queue holds no
//!   more tasks than the home ran in that period (it keeps up again), the
//!   helper hands its slot and queue back through the injector and goes
//!   idle. So parallel work (a backlog the home cannot clear) is shared,
//!   and a chain of small messages ends up on one CPU.
//! * A home stuck in a long handler (no run in a grace period) cannot take
//!   from the injector; the watcher then takes from it as from a stuck
//!   queue.
//!
//! Under eager stealing the token means nothing: every worker takes from
//! the injector.

use super::*;

/// The home token: which worker, if any, holds it. Its own type, on the
/// crate's loom shim, so that the model tests (`models.rs`) check the
/// token with the parking protocol under loom.
pub(super) struct HomeToken(crate::sync::AtomicUsize);

/// No worker holds the token.
const NOBODY: usize = 0;

impl HomeToken {
    /// A token nobody holds.
    pub(super) fn new() -> Self {
        HomeToken(crate::sync::AtomicUsize::new(NOBODY))
    }

    /// The holder's index, if a worker holds the token.
    pub(super) fn holder(&self) -> Option<usize> {
        match self.0.load(crate::sync::Ordering::Acquire) {
            NOBODY => None,
            token => Some(token - 1),
        }
    }

    /// Whether worker `index` holds the token now: it did already, or
    /// took it because nobody held it.
    pub(super) fn claim(&self, index: usize) -> bool {
        use crate::sync::Ordering::{AcqRel, Acquire};
        let me = index + 1;
        match self.0.load(Acquire) {
            token if token == me => true,
            NOBODY => self.0.compare_exchange(NOBODY, me, AcqRel, Acquire).is_ok(),
            _ => false,
        }
    }

    /// Gives the token up if worker `index` holds it.
    pub(super) fn leave(&self, index: usize) {
        use crate::sync::Ordering::{AcqRel, Relaxed};
        let _ = self.0.compare_exchange(index + 1, NOBODY, AcqRel, Relaxed);
    }

    /// Whether nobody holds the token (a parking worker's re-check).
    pub(super) fn is_free(&self) -> bool {
        self.0.load(crate::sync::Ordering::Acquire) == NOBODY
    }
}

/// Tasks a helper runs between looks at the clock.
const LOOK_EVERY: u32 = 32;

/// What a helper saw of the home at its last look.
pub(super) struct Helping {
    since: Instant,
    home: usize,
    home_runs: u64,
    countdown: u32,
}

impl Pool {
    /// The home worker's index, if a worker holds the token.
    fn home(&self) -> Option<usize> {
        self.home.holder()
    }

    /// Whether `local` may take from the injector now: always under eager
    /// stealing; under late stealing if it is the home, or takes the token
    /// because nobody holds it.
    pub(super) fn may_take_injected(&self, local: &Local) -> bool {
        !self.late() || self.home.claim(local.index)
    }

    /// Gives the token up if `local` holds it (it is about to park).
    pub(super) fn leave_home(&self, local: &Local) {
        self.home.leave(local.index);
    }

    /// Whether the home is stuck: it ran nothing since the watcher's last
    /// look (`seen` holds the runs it saw then), so the injector may be
    /// taken from by the watcher.
    pub(super) fn home_is_stuck(&self, seen: &[super::Watched]) -> bool {
        self.home().is_some_and(|h| {
            seen[h].looked && self.counters[h].runs.load(Ordering::Relaxed) == seen[h].runs
        })
    }
}

/// Called by a worker after each task it ran. A helper (under late
/// stealing, not the home, with a home awake) looks at the home every
/// [`GRACE`] and hands its work back once the home keeps up.
#[inline]
pub(super) fn after_task(pool: &Pool, local: &Local, helping: &mut Option<Helping>) {
    if !pool.late() {
        *helping = None;
        return;
    }
    let Some(h) = helping else {
        match pool.home() {
            Some(home) if home != local.index => {
                *helping = Some(Helping {
                    since: Instant::now(),
                    home,
                    home_runs: pool.counters[home].runs.load(Ordering::Relaxed),
                    countdown: LOOK_EVERY,
                });
            }
            _ => {}
        }
        return;
    };
    h.countdown -= 1;
    if h.countdown > 0 {
        return;
    }
    h.countdown = LOOK_EVERY;
    let now = Instant::now();
    if now.duration_since(h.since) < GRACE {
        return;
    }
    match pool.home() {
        Some(home) if home == h.home => {
            let runs = pool.counters[home].runs.load(Ordering::Relaxed);
            let ran = runs.wrapping_sub(h.home_runs);
            let queued = pool.stealers[home].len() as u64;
            if queued <= ran && ran > 0 {
                // The home keeps up: this worker's work goes back to it.
                give_back(pool, local);
                *helping = None;
            } else {
                h.since = now;
                h.home_runs = runs;
            }
        }
        // The home changed or parked: look again from the start.
        _ => *helping = None,
    }
}

/// Hands the worker's slot and queue to the injector, where the home
/// takes them (it is awake: it holds the token).
fn give_back(pool: &Pool, local: &Local) {
    let mut given = 0;
    if let Some(task) = local.lifo.take() {
        pool.injector.push(task);
        given += 1;
    }
    while let Some(task) = local.queue.pop() {
        pool.injector.push(task);
        given += 1;
    }
    if given > 0 {
        Counters::bump(&pool.counters[local.index].givebacks);
        // The parking protocol: the home may have just parked.
        pool.notify_one(Some(local));
    }
}

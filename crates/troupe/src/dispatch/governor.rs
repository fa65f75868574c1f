//! The adaptive pool's governor: measures whether spreading work over the
//! workers pays, and keeps it local when it does not
//! ([`Stealing::Adaptive`](crate::Stealing::Adaptive)).
//!
//! # Why measure
//!
//! Whether a second worker helps depends on things the runtime cannot see
//! in advance: how parallel the actors' conversations are, how long their
//! handlers run, and what a cache line costs between this machine's CPUs
//! (80 ns on one host, several hundred on another, a millisecond when the
//! hypervisor time-shares two vCPUs). Eager stealing wins when handlers are
//! long or the work splits into independent parts; locality wins when
//! actors talk in chains of small messages, where every steal moves a
//! conversation to a CPU whose cache holds none of it. So the governor
//! tries both and keeps the faster, preferring locality (it costs less CPU)
//! unless spreading handles at least [`SPREAD_GAIN`] more messages.
//!
//! # How
//!
//! The pool starts local. Every [`WINDOW`] the governor reads how many
//! messages the workers handled. When a trial is due it runs three windows:
//! the current way (*before*), the other way (*trial*), the current way
//! again (*after*), each after a short settling pause, and compares the
//! trial's rate with the mean of before and after, so a load that grows or
//! shrinks during the trial does not decide it. A trial that confirms the
//! current way doubles the time to the next one (up to [`MAX_INTERVAL`]); a
//! switch brings trials back to [`MIN_INTERVAL`], to catch a wrong call.
//! A window with fewer than [`LIGHT`] messages means one worker keeps up:
//! the pool goes (or stays) local and the trial is dropped. An idle pool is
//! looked at less and less often, down to every [`IDLE_MAX`].
//!
//! [`Governor`] is the decision alone, fed measured windows (unit-tested
//! with made-up rates); [`govern`] is the thread's loop around it.

use std::time::Duration;

/// One measured window.
pub(crate) const WINDOW: Duration = Duration::from_millis(5);

/// Pause after a change of mode before measuring: actors and their cache
/// lines settle where the new mode puts them.
pub(crate) const SETTLE: Duration = Duration::from_millis(1);

/// Windows in the current mode before the first trial.
pub(crate) const FIRST_TRIAL: u32 = 8;

/// Fewest windows between trials (after a switch).
pub(crate) const MIN_INTERVAL: u32 = 8;

/// Most windows between trials (about a second).
pub(crate) const MAX_INTERVAL: u32 = 200;

/// Messages in a window below which the load is light: one worker keeps
/// up with it, and a rate so small says nothing about which mode is faster.
pub(crate) const LIGHT: u64 = 500;

/// How much more spreading must handle to be kept: 10%.
pub(crate) const SPREAD_GAIN: f64 = 1.10;

/// The longest sleep of the governor of an idle pool.
pub(crate) const IDLE_MAX: Duration = Duration::from_millis(100);

/// How the pool steals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Late, locality-first stealing.
    Local,
    /// Eager stealing.
    Spread,
}

impl Mode {
    fn other(self) -> Mode {
        match self {
            Mode::Local => Mode::Spread,
            Mode::Spread => Mode::Local,
        }
    }
}

/// Where the governor is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// In the chosen mode; a trial starts when the count reaches zero.
    Settled { until_trial: u32 },
    /// Measured `before` in the chosen mode; now measuring the other.
    Trying { before: f64 },
    /// Measured both; now measuring the chosen mode again.
    After { before: f64, trial: f64 },
}

/// The decision: which mode the next window runs in.
#[derive(Debug)]
pub(crate) struct Governor {
    chosen: Mode,
    phase: Phase,
    /// Windows between trials that confirm the chosen mode.
    interval: u32,
    /// Trials started.
    trials: u64,
}

impl Governor {
    pub(crate) fn new() -> Governor {
        Governor {
            chosen: Mode::Local,
            phase: Phase::Settled {
                until_trial: FIRST_TRIAL,
            },
            interval: MIN_INTERVAL,
            trials: 0,
        }
    }

    /// Trials started so far.
    pub(crate) fn trials(&self) -> u64 {
        self.trials
    }

    /// Takes the window just measured (`messages` handled in `length`) and
    /// says the mode of the next one.
    pub(crate) fn window(&mut self, messages: u64, length: Duration) -> Mode {
        if messages < LIGHT {
            // One worker keeps up: local, and no trial on this little.
            self.chosen = Mode::Local;
            self.phase = Phase::Settled {
                until_trial: self.interval,
            };
            return Mode::Local;
        }
        let rate = messages as f64 / length.as_secs_f64().max(1e-9);
        match self.phase {
            Phase::Settled { until_trial } if until_trial > 1 => {
                self.phase = Phase::Settled {
                    until_trial: until_trial - 1,
                };
                self.chosen
            }
            Phase::Settled { .. } => {
                self.trials += 1;
                self.phase = Phase::Trying { before: rate };
                self.chosen.other()
            }
            Phase::Trying { before } => {
                self.phase = Phase::After {
                    before,
                    trial: rate,
                };
                self.chosen
            }
            Phase::After { before, trial } => {
                let current = (before + rate) / 2.0;
                let trial_mode = self.chosen.other();
                let trial_wins = match trial_mode {
                    Mode::Spread => trial >= current * SPREAD_GAIN,
                    Mode::Local => trial * SPREAD_GAIN > current,
                };
                tracing::debug!(
                    target: "troupe::governor",
                    chosen = ?self.chosen,
                    before_per_ms = before / 1e3,
                    trial_per_ms = trial / 1e3,
                    after_per_ms = rate / 1e3,
                    trial_wins,
                    "a trial of the other way of stealing"
                );
                if trial_wins {
                    self.chosen = trial_mode;
                    self.interval = MIN_INTERVAL;
                } else {
                    self.interval = (self.interval * 2).min(MAX_INTERVAL);
                }
                self.phase = Phase::Settled {
                    until_trial: self.interval,
                };
                self.chosen
            }
        }
    }
}

/// What the governor reads and sets on its pool.
pub(crate) trait Governed {
    /// Messages handled by the pool's workers so far.
    fn messages(&self) -> u64;
    /// Puts the pool into `mode`.
    fn set_mode(&self, mode: Mode);
    /// Adds to the pool's counts of trials and of time spent spreading.
    fn account(&self, trials: u64, spread: Duration);
    /// Whether the pool is shutting down.
    fn stopping(&self) -> bool;
}

/// The governor thread's loop: measure a window, decide, apply, until the
/// pool stops. `sleep` waits for a duration or until woken (at shutdown)
/// and returns how long it waited.
pub(crate) fn govern(pool: &impl Governed, mut sleep: impl FnMut(Duration) -> Duration) {
    let mut governor = Governor::new();
    let mut mode = Mode::Local;
    let mut idle_sleep = WINDOW;
    while !pool.stopping() {
        let before = pool.messages();
        let slept = idle_sleep;
        let length = sleep(slept);
        let messages = pool.messages().wrapping_sub(before);
        if slept != WINDOW {
            // The end of an idle stretch: a longer window, part idle,
            // whose rate would understate the current mode. Measure
            // windows again from now on; decide on those.
            idle_sleep = if messages == 0 {
                (idle_sleep * 2).min(IDLE_MAX)
            } else {
                WINDOW
            };
            continue;
        }
        let trials = governor.trials();
        let next = governor.window(messages, length);
        let spread = if mode == Mode::Spread {
            length
        } else {
            Duration::ZERO
        };
        pool.account(governor.trials() - trials, spread);
        // An idle pool is looked at less and less often.
        if messages == 0 {
            idle_sleep = WINDOW * 2;
        }
        if next != mode {
            mode = next;
            pool.set_mode(mode);
            let settled = sleep(SETTLE);
            if mode == Mode::Spread {
                pool.account(0, settled);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS5: Duration = WINDOW;

    /// Feeds windows at the given rates (messages per window) and returns
    /// the modes chosen after each.
    fn feed(g: &mut Governor, windows: &[u64]) -> Vec<Mode> {
        windows.iter().map(|&m| g.window(m, MS5)).collect()
    }

    /// Runs windows until a trial starts, then a trial with these rates
    /// (before, trial, after); returns the mode chosen after it.
    fn trial(g: &mut Governor, steady: u64, before: u64, during: u64, after: u64) -> Mode {
        let chosen = g.chosen;
        loop {
            let next = g.window(steady.max(before), MS5);
            if next != chosen {
                // That window was `before`: replace it by the asked rate
                // (same in these tests, as steady == before).
                break;
            }
        }
        assert_eq!(g.window(during, MS5), chosen, "back to the chosen mode");
        g.window(after, MS5)
    }

    #[test]
    fn starts_local_and_tries_spreading_after_the_first_windows() {
        let mut g = Governor::new();
        let modes = feed(&mut g, &[10_000; FIRST_TRIAL as usize]);
        assert!(modes[..modes.len() - 1].iter().all(|&m| m == Mode::Local));
        assert_eq!(modes.last(), Some(&Mode::Spread), "the trial window");
        assert_eq!(g.trials(), 1);
    }

    #[test]
    fn spreading_is_kept_only_when_it_handles_ten_percent_more() {
        let mut g = Governor::new();
        // 9% more: not enough.
        assert_eq!(trial(&mut g, 10_000, 10_000, 10_900, 10_000), Mode::Local);
        // 20% more: spread.
        assert_eq!(trial(&mut g, 10_000, 10_000, 12_000, 10_000), Mode::Spread);
    }

    #[test]
    fn a_spreading_pool_goes_back_to_local_when_local_is_nearly_as_fast() {
        let mut g = Governor::new();
        assert_eq!(trial(&mut g, 10_000, 10_000, 20_000, 10_000), Mode::Spread);
        // Now spreading; local handles 95% as much: local wins (it is cheaper).
        assert_eq!(trial(&mut g, 20_000, 20_000, 19_000, 20_000), Mode::Local);
        // And with local at half the rate, spreading stays.
        assert_eq!(trial(&mut g, 10_000, 10_000, 20_000, 10_000), Mode::Spread);
        assert_eq!(trial(&mut g, 20_000, 20_000, 10_000, 20_000), Mode::Spread);
    }

    #[test]
    fn the_trial_compares_with_the_mean_of_before_and_after() {
        // A load that doubles during the trial: spread's 15,000 is below
        // the mean of 10,000 and 30,000, so it does not win.
        let mut g = Governor::new();
        assert_eq!(trial(&mut g, 10_000, 10_000, 15_000, 30_000), Mode::Local);
    }

    #[test]
    fn trials_grow_rarer_while_they_confirm_and_come_back_after_a_switch() {
        let mut g = Governor::new();
        let mut gaps = Vec::new();
        for _ in 0..8 {
            let mut windows = 0;
            while g.window(10_000, MS5) == Mode::Local {
                windows += 1;
            }
            gaps.push(windows);
            g.window(10_000, MS5);
            assert_eq!(g.window(10_000, MS5), Mode::Local);
        }
        assert_eq!(gaps[0], FIRST_TRIAL - 1);
        assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
        assert_eq!(*gaps.last().unwrap(), MAX_INTERVAL - 1, "{gaps:?}");
        // A switch brings the interval back to the minimum.
        loop {
            if g.window(10_000, MS5) == Mode::Spread {
                break;
            }
        }
        g.window(30_000, MS5);
        assert_eq!(g.window(10_000, MS5), Mode::Spread);
        let mut windows = 0;
        while g.window(30_000, MS5) == Mode::Spread {
            windows += 1;
        }
        assert_eq!(windows, MIN_INTERVAL - 1);
    }

    #[test]
    fn light_load_is_local_and_drops_a_trial() {
        let mut g = Governor::new();
        assert_eq!(trial(&mut g, 10_000, 10_000, 20_000, 10_000), Mode::Spread);
        assert_eq!(g.window(LIGHT - 1, MS5), Mode::Local);
        // A trial in progress is dropped by a light window.
        let mut g = Governor::new();
        while g.window(10_000, MS5) == Mode::Local {}
        assert_eq!(g.window(10, MS5), Mode::Local);
        assert_eq!(g.window(10_000, MS5), Mode::Local, "no trial pending");
    }

    /// A pool whose rate depends on the mode, on a made-up clock.
    #[derive(Default)]
    struct Fake {
        messages: u64,
        spreading: bool,
        trials: u64,
        spread: Duration,
        total: Duration,
    }

    struct FakePool(std::sync::Mutex<Fake>);

    impl Governed for FakePool {
        fn messages(&self) -> u64 {
            self.0.lock().unwrap().messages
        }
        fn set_mode(&self, mode: Mode) {
            self.0.lock().unwrap().spreading = mode == Mode::Spread;
        }
        fn account(&self, trials: u64, spread: Duration) {
            let mut s = self.0.lock().unwrap();
            s.trials += trials;
            s.spread += spread;
        }
        fn stopping(&self) -> bool {
            self.0.lock().unwrap().total >= Duration::from_secs(10)
        }
    }

    /// Runs the loop for ten made-up seconds on a pool that handles
    /// `local` and `spread` messages a millisecond; returns it.
    fn run_loop(local: u64, spread: u64) -> Fake {
        let pool = FakePool(std::sync::Mutex::new(Fake::default()));
        govern(&pool, |d| {
            let mut s = pool.0.lock().unwrap();
            let per_ms = if s.spreading { spread } else { local };
            s.messages += per_ms * d.as_millis() as u64;
            s.total += d;
            d
        });
        pool.0.into_inner().unwrap()
    }

    #[test]
    fn the_loop_spreads_when_spreading_pays_and_only_then() {
        let pays = run_loop(1_000, 3_000);
        assert!(pays.trials >= 2, "trials counted");
        assert!(
            pays.spread > pays.total * 9 / 10,
            "spread {:?}",
            pays.spread
        );
        let costs = run_loop(3_000, 1_000);
        // Only the trials spread: a few windows of a second's worth.
        assert!(costs.spread < costs.total / 20, "spread {:?}", costs.spread);
        assert!(costs.trials >= 5, "trials go on, rarer");
        let light = run_loop(50, 3_000);
        assert_eq!(light.spread, Duration::ZERO, "light load stays local");
    }
}

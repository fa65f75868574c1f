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
//! tries both and keeps the one that pays.
//!
//! # What pays
//!
//! Speed alone is not the measure: spreading a chain of small messages
//! over two workers can handle 10-20% more messages while burning 80% more
//! CPU (the workers pass actors and their cache lines back and forth). A
//! server's other processes, or the other pools of this one, want that
//! CPU. So spreading is kept only when it handles at least [`SPREAD_GAIN`]
//! more messages **and** the CPU it adds does at least [`MARGINAL`] of the
//! work a CPU does locally: with local at `r` messages a second on `c`
//! CPUs and spread at `r'` on `c'`, `(r' - r) / (c' - c) >= MARGINAL * r / c`.
//! Really parallel work (independent pairs of actors, long handlers)
//! passes easily: a second CPU nearly doubles the rate. Where the pool
//! cannot read its workers' CPU time (see `Governed::cpu`), speed alone
//! decides.
//!
//! # How
//!
//! The pool starts local. Every [`WINDOW`] the governor reads how many
//! messages the workers handled and the CPU time they used. When a trial
//! is due it runs three windows: the current way (*before*), the other way
//! (*trial*), the current way again (*after*), each after a short settling
//! pause, and compares the trial with the mean of before and after, so a
//! load that grows or shrinks during the trial does not decide it. A trial
//! that confirms the current way doubles the time to the next one (up to
//! [`MAX_INTERVAL`]); a switch brings trials back to [`MIN_INTERVAL`], to
//! catch a wrong call. A window with fewer than [`LIGHT`] messages means
//! one worker keeps up: the pool goes (or stays) local and the trial is
//! dropped. An idle pool is looked at less and less often, down to every
//! [`IDLE_MAX`].
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

/// The least work the CPU that spreading adds must do, as a share of the
/// work a CPU does locally (see "What pays").
pub(crate) const MARGINAL: f64 = 0.5;

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

/// One measured window: what the workers did in it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Messages handled.
    pub(crate) messages: u64,
    /// CPU time the workers used, if the pool can read it.
    pub(crate) cpu: Option<Duration>,
    /// How long the window lasted.
    pub(crate) length: Duration,
}

/// A window as rates, what trials compare.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    /// Messages a second.
    rate: f64,
    /// CPUs busy on average (CPU time over the window's length).
    cpus: Option<f64>,
}

impl Sample {
    fn of(w: Window) -> Sample {
        let secs = w.length.as_secs_f64().max(1e-9);
        Sample {
            rate: w.messages as f64 / secs,
            cpus: w.cpu.map(|c| c.as_secs_f64() / secs),
        }
    }

    /// The mean of two samples of one mode (CPU only if both have it).
    fn mean(self, other: Sample) -> Sample {
        Sample {
            rate: (self.rate + other.rate) / 2.0,
            cpus: self.cpus.zip(other.cpus).map(|(a, b)| (a + b) / 2.0),
        }
    }
}

/// Whether spreading pays against local (see "What pays"): it handles
/// [`SPREAD_GAIN`] more, and the CPU it adds does at least [`MARGINAL`] of
/// a local CPU's work.
fn spreading_pays(local: Sample, spread: Sample) -> bool {
    if spread.rate < local.rate * SPREAD_GAIN {
        return false;
    }
    match local.cpus.zip(spread.cpus) {
        Some((c, c2)) if c2 > c && c > 0.0 => {
            (spread.rate - local.rate) / (c2 - c) >= MARGINAL * local.rate / c
        }
        // Spreading costs no more CPU (or the CPU is unknown): faster pays.
        _ => true,
    }
}

/// Where the governor is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// In the chosen mode; a trial starts when the count reaches zero.
    Settled { until_trial: u32 },
    /// Measured `before` in the chosen mode; now measuring the other.
    Trying { before: Sample },
    /// Measured both; now measuring the chosen mode again.
    After { before: Sample, trial: Sample },
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

    /// Takes the window just measured and says the mode of the next one.
    pub(crate) fn window(&mut self, window: Window) -> Mode {
        if window.messages < LIGHT {
            // One worker keeps up: local, and no trial on this little.
            self.chosen = Mode::Local;
            self.phase = Phase::Settled {
                until_trial: self.interval,
            };
            return Mode::Local;
        }
        let sample = Sample::of(window);
        match self.phase {
            Phase::Settled { until_trial } if until_trial > 1 => {
                self.phase = Phase::Settled {
                    until_trial: until_trial - 1,
                };
                self.chosen
            }
            Phase::Settled { .. } => {
                self.trials += 1;
                self.phase = Phase::Trying { before: sample };
                self.chosen.other()
            }
            Phase::Trying { before } => {
                self.phase = Phase::After {
                    before,
                    trial: sample,
                };
                self.chosen
            }
            Phase::After { before, trial } => {
                let current = before.mean(sample);
                let trial_mode = self.chosen.other();
                let trial_wins = match trial_mode {
                    Mode::Spread => spreading_pays(current, trial),
                    Mode::Local => !spreading_pays(trial, current),
                };
                tracing::debug!(
                    target: "troupe::governor",
                    chosen = ?self.chosen,
                    current_per_ms = current.rate / 1e3,
                    current_cpus = current.cpus,
                    trial_per_ms = trial.rate / 1e3,
                    trial_cpus = trial.cpus,
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
    /// CPU time the pool's workers have used so far, where the platform
    /// lets the pool read it (`None` elsewhere: speed alone decides).
    fn cpu(&self) -> Option<Duration>;
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
        let cpu_before = pool.cpu();
        let slept = idle_sleep;
        let length = sleep(slept);
        let messages = pool.messages().wrapping_sub(before);
        let cpu = pool
            .cpu()
            .zip(cpu_before)
            .map(|(now, then)| now.saturating_sub(then));
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
        let next = governor.window(Window {
            messages,
            cpu,
            length,
        });
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

    /// A window of `messages` whose CPU time is unknown.
    fn w(messages: u64) -> Window {
        Window {
            messages,
            cpu: None,
            length: MS5,
        }
    }

    /// A window of `messages` on `cpus` CPUs.
    fn wc(messages: u64, cpus: f64) -> Window {
        Window {
            messages,
            cpu: Some(MS5.mul_f64(cpus)),
            length: MS5,
        }
    }

    /// Feeds windows at the given rates (messages per window) and returns
    /// the modes chosen after each.
    fn feed(g: &mut Governor, windows: &[u64]) -> Vec<Mode> {
        windows.iter().map(|&m| g.window(w(m))).collect()
    }

    /// Runs windows until a trial starts, then a trial with these rates
    /// (before, trial, after); returns the mode chosen after it.
    fn trial(g: &mut Governor, steady: u64, before: u64, during: u64, after: u64) -> Mode {
        trial_of(g, w(steady.max(before)), w(during), w(after))
    }

    /// Runs `before` windows until a trial starts, then the trial window
    /// `during` and the window `after`; returns the mode chosen after it.
    fn trial_of(g: &mut Governor, before: Window, during: Window, after: Window) -> Mode {
        let chosen = g.chosen;
        while g.window(before) == chosen {}
        assert_eq!(g.window(during), chosen, "back to the chosen mode");
        g.window(after)
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
    fn spreading_is_kept_only_when_the_cpu_it_adds_does_half_a_cpus_work() {
        let mut g = Governor::new();
        // 20% more messages for 80% more CPU: the added 0.8 CPU does a
        // quarter of what a local CPU does. Local.
        let local = wc(10_000, 1.0);
        assert_eq!(trial_of(&mut g, local, wc(12_000, 1.8), local), Mode::Local);
        // The same gain for no more CPU: spread.
        assert_eq!(
            trial_of(&mut g, local, wc(12_000, 1.0), local),
            Mode::Spread
        );
        // Parallel work: 70% more for a second CPU. Spread, and kept.
        let mut g = Governor::new();
        let spread = wc(17_000, 2.0);
        assert_eq!(trial_of(&mut g, local, spread, local), Mode::Spread);
        assert_eq!(trial_of(&mut g, spread, local, spread), Mode::Spread);
        // Either side of the bar (the added CPU doing 5,000 a window):
        // 10% more for 0.15 CPU pays, for 0.25 CPU it does not.
        let mut g = Governor::new();
        let cheap = wc(11_000, 1.15);
        assert_eq!(trial_of(&mut g, local, cheap, local), Mode::Spread);
        assert_eq!(trial_of(&mut g, cheap, local, cheap), Mode::Spread);
        let mut g = Governor::new();
        assert_eq!(
            trial_of(&mut g, local, wc(11_000, 1.25), local),
            Mode::Local
        );
    }

    #[test]
    fn a_spreading_pool_goes_local_when_spreading_stops_paying_for_its_cpu() {
        let mut g = Governor::new();
        let (local, spread) = (wc(10_000, 1.0), wc(20_000, 2.0));
        assert_eq!(trial_of(&mut g, local, spread, local), Mode::Spread);
        // The load changes: spreading now gains 15% for 0.9 CPU more.
        let (local, spread) = (wc(10_000, 1.0), wc(11_500, 1.9));
        assert_eq!(trial_of(&mut g, spread, local, spread), Mode::Local);
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
            while g.window(w(10_000)) == Mode::Local {
                windows += 1;
            }
            gaps.push(windows);
            g.window(w(10_000));
            assert_eq!(g.window(w(10_000)), Mode::Local);
        }
        assert_eq!(gaps[0], FIRST_TRIAL - 1);
        assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
        assert_eq!(*gaps.last().unwrap(), MAX_INTERVAL - 1, "{gaps:?}");
        // A switch brings the interval back to the minimum.
        loop {
            if g.window(w(10_000)) == Mode::Spread {
                break;
            }
        }
        g.window(w(30_000));
        assert_eq!(g.window(w(10_000)), Mode::Spread);
        let mut windows = 0;
        while g.window(w(30_000)) == Mode::Spread {
            windows += 1;
        }
        assert_eq!(windows, MIN_INTERVAL - 1);
    }

    #[test]
    fn light_load_is_local_and_drops_a_trial() {
        let mut g = Governor::new();
        assert_eq!(trial(&mut g, 10_000, 10_000, 20_000, 10_000), Mode::Spread);
        assert_eq!(g.window(w(LIGHT - 1)), Mode::Local);
        // A trial in progress is dropped by a light window.
        let mut g = Governor::new();
        while g.window(w(10_000)) == Mode::Local {}
        assert_eq!(g.window(w(10)), Mode::Local);
        assert_eq!(g.window(w(10_000)), Mode::Local, "no trial pending");
    }

    /// A pool whose rate depends on the mode, on a made-up clock.
    #[derive(Default)]
    struct Fake {
        messages: u64,
        cpu: Duration,
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
        fn cpu(&self) -> Option<Duration> {
            Some(self.0.lock().unwrap().cpu)
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
    /// `local` and `spread` messages a millisecond, on one CPU locally and
    /// two spread; returns it.
    fn run_loop(local: u64, spread: u64) -> Fake {
        let pool = FakePool(std::sync::Mutex::new(Fake::default()));
        govern(&pool, |d| {
            let mut s = pool.0.lock().unwrap();
            let (per_ms, cpus) = if s.spreading { (spread, 2) } else { (local, 1) };
            s.messages += per_ms * d.as_millis() as u64;
            s.cpu += d * cpus;
            s.total += d;
            d
        });
        pool.0.into_inner().unwrap()
    }

    #[test]
    fn the_loop_spreads_when_spreading_pays_and_only_then() {
        let pays = run_loop(1_000, 1_800);
        assert!(pays.trials >= 2, "trials counted");
        assert!(
            pays.spread > pays.total * 9 / 10,
            "spread {:?}",
            pays.spread
        );
        let costs = run_loop(1_000, 1_300);
        // 30% faster, but the second CPU does less than a third of a local
        // CPU's work: local. Only the trials spread: a few windows of a second's worth.
        assert!(costs.spread < costs.total / 20, "spread {:?}", costs.spread);
        assert!(costs.trials >= 5, "trials go on, rarer");
        let light = run_loop(50, 3_000);
        assert_eq!(light.spread, Duration::ZERO, "light load stays local");
    }
}

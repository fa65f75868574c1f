//! The warm-up rule every row is measured under: warm-up runs until the
//! run-to-run change settles (or a cap), then the measured runs. One rule
//! for troupe, the baselines and the Pekko peer, so that no side is
//! measured colder than another.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::progress::Phase;

/// The fixed number of warm-up runs `--warmup` asked for, or
/// [`usize::MAX`] for the steady-state rule. Process-wide, as the rule's
/// constants are: the flag replaces the rule for every row of the command
/// (troupe's, the baselines' and the peers', which get it as arguments).
static FIXED_RUNS: AtomicUsize = AtomicUsize::new(usize::MAX);

#[cfg(test)]
thread_local! {
    /// A test's own fixed warm-up ([`WarmUp::fixed_within`]), seen only by
    /// the thread that set it, so tests running beside it keep the rule.
    static FIXED_HERE: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The warm-up rule of every row, troupe's and the peers': warm up until two run-to-run changes in a row
/// are below [`WarmUp::STEADY_PCT`] percent (three consecutive runs agree;
/// one pair of similar runs happens by chance while the JIT is still at
/// work), after at least [`WarmUp::MIN_RUNS`] and at most
/// [`WarmUp::MAX_RUNS`] runs. The runner applies it to troupe's and the
/// baselines' rows, the Java peer inside its JVM (it gets these figures as
/// arguments), and the Pekko primes row, whose load comes from this
/// process, in the bench.
pub struct WarmUp;

impl WarmUp {
    /// Two consecutive runs closer than this (percent) end the warm-up.
    pub const STEADY_PCT: f64 = 3.0;
    /// The fewest warm-up runs: the first runs of a JVM are interpreted, and
    /// three runs are needed to see two run-to-run changes.
    pub const MIN_RUNS: usize = 3;
    /// The most warm-up runs, for a machine too noisy to ever settle.
    pub const MAX_RUNS: usize = 15;

    /// Replaces the rule with exactly `runs` warm-up runs for the rest of
    /// the process (`--warmup`): a smoke run checks every result, not
    /// speed, and the rule's up to 15 runs a row are most of its time.
    pub fn fix(runs: usize) {
        FIXED_RUNS.store(runs, Ordering::Relaxed);
    }

    /// Runs `f` with `runs` fixed warm-up runs on this thread only: the
    /// tests that run a whole experiment check what its rows hold, not how
    /// warm they are, and in a debug build the rule's up to 15 runs a row
    /// made pingpong's and chameneos' tiny runs take 54 s and 29 s.
    #[cfg(test)]
    pub fn fixed_within<R>(runs: usize, f: impl FnOnce() -> R) -> R {
        let before = FIXED_HERE.with(|c| c.replace(Some(runs)));
        let result = f();
        FIXED_HERE.with(|c| c.set(before));
        result
    }

    /// The fixed number of warm-up runs, if [`WarmUp::fix`] set one.
    pub fn fixed() -> Option<usize> {
        #[cfg(test)]
        if let Some(runs) = FIXED_HERE.with(|c| c.get()) {
            return Some(runs);
        }
        match FIXED_RUNS.load(Ordering::Relaxed) {
            usize::MAX => None,
            runs => Some(runs),
        }
    }

    /// The fewest and the most warm-up runs in force: the rule's, or the
    /// fixed number twice (what a peer process is given as its bounds).
    pub fn bounds() -> (usize, usize) {
        Self::fixed().map_or((Self::MIN_RUNS, Self::MAX_RUNS), |runs| (runs, runs))
    }

    /// The last two run-to-run changes of `runs`, as fractions.
    fn last_changes(runs: &[f64]) -> Option<(f64, f64)> {
        match runs {
            [.., a, b, c] => Some(((b - a).abs() / a, (c - b).abs() / b)),
            _ => None,
        }
    }

    /// Whether the last three of `runs` agree within the tolerance.
    fn steady(runs: &[f64]) -> bool {
        let tolerance = Self::STEADY_PCT / 100.0;
        Self::last_changes(runs).is_some_and(|(a, b)| a < tolerance && b < tolerance)
    }

    /// Whether the warm-up `runs` so far are enough.
    pub fn done(runs: &[f64]) -> bool {
        Self::done_under(Self::fixed(), runs)
    }

    /// [`WarmUp::done`] with the fixed number of runs given, not read.
    fn done_under(fixed: Option<usize>, runs: &[f64]) -> bool {
        if let Some(fixed) = fixed {
            return runs.len() >= fixed;
        }
        runs.len() >= Self::MAX_RUNS || (runs.len() >= Self::MIN_RUNS && Self::steady(runs))
    }

    /// The protocol line of a row warmed up with `runs` (`what`: "warm-up",
    /// "JVM warm-up") and measured `repeats` times.
    pub fn protocol(what: &str, runs: &[f64], repeats: usize) -> String {
        Self::protocol_under(Self::fixed(), what, runs, repeats)
    }

    /// [`WarmUp::protocol`] with the fixed number of runs given, not read.
    fn protocol_under(fixed: Option<usize>, what: &str, runs: &[f64], repeats: usize) -> String {
        let pct = Self::STEADY_PCT;
        let warm = match Self::last_changes(runs) {
            _ if fixed.is_some() => format!(
                "{what}: {} run(s), fixed by --warmup (not warmed to a steady state)",
                runs.len()
            ),
            Some(_) if Self::steady(runs) => format!(
                "{what}: {} runs, until 3 in a row were within {pct}% run to run",
                runs.len()
            ),
            Some((a, b)) => format!(
                "{what}: {} runs (the cap; last changes {:.1}% and {:.1}%, not both <{pct}%)",
                runs.len(),
                100.0 * a,
                100.0 * b
            ),
            None => format!("{what}: {} run(s)", runs.len()),
        };
        let s = if repeats == 1 { "" } else { "s" };
        format!("{warm}; then {repeats} measured run{s}")
    }
}

/// The runs of one row in order: warm-up runs until the [`WarmUp`] rule is
/// met on the warm-ups recorded so far, then `repeats` measured runs. The
/// one sequence every measuring loop follows (the runner's, and trading's
/// and primes', which keep more than a sample per run).
pub struct Phases {
    repeats: u32,
    measured: u32,
    warmups_ns: Vec<f64>,
}

impl Phases {
    /// The runs of a row with `repeats` measured runs.
    pub fn new(repeats: u32) -> Self {
        Phases {
            repeats,
            measured: 0,
            warmups_ns: Vec::new(),
        }
    }

    /// The phase of the next run, or `None` when the row is done. After a
    /// warm-up run, [`Phases::warmed`] must record it before this is asked
    /// again.
    pub fn next_phase(&mut self) -> Option<Phase> {
        if !WarmUp::done(&self.warmups_ns) {
            Some(Phase::WarmUp)
        } else if self.measured < self.repeats {
            self.measured += 1;
            Some(Phase::Measured {
                run: self.measured,
                of: self.repeats,
            })
        } else {
            None
        }
    }

    /// Records a finished warm-up run's nanoseconds per message.
    pub fn warmed(&mut self, ns_per_msg: f64) {
        self.warmups_ns.push(ns_per_msg);
    }

    /// The warm-up runs' figures, for the row's protocol line.
    pub fn into_warmups_ns(self) -> Vec<f64> {
        self.warmups_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_ends_only_when_three_runs_in_a_row_agree() {
        // Two similar cold runs are not enough: the third must agree too.
        assert!(!WarmUp::done_under(None, &[500.0, 200.0, 201.0]));
        assert!(WarmUp::done_under(None, &[500.0, 200.0, 201.0, 202.0]));
        // Fewer than the minimum never ends it, however steady.
        assert!(!WarmUp::done_under(None, &[100.0, 100.0]));
        // A machine that never settles stops at the cap, and says so.
        let noisy: Vec<f64> = (0..WarmUp::MAX_RUNS)
            .map(|i| if i % 2 == 0 { 100.0 } else { 150.0 })
            .collect();
        assert!(!WarmUp::done_under(None, &noisy[..WarmUp::MAX_RUNS - 1]));
        assert!(WarmUp::done_under(None, &noisy));
        assert!(WarmUp::protocol_under(None, "JVM warm-up", &noisy, 5).contains("the cap"));
        assert_eq!(
            WarmUp::protocol_under(None, "JVM warm-up", &[500.0, 200.0, 201.0, 202.0], 5),
            "JVM warm-up: 4 runs, until 3 in a row were within 3% run to run; then 5 measured runs"
        );
    }

    #[test]
    fn a_fixed_warm_up_ends_after_its_runs_however_unsteady() {
        // `--warmup 1`: one run, even a cold one far from the next.
        assert!(!WarmUp::done_under(Some(1), &[]));
        assert!(WarmUp::done_under(Some(1), &[500.0]));
        // A fixed count above the rule's minimum is waited for in full.
        assert!(!WarmUp::done_under(Some(4), &[100.0, 100.0, 100.0]));
        assert!(WarmUp::done_under(Some(4), &[100.0, 100.0, 100.0, 100.0]));
    }
}

//! The measurement loop every experiment shares: warm-up runs until the
//! run-to-run change settles ([`WarmUp`]), then `repeats` measured runs of a
//! workload, every raw sample kept, and the
//! summary statistics (median, min, max) computed from those samples.
//!
//! # Ground rules
//!
//! - A workload times only its own critical section with a [`Stopwatch`] and
//!   returns a [`Sample`]. Setup (spawning threads, building a runtime) and
//!   teardown stay outside the clock, and the runner does not guess where they
//!   end: the workload knows, the runner does not.
//! - A workload validates its own result and returns a [`WorkloadError`] when
//!   it is wrong. The runner stops the whole experiment at the first failure,
//!   because a number from a wrong run is worse than no number.
//! - No sample is ever dropped: there is no outlier removal, so a noisy machine
//!   shows up as a wide min..max range instead of a flattering median.
//! - Every run of one workload must move the same number of messages; a
//!   workload whose count drifts is reported as broken rather than averaged.

use std::error::Error;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::progress::Phase;
use crate::warmup::{Phases, WarmUp};

/// What one run of a workload produced: how many messages it moved and how
/// long the timed part took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Messages moved during the timed part (for ping-pong, one-way hops).
    pub msgs: u64,
    /// Wall-clock time of the timed part.
    pub elapsed: Duration,
}

impl Sample {
    /// Nanoseconds per message of this sample.
    ///
    /// The runner rejects samples with zero messages before calling this, so
    /// the division is always defined.
    pub fn ns_per_msg(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.msgs as f64
    }
}

/// The clock a workload starts right before its critical section and stops
/// right after it.
///
/// It is a thin wrapper over [`Instant`] so that every workload measures the
/// same way, and so that the messages moved are recorded together with the
/// time they took.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    started: Instant,
}

impl Stopwatch {
    /// Starts the clock.
    pub fn start() -> Self {
        Stopwatch {
            started: Instant::now(),
        }
    }

    /// Stops the clock and records that `msgs` messages moved meanwhile.
    pub fn stop(self, msgs: u64) -> Sample {
        Sample {
            msgs,
            elapsed: self.started.elapsed(),
        }
    }
}

/// A workload's run went wrong: its own validation failed, a thread panicked,
/// or its setup could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadError {
    message: String,
}

impl WorkloadError {
    /// An error with a message that says what was expected and what happened.
    pub fn new(message: impl Into<String>) -> Self {
        WorkloadError {
            message: message.into(),
        }
    }

    /// Prefixes the message with where it happened (experiment, row, run), so
    /// that a failure in a long sweep names the row that broke.
    pub fn context(self, context: &str) -> Self {
        WorkloadError {
            message: format!("{context}: {}", self.message),
        }
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for WorkloadError {}

/// Fails with a validation error unless `actual == expected`.
///
/// `what` names the quantity in words ("final pong value"), so that the
/// message reads as a sentence: "validation failed: final pong value was 7,
/// expected 9".
pub fn expect_eq(what: &str, expected: u64, actual: u64) -> Result<(), WorkloadError> {
    if actual == expected {
        Ok(())
    } else {
        Err(WorkloadError::new(format!(
            "validation failed: {what} was {actual}, expected {expected}"
        )))
    }
}

/// One measured run of a workload: returns the sample or why it failed.
pub type RunFn = Box<dyn FnMut() -> Result<Sample, WorkloadError>>;

/// Prepares a workload (outside the clock) and returns the closure to measure.
pub type SetupFn = Box<dyn FnOnce() -> Result<RunFn, WorkloadError>>;

/// One row of an experiment before it runs: its variant name, the parameters
/// that define it, and how to run it.
///
/// The setup closure runs when the row starts (not when the list of rows is
/// built), so that a long sweep never holds every row's threads at once and a
/// filtered-out row costs nothing. Whatever the measured closure captures is
/// dropped when the row ends, which is where a workload tears down its
/// threads or runtime.
pub struct Workload {
    /// The row's variant.
    pub variant: String,
    /// The parameters recorded in the row.
    pub params: Map<String, Value>,
    /// Builds the measured closure when the row starts.
    pub setup: SetupFn,
}

impl Workload {
    /// A workload that needs no setup: `run` is measured as it is.
    pub fn new(
        variant: impl Into<String>,
        run: impl FnMut() -> Result<Sample, WorkloadError> + 'static,
    ) -> Self {
        Workload::with_setup(variant, move || Ok(run))
    }

    /// A workload whose `setup` runs once, outside the clock, before the
    /// warm-up, and returns the closure that is then measured.
    pub fn with_setup<R>(
        variant: impl Into<String>,
        setup: impl FnOnce() -> Result<R, WorkloadError> + 'static,
    ) -> Self
    where
        R: FnMut() -> Result<Sample, WorkloadError> + 'static,
    {
        Workload {
            variant: variant.into(),
            params: Map::new(),
            setup: Box::new(move || setup().map(|run| Box::new(run) as RunFn)),
        }
    }

    /// Records a parameter that produced this row (workers, throughput,
    /// pairs, repetitions, ...); it is written to the row's `params` object.
    pub fn param(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.params.insert(key.to_string(), value.into());
        self
    }

    /// The variant name, unique within its experiment.
    pub fn variant(&self) -> &str {
        &self.variant
    }
}

/// How an experiment is run, independent of what it runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Measured runs per row, after the warm-up; at least 1.
    pub repeats: u32,
    /// Run only the rows whose variant contains this text.
    pub filter: Option<String>,
}

/// How large the workloads are; each experiment maps it to its own sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Small sizes for CI smoke runs: seconds, not minutes.
    Quick,
    /// The default: the whole experiment in well under a minute on 2 cores.
    Default,
    /// The sizes of the original post, however long they take.
    Full,
}

/// Every sample of one row: the warm-up and the measured runs, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The last warm-up sample, kept for the record.
    pub warmup: Sample,
    /// Nanoseconds per message of every warm-up run, in order (the last is
    /// `warmup`'s): what the row's protocol line is made from.
    pub warmups_ns: Vec<f64>,
    /// The measured samples, in the order they ran.
    pub samples: Vec<Sample>,
    /// What each measured run cost (CPU time, dispatcher counters), in the
    /// same order; empty where the runs were not observed (Pekko's).
    pub costs: Vec<crate::cost::Spent>,
}

impl Measurement {
    /// A measurement with one warm-up run.
    pub fn new(warmup: Sample, samples: Vec<Sample>) -> Self {
        Measurement {
            warmup,
            warmups_ns: vec![warmup.ns_per_msg()],
            samples,
            costs: Vec::new(),
        }
    }

    /// The protocol line: "1 warm-up, then 5 measured runs", or how the
    /// [`WarmUp`] rule ended.
    pub fn protocol(&self) -> String {
        let n = self.samples.len();
        if self.warmups_ns.len() == 1 && WarmUp::fixed().is_none() {
            format!(
                "1 warm-up, then {n} measured run{}",
                if n == 1 { "" } else { "s" }
            )
        } else {
            WarmUp::protocol("warm-up", &self.warmups_ns, self.samples.len())
        }
    }

    /// Messages per run (the same for every run, which [`measure`] checks).
    pub fn msgs(&self) -> u64 {
        self.warmup.msgs
    }

    /// Nanoseconds per message of each measured run, in run order.
    pub fn ns_per_msg(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::ns_per_msg).collect()
    }
}

/// Median, minimum and maximum of a set of values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The middle value, or the mean of the two middle values for an even count.
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

/// Summarises `values`, or returns `None` when there are none.
///
/// The median is the conventional one: for an even count it is the mean of the
/// two middle values, so that it does not lean towards either side.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    Some(Summary {
        median,
        min: sorted[0],
        max: sorted[n - 1],
    })
}

/// Runs `run` to warm up until the [`WarmUp`] rule is met and then
/// `repeats` times measured, calling `on_phase` before each run.
///
/// Fails on the first run that fails, on a run that moved no messages, and on
/// a run whose message count differs from the first warm-up's.
pub fn measure(
    repeats: u32,
    run: &mut dyn FnMut() -> Result<Sample, WorkloadError>,
    on_phase: &mut dyn FnMut(Phase),
) -> Result<Measurement, WorkloadError> {
    if repeats == 0 {
        return Err(WorkloadError::new("at least one measured run is needed"));
    }
    let mut phases = Phases::new(repeats);
    let mut warmup: Option<Sample> = None;
    let mut samples = Vec::with_capacity(repeats as usize);
    let mut costs = Vec::with_capacity(repeats as usize);
    while let Some(phase) = phases.next_phase() {
        on_phase(phase);
        let context = match phase {
            Phase::WarmUp => "warm-up run".to_string(),
            Phase::Measured { run, of } => format!("run {run}/{of}"),
        };
        let cost = crate::cost::Cost::now();
        let sample = run().map_err(|e| e.context(&context))?;
        let spent = cost.spent();
        if sample.msgs == 0 {
            return Err(WorkloadError::new(format!(
                "{context}: validation failed: the run moved no messages"
            )));
        }
        // Every run moves as many messages as the first warm-up.
        if let Some(first) = warmup.filter(|w| w.msgs != sample.msgs) {
            return Err(WorkloadError::new(format!(
                "{context}: validation failed: moved {} messages, but the warm-up moved {}",
                sample.msgs, first.msgs
            )));
        }
        match phase {
            Phase::WarmUp => {
                phases.warmed(sample.ns_per_msg());
                warmup = Some(sample);
            }
            Phase::Measured { .. } => {
                samples.push(sample);
                costs.push(spent);
            }
        }
    }
    let warmup = warmup.expect("the rule asks for at least one warm-up run");
    let warmups_ns = phases.into_warmups_ns();
    Ok(Measurement {
        warmup,
        warmups_ns,
        samples,
        costs,
    })
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Taken by the tests that run whole experiments, one at a time: their
    /// baselines spin on a core each, and two such tests beside each other
    /// on a 2-core machine made every spinning hop wait for a scheduler
    /// tick (pingpong's and chameneos' tiny runs took 3 s alone and 30 s
    /// together).
    pub fn one_experiment_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        MACHINE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run of `msgs` messages that took `nanos` nanoseconds.
    pub fn sample(msgs: u64, nanos: u64) -> Sample {
        Sample {
            msgs,
            elapsed: Duration::from_nanos(nanos),
        }
    }

    #[test]
    fn median_of_an_odd_count_is_the_middle_value() {
        let s = summarize(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
    }

    #[test]
    fn median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let s = summarize(&[4.0, 1.0, 10.0, 2.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 10.0);
    }

    #[test]
    fn summary_of_one_value_is_that_value() {
        let s = summarize(&[7.5]).unwrap();
        assert_eq!((s.median, s.min, s.max), (7.5, 7.5, 7.5));
    }

    #[test]
    fn summary_of_nothing_is_none() {
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn summary_keeps_outliers() {
        let s = summarize(&[1.0, 1.0, 1.0, 1.0, 1000.0]).unwrap();
        assert_eq!(s.median, 1.0);
        assert_eq!(s.max, 1000.0);
    }

    #[test]
    fn ns_per_msg_divides_elapsed_by_messages() {
        assert_eq!(sample(4, 1000).ns_per_msg(), 250.0);
    }

    #[test]
    fn measure_warms_up_until_three_runs_agree_then_keeps_every_measured_sample() {
        // Cold runs get faster, then settle at 100 ns per run from the
        // fourth; the rule ends the warm-up at the sixth (three in a row
        // within 3%), and every measured run after it is kept.
        let times = [900u64, 400, 200, 100, 101, 100, 100, 150, 100];
        let mut calls = 0usize;
        let mut run = || {
            calls += 1;
            Ok(sample(10, times[calls - 1] * 10))
        };
        let mut phases = Vec::new();
        let m = measure(3, &mut run, &mut |p| phases.push(p)).unwrap();
        assert_eq!(m.warmups_ns, vec![900.0, 400.0, 200.0, 100.0, 101.0, 100.0]);
        assert_eq!(m.warmup, sample(10, 1000));
        assert_eq!(m.ns_per_msg(), vec![100.0, 150.0, 100.0]);
        let mut expected = vec![Phase::WarmUp; 6];
        expected.extend((1..=3).map(|run| Phase::Measured { run, of: 3 }));
        assert_eq!(phases, expected);
        assert_eq!(
            m.protocol(),
            "warm-up: 6 runs, until 3 in a row were within 3% run to run; then 3 measured runs"
        );
    }

    #[test]
    fn measure_stops_at_the_first_failed_run_and_names_it() {
        let mut calls = 0;
        let mut run = || {
            calls += 1;
            // Three equal warm-up runs meet the rule; the fifth call is
            // the second measured run.
            if calls == 5 {
                Err(WorkloadError::new(
                    "validation failed: count was 1, expected 2",
                ))
            } else {
                Ok(sample(2, 10))
            }
        };
        let err = measure(5, &mut run, &mut |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            "run 2/5: validation failed: count was 1, expected 2"
        );
        assert_eq!(calls, 5);
    }

    #[test]
    fn measure_rejects_runs_that_move_no_messages() {
        let err = measure(1, &mut || Ok(sample(0, 10)), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("no messages"), "{err}");
    }

    #[test]
    fn measure_rejects_a_drifting_message_count() {
        let mut calls = 0;
        let mut run = || {
            calls += 1;
            Ok(sample(calls, 10))
        };
        let err = measure(2, &mut run, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("warm-up moved 1"), "{err}");
    }

    #[test]
    fn measure_needs_at_least_one_run() {
        assert!(measure(0, &mut || Ok(sample(1, 1)), &mut |_| {}).is_err());
    }

    #[test]
    fn expect_eq_reads_as_a_sentence() {
        assert_eq!(expect_eq("pong", 3, 3), Ok(()));
        assert_eq!(
            expect_eq("final pong value", 9, 7).unwrap_err().to_string(),
            "validation failed: final pong value was 7, expected 9"
        );
    }
}

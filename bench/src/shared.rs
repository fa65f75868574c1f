//! Helpers several experiments share: running a list of workloads into
//! rows, a fault row's figures (one time per kill), the guard that stops an actor system when a row is done with it,
//! the number formats of the tables, the lines and the
//! report's charts, and a countdown a row waits on for its actors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use troupe::ActorSystem;

use crate::core_latency;
use crate::progress::Progress;
use crate::report::Row;
use crate::runner::{
    measure, summarize, Measurement, RunOptions, Sample, Summary, Workload, WorkloadError,
};

/// Shuts the system down when a row's closure is dropped.
pub struct SystemGuard(pub ActorSystem);

impl Drop for SystemGuard {
    fn drop(&mut self) {
        self.0.shutdown();
        if let Err(e) = self.0.await_termination_timeout(Duration::from_secs(60)) {
            eprintln!("troupe-bench: the actor system did not stop: {e}");
        }
    }
}

/// Writes `n` with a comma every three digits (1,000,000).
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A compact number: 1.2M, 35k, 0.42, 1,234.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.001 {
        format!("{v:.3}")
    } else {
        format!("{v:.1e}")
    }
}

/// A fault row's figures: one time per fault (a kill's failover or
/// outage), the first a warm-up as every row's first run is. Returns the
/// measurement (for the row's ns-per-message columns), the measured
/// faults' times in milliseconds and their summary. `times` must hold at
/// least two faults.
pub fn per_fault(times: Vec<Duration>) -> (Measurement, Vec<f64>, Summary) {
    let mut runs = times.into_iter().map(|elapsed| Sample { msgs: 1, elapsed });
    let warmup = runs.next().expect("a warm-up fault");
    let measurement = Measurement::new(warmup, runs.collect());
    let ms: Vec<f64> = measurement.ns_per_msg().iter().map(|ns| ns / 1e6).collect();
    let summary = summarize(&ms).expect("at least one measured fault");
    (measurement, ms, summary)
}

/// Runs every selected workload of `experiment` in order and returns one row
/// per workload, showing progress on a terminal.
///
/// A workload is selected when `options.filter` is unset or occurs in its
/// variant name; no selected workload gives an empty result, not an error,
/// so that `all` can apply one filter across experiments.
pub fn run_experiment(
    experiment: &str,
    workloads: Vec<Workload>,
    options: &RunOptions,
) -> Result<Vec<Row>, WorkloadError> {
    let selected: Vec<Workload> = workloads
        .into_iter()
        .filter(|w| {
            options
                .filter
                .as_deref()
                .is_none_or(|f| w.variant().contains(f))
        })
        .collect();
    let mut progress = Progress::new(experiment, selected.len(), options.repeats);
    let mut rows = Vec::with_capacity(selected.len());
    for (index, workload) in selected.into_iter().enumerate() {
        let Workload {
            variant,
            params,
            setup,
        } = workload;
        progress.start_row(index, &variant);
        let context = format!("{experiment}/{variant}");
        let rtt = core_latency::Around::start();
        let result = setup().map_err(|e| e.context("setup")).and_then(|mut run| {
            measure(options.repeats, &mut run, &mut |phase| {
                progress.phase(phase)
            })
        });
        let rtt = rtt.finish();
        // The progress line is cleared before the error travels up, so that
        // the message is not printed over a half-drawn status line.
        let measurement = result.map_err(|e| {
            progress.finish();
            e.context(&context)
        })?;
        let mut row = Row::new(experiment, &variant, params, &measurement);
        row.params.insert(core_latency::PARAM.into(), rtt);
        rows.push(row);
    }
    progress.finish();
    Ok(rows)
}

/// The longest a run of a workload that waits for its actors may take.
pub const DEADLINE: Duration = Duration::from_secs(600);

/// Counts down to zero; [`Countdown::wait`] returns then.
pub struct Countdown {
    left: AtomicUsize,
    zero: (Mutex<bool>, Condvar),
}

impl Countdown {
    /// A countdown at zero; [`Countdown::arm`] sets it.
    pub fn new() -> Self {
        Countdown {
            left: AtomicUsize::new(0),
            zero: (Mutex::new(false), Condvar::new()),
        }
    }

    /// Starts counting down from `n`.
    pub fn arm(&self, n: usize) {
        *self.zero.0.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.left.store(n, Ordering::Release);
    }

    /// One of the `n` is done.
    pub fn count_down(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.zero.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.zero.1.notify_all();
        }
    }

    /// Waits until the count is zero, at most [`DEADLINE`].
    pub fn wait(&self, what: &str) -> Result<(), WorkloadError> {
        let done = self.zero.0.lock().unwrap_or_else(|e| e.into_inner());
        let (done, _) = self
            .zero
            .1
            .wait_timeout_while(done, DEADLINE, |d| !*d)
            .unwrap_or_else(|e| e.into_inner());
        if *done {
            Ok(())
        } else {
            Err(WorkloadError::new(format!(
                "{what} did not finish within {} s",
                DEADLINE.as_secs()
            )))
        }
    }
}

impl Default for Countdown {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::tests::sample;
    use crate::runner::Sample;

    #[test]
    fn numbers_are_short() {
        assert_eq!(short(1_500_000.0), "1.5M");
        assert_eq!(short(35_000.0), "35k");
        assert_eq!(short(0.25), "0.250");
        assert_eq!(short(62.84), "62.8");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(12_345_678), "12,345,678");
    }

    #[test]
    fn run_experiment_applies_the_filter_and_records_params() {
        let workloads = vec![
            Workload::new("alpha", || Ok(sample(4, 40))).param("workers", 2),
            Workload::with_setup("beta", || Ok(|| Ok(sample(4, 80)))),
        ];
        let options = RunOptions {
            repeats: 2,
            filter: Some("alp".to_string()),
        };
        let rows = run_experiment("demo", workloads, &options).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].variant, "alpha");
        assert_eq!(rows[0].params["workers"], 2);
        assert_eq!(rows[0].samples_ns_per_msg, vec![10.0, 10.0]);
    }

    #[test]
    fn run_experiment_names_the_row_that_failed() {
        let workloads = vec![Workload::with_setup("broken", || {
            Err::<fn() -> Result<Sample, WorkloadError>, _>(WorkloadError::new("no threads"))
        })];
        let options = RunOptions {
            repeats: 1,
            filter: None,
        };
        let err = run_experiment("demo", workloads, &options).unwrap_err();
        assert_eq!(err.to_string(), "demo/broken: setup: no threads");
    }
}

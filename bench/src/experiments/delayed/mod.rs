//! The delayed-messages experiment (see docs/experiments.md, delayed):
//! N jobs go to a round-robin pool of workers; each worker answers its job
//! with a reply to a manager scheduled one second later (the scheduler, not
//! a sleeping thread); the manager counts completions, reports progress
//! every 5%, and the run reports the total time, completions per second, how
//! late the replies reached the manager (`late_*`, the figure compared with
//! Pekko, which measures the same; troupe's rows also report how late the
//! timers fired, `fired_*`), and memory.
//!
//! Every row runs in a fresh child process (the hidden `delayed-probe`
//! subcommand) so that its peak resident memory is its own and not the
//! leftovers of earlier rows. Rows:
//!
//! - `actor`: troupe; worker mailboxes are bounded and the producer waits for
//!   room, so a producer faster than the workers is slowed down. On the
//!   default pool (a worker per core).
//! - `actor-w1`: the same on a pool of one worker: whether the second
//!   worker pays, read in one run.
//! - `tokio-sleep`: the baseline without actors, a tokio task per job that
//!   sleeps for the delay and then sends its completion over a channel.
//!
//! A sampler thread records, every 50 ms, jobs sent, jobs completed and
//! resident memory: the memory-over-time series, and bytes per in-flight job
//! (resident growth over the start, divided by jobs in flight, at the
//! sample with the most jobs in flight).

mod experiment;
pub mod peer;
pub mod probe;
pub mod rust_peers;

pub use experiment::Delayed;

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::report::Row;
use crate::progress::Phase;
use crate::runner::{summarize, Measurement, RunOptions, Sample, Scale, WorkloadError};

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "delayed";

/// Parameters of a run.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Jobs per run.
    pub jobs: u64,
    /// Workers in the pool.
    pub workers: usize,
    /// Capacity of each worker's mailbox.
    pub capacity: usize,
    /// The delay of each reply.
    pub delay: Duration,
}

impl Settings {
    /// The sizes for a scale; `Full` is the post's ten million jobs.
    pub fn for_scale(scale: Scale) -> Self {
        let jobs = match scale {
            Scale::Quick => 100_000,
            Scale::Default => 1_000_000,
            Scale::Full => 10_000_000,
        };
        Settings {
            jobs,
            workers: 8,
            capacity: 1_000,
            delay: Duration::from_secs(1),
        }
    }
}

/// The rows, in the order they run.
pub const VARIANTS: [&str; 3] = ["actor", "actor-w1", "tokio-sleep"];

/// The pool threads a variant's workload runs on (troupe's default pool and
/// tokio's multi-thread runtime both take one per core).
pub fn threads(variant: &str) -> usize {
    match variant {
        "actor-w1" => 1,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Runs each variant `1 + repeats` times (one warm-up) in child processes
/// and returns one row per variant.
pub fn run(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let mut rows = Vec::new();
    for variant in VARIANTS {
        if options
            .filter
            .as_deref()
            .is_some_and(|f| !variant.contains(f))
        {
            continue;
        }
        // The machine's mode around the row (docs/experiments.md, "Reading
        // the figures"): the driver thread and the workers share the CPUs.
        let rtt = crate::core_latency::Around::start();
        let mut outcomes = Vec::new();
        for run in 0..=options.repeats {
            // No status bar here: each run is a child process whose manager
            // prints its own progress every 5% of the jobs, as in the post.
            let phase = Phase::nth(run, options.repeats);
            eprintln!("delayed/{variant}: {phase}, {} jobs", sizes.jobs);
            let outcome = probe::run_child(variant, sizes)
                .map_err(|e| e.context(&format!("{EXPERIMENT}/{variant}: {phase}")))?;
            outcomes.push(outcome);
        }
        let mut row = row(variant, sizes, &outcomes);
        row.params
            .insert(crate::core_latency::PARAM.into(), rtt.finish());
        rows.push(row);
    }
    Ok(rows)
}

/// Summarises a variant's runs (the first is the warm-up) into a row.
fn row(variant: &str, sizes: &Settings, outcomes: &[probe::Outcome]) -> Row {
    let sample = |o: &probe::Outcome| Sample {
        msgs: o.jobs,
        elapsed: Duration::from_secs_f64(o.total_s),
    };
    let measurement = Measurement::new(
        sample(&outcomes[0]),
        outcomes[1..].iter().map(sample).collect(),
    );
    let measured = &outcomes[1..];
    let median = |f: fn(&probe::Outcome) -> f64| {
        let values: Vec<f64> = measured.iter().map(f).collect();
        summarize(&values).map_or(f64::NAN, |s| s.median)
    };
    let mut params = Map::new();
    // The scheduler-driven actors are troupe's; the task per job is tokio's.
    let runtime = if variant.starts_with("actor") {
        "troupe"
    } else {
        "baseline"
    };
    params.insert("runtime".into(), json!(runtime));
    params.insert("jobs".into(), json!(sizes.jobs));
    // The threads that run the workload; `workers` below counts worker
    // actors, not threads.
    params.insert("threads".into(), json!(threads(variant)));
    params.insert("workers".into(), json!(sizes.workers));
    params.insert("mailbox_capacity".into(), json!(sizes.capacity));
    params.insert("delay_ms".into(), json!(sizes.delay.as_millis() as u64));
    params.insert("total_s".into(), json!(median(|o| o.total_s)));
    params.insert(
        "completions_per_s".into(),
        json!(median(|o| o.jobs as f64 / o.total_s)),
    );
    // `late_*` is how late the replies reached the manager, the quantity
    // the Pekko row reports too; `fired_*` (troupe and tokio only) is how
    // late the timers fired, before the delivery to the manager.
    params.insert("late_p50_ms".into(), json!(median(|o| o.arrival_p50_ms)));
    params.insert("late_p99_ms".into(), json!(median(|o| o.arrival_p99_ms)));
    params.insert("late_max_ms".into(), json!(median(|o| o.arrival_max_ms)));
    params.insert("fired_p50_ms".into(), json!(median(|o| o.fired_p50_ms)));
    params.insert("fired_p99_ms".into(), json!(median(|o| o.fired_p99_ms)));
    params.insert("fired_max_ms".into(), json!(median(|o| o.fired_max_ms)));
    params.insert("peak_rss_mb".into(), json!(median(|o| o.peak_rss_mb)));
    params.insert("bytes_per_job".into(), json!(median(|o| o.bytes_per_job)));
    params.insert(
        "max_in_flight".into(),
        json!(median(|o| o.max_in_flight as f64)),
    );
    params.insert(
        "runs".into(),
        Value::Array(measured.iter().map(|o| json!(o)).collect()),
    );
    let mut row = Row::new(EXPERIMENT, variant, params, &measurement);
    row.protocol = format!(
        "1 warm-up, then {} measured runs, each in a fresh process",
        measured.len()
    );
    row
}

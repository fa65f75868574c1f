//! Delayed messages: N jobs go round-robin to 8 worker actors; each worker
//! answers its job with a reply to a manager actor scheduled one second
//! later with its library's timer; the manager counts distinct replies and
//! how late each arrived (arrival time minus due time, the quantity
//! troupe's and Pekko's rows report as `late_*`). Every job must be
//! answered exactly once.
//!
//! Arguments: `--jobs 1000000 --delay-ms 1000 --threads 2`. RESULT: `jobs`,
//! `threads`, `total_s`, `completions_per_s`, `late_p50_ms`, `late_p99_ms`,
//! `late_max_ms` (medians over the measured runs), `peak_rss_mb` (the
//! process's peak, over all its runs), the protocol's fields.

mod actix;
mod kameo;
mod ractor;

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::Check;
use crate::steady::{median, quantile, Steady};
use crate::Library;

/// The worker actors.
pub const WORKERS: usize = 8;

/// What the manager saw in a run.
pub struct Seen {
    /// How late each distinct reply arrived, in ns, in arrival order.
    pub late_ns: Vec<f64>,
    /// Replies for a job already answered.
    pub duplicates: u64,
}

/// The manager's bookkeeping, the same for every library.
pub struct Tally {
    seen: Vec<bool>,
    late_ns: Vec<f64>,
    duplicates: u64,
}

impl Tally {
    /// A tally of `jobs` jobs.
    pub fn new(jobs: usize) -> Tally {
        Tally {
            seen: vec![false; jobs],
            late_ns: Vec::with_capacity(jobs),
            duplicates: 0,
        }
    }

    /// Records the reply to `id`, due at `due`; true when it was the last.
    pub fn reply(&mut self, id: usize, due: Instant) -> bool {
        if std::mem::replace(&mut self.seen[id], true) {
            self.duplicates += 1;
            return false;
        }
        let now = Instant::now();
        self.late_ns
            .push(now.saturating_duration_since(due).as_nanos() as f64);
        self.late_ns.len() == self.seen.len()
    }

    /// What was seen.
    pub fn into_seen(self) -> Seen {
        Seen {
            late_ns: self.late_ns,
            duplicates: self.duplicates,
        }
    }
}

/// One run of a library: the seconds from the first job sent to the last
/// reply, and what the manager saw.
pub trait Runs {
    /// One run of `jobs` jobs, each answered after `delay`.
    fn run(&mut self, jobs: usize, delay: Duration) -> Result<(f64, Seen), String>;
}

/// The peak resident set of this process, in MB (Linux).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().strip_suffix("kB"))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib * 1024.0 / 1e6)
}

/// Runs on `library` and returns the RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let jobs = a.num("jobs", 1_000_000)?.max(1) as usize;
    let delay = Duration::from_millis(a.num("delay-ms", 1000)?);
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let mut lib: Box<dyn Runs> = match library {
        Library::Kameo => Box::new(kameo::Runner::new(threads)?),
        Library::Ractor => Box::new(ractor::Runner::new(threads)?),
        Library::Actix => Box::new(actix::Runner::new(threads)),
    };
    let mut checks = Check::default();
    let (mut totals, mut p50, mut p99, mut max) = (vec![], vec![], vec![], vec![]);
    let what = format!("{} delayed", library.name());
    let measured = steady.measure(&what, |measured| {
        let (total, seen) = lib.run(jobs, delay)?;
        let answered = seen.late_ns.len();
        checks.that(answered == jobs, || {
            format!("{answered} distinct jobs answered of {jobs}")
        });
        checks.that(seen.duplicates == 0, || {
            format!("{} jobs answered twice", seen.duplicates)
        });
        if measured {
            let mut late = seen.late_ns;
            late.sort_by(f64::total_cmp);
            p50.push(quantile(&late, 0.5) / 1e6);
            p99.push(quantile(&late, 0.99) / 1e6);
            max.push(late.last().copied().unwrap_or(f64::NAN) / 1e6);
            totals.push(total);
        }
        Ok(total * 1e9 / jobs as f64)
    })?;
    let total = median(&totals);
    let mut json = Map::new();
    json.insert("experiment".into(), json!("delayed"));
    json.insert("jobs".into(), json!(jobs));
    json.insert("threads".into(), json!(threads));
    json.insert("total_s".into(), json!(total));
    json.insert("completions_per_s".into(), json!(jobs as f64 / total));
    json.insert("late_p50_ms".into(), json!(median(&p50)));
    json.insert("late_p99_ms".into(), json!(median(&p99)));
    json.insert("late_max_ms".into(), json!(median(&max)));
    json.insert("peak_rss_mb".into(), json!(peak_rss_mb()));
    measured.write_json(&mut json, "");
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

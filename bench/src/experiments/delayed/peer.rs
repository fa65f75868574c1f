//! The delayed experiment's Apache Pekko row: the peer's delayed messages,
//! warmed up and measured in one JVM by the peers' protocol
//! ([`crate::peer::WarmUp`]). Its `late_*` figures are how late the replies
//! reached the manager, the same quantity as troupe's `late_*`.

use serde_json::{json, Map, Value};

use super::{Settings, EXPERIMENT};
use crate::peer::{params, row, run, PROTOCOL};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// The figures of a delayed peer's RESULT that its row keeps, whichever
/// the peer.
pub const FIGURES: [&str; 7] = [
    "jobs",
    "threads",
    "total_s",
    "completions_per_s",
    "late_p50_ms",
    "late_p99_ms",
    "late_max_ms",
];

/// The Pekko row, with as many measured runs as troupe's rows. Unlike
/// troupe's rows (a fresh process per run), the measured runs share one JVM,
/// since a fresh JVM per run would measure the JIT rather than Pekko. That
/// JVM's peak memory is the peak over all its runs (the heap grows towards
/// its limit as they pile up garbage), which is not comparable with one
/// troupe run's; so the row's `peak_rss_mb` comes from one more run in a
/// fresh JVM, as troupe's, and the shared JVM's is kept as
/// `peak_rss_mb_all_runs`.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let jobs = sizes.jobs.to_string();
    let delay = sizes.delay.as_millis().to_string();
    let repeats = options.repeats.to_string();
    let base = ["delayed", "--jobs", &jobs, "--delay-ms", &delay];
    let mut measured = base.to_vec();
    measured.extend(["--repeats", &repeats]);
    let r = run(&measured)?;
    // One cold run, for memory only: no warm-up, one measured run (the
    // caller's options win over the protocol's).
    let mut cold = base.to_vec();
    cold.extend(["--repeats", "1", "--min-warmup", "0", "--max-warmup", "0"]);
    let memory = run(&cold)?;
    let mut p = params(&r, &FIGURES);
    p.extend(params(&r, &PROTOCOL));
    memory_from_fresh_run(&mut p, &r, &memory, "JVM");
    Ok(vec![row(EXPERIMENT, "pekko", "actor", sizes.jobs, p)?])
}

/// Takes a peer row's `peak_rss_mb` from `memory`, one more run in a fresh
/// `process` (a JVM, a process), and keeps the measured runs' (`r`) as
/// `peak_rss_mb_all_runs`; a failed memory run fails the row.
pub fn memory_from_fresh_run(
    p: &mut Map<String, Value>,
    r: &Map<String, Value>,
    memory: &Map<String, Value>,
    process: &str,
) {
    if let Some(all) = r.get("peak_rss_mb") {
        p.insert("peak_rss_mb_all_runs".into(), all.clone());
    }
    if let Some(one) = memory.get("peak_rss_mb") {
        p.insert("peak_rss_mb".into(), one.clone());
    }
    if let Some(failure) = memory.get("failure") {
        p.entry("failure")
            .or_insert_with(|| json!(format!("the memory run: {failure}")));
    }
    if let Some(Value::String(protocol)) = p.get_mut("protocol") {
        protocol.push_str(&format!(
            "; peak RSS from one more run in a fresh {process}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_figure_comes_from_the_fresh_run_and_its_failure_fails_the_row() {
        let object = |v: Value| v.as_object().unwrap().clone();
        let r = object(json!({"peak_rss_mb": 900.0}));
        let memory = object(json!({"peak_rss_mb": 100.0, "failure": "3 jobs lost"}));
        let mut p = object(json!({"protocol": "warm-up: 4 runs"}));
        memory_from_fresh_run(&mut p, &r, &memory, "JVM");
        assert_eq!(p["peak_rss_mb"], 100.0);
        assert_eq!(p["peak_rss_mb_all_runs"], 900.0);
        assert_eq!(p["failure"], "the memory run: \"3 jobs lost\"");
        assert_eq!(
            p["protocol"],
            "warm-up: 4 runs; peak RSS from one more run in a fresh JVM"
        );
    }
}

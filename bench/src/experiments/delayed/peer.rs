//! The delayed experiment's Apache Pekko row: the peer's delayed messages,
//! warmed up and measured in one JVM by the peers' protocol
//! ([`crate::peer::WarmUp`]). Its `late_*` figures are how late the replies
//! reached the manager, the same quantity as troupe's `late_*`.

use serde_json::{json, Value};

use super::{Settings, EXPERIMENT};
use crate::peer::{params, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

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
    let r = run(&[
        "delayed",
        "--jobs",
        &jobs,
        "--delay-ms",
        &delay,
        "--repeats",
        &repeats,
    ])?;
    // One cold run, for memory only: no warm-up, one measured run (the
    // caller's options win over the protocol's).
    let memory = run(&[
        "delayed",
        "--jobs",
        &jobs,
        "--delay-ms",
        &delay,
        "--repeats",
        "1",
        "--min-warmup",
        "0",
        "--max-warmup",
        "0",
    ])?;
    let mut p = params(
        &r,
        &[
            "jobs",
            "threads",
            "total_s",
            "completions_per_s",
            "late_p50_ms",
            "late_p99_ms",
            "late_max_ms",
            "samples",
            "warmup_samples",
            "warmup_ns_per_msg",
            "protocol",
            "failure",
        ],
    );
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
        protocol.push_str("; peak RSS from one more run in a fresh JVM");
    }
    Ok(vec![row(EXPERIMENT, "pekko", "actor", sizes.jobs, p)?])
}

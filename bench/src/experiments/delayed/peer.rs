//! The delayed experiment's Apache Pekko rows: one run of the peer's delayed messages.

use super::{Settings, EXPERIMENT};
use crate::peer::{num, params, row, run};
use crate::report::Row;
use crate::runner::WorkloadError;

/// One run of the delayed experiment (a JVM per run, as troupe's rows get
/// a process per run).
pub fn rows(sizes: &Settings) -> Result<Vec<Row>, WorkloadError> {
    let jobs = sizes.jobs.to_string();
    let delay = sizes.delay.as_millis().to_string();
    let r = run(&["delayed", "--jobs", &jobs, "--delay-ms", &delay])?;
    Ok(vec![row(
        EXPERIMENT,
        "pekko",
        "actor",
        sizes.jobs,
        num(&r, "ns_per_msg"),
        params(
            &r,
            &[
                "jobs",
                "total_s",
                "completions_per_s",
                "late_p50_ms",
                "late_p99_ms",
                "late_max_ms",
                "peak_rss_mb",
            ],
        ),
    )])
}

//! The delayed experiment's Apache Pekko row: the peer's delayed messages,
//! warmed up and measured in one JVM by the peers' protocol
//! ([`crate::peer::WarmUp`]). Its `late_*` figures are how late the replies
//! reached the manager, the same quantity as troupe's `late_*`.

use super::{Sizes, EXPERIMENT};
use crate::peer::{params, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// The Pekko row, with as many measured runs as troupe's rows. Unlike
/// troupe's rows (a fresh process per run), the runs share one JVM, since
/// a fresh JVM per run would measure the JIT rather than Pekko; its peak
/// memory is therefore the peak over all the runs.
pub fn rows(sizes: &Sizes, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
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
    Ok(vec![row(
        EXPERIMENT,
        "pekko",
        "actor",
        sizes.jobs,
        params(
            &r,
            &[
                "jobs",
                "threads",
                "total_s",
                "completions_per_s",
                "late_p50_ms",
                "late_p99_ms",
                "late_max_ms",
                "peak_rss_mb",
                "samples",
                "warmup_samples",
                "warmup_ns_per_msg",
                "protocol",
                "failure",
            ],
        ),
    )?])
}

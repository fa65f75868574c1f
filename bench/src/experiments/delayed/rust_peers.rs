//! The delayed experiment's Rust peer rows: kameo (its `send_after`),
//! ractor (its `send_after`) and actix (`run_later` in the worker's
//! context) answer each job with the library's own timer, on as many
//! threads as troupe's `actor` row (the machine's cores), with as many
//! measured runs, in one process per library; like the Pekko row's, the
//! row's `peak_rss_mb` comes from one more run in a fresh process (the
//! process of the measured runs keeps its peak over all of them, as
//! `peak_rss_mb_all_runs`).

use super::peer::{memory_from_fresh_run, FIGURES};
use super::{threads, Settings, EXPERIMENT};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{params, row, run, LIBRARIES};

/// One row per library, compared with troupe's `actor` row.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let jobs = sizes.jobs.to_string();
    let delay = sizes.delay.as_millis().to_string();
    let repeats = options.repeats.to_string();
    let on = threads("actor").to_string();
    let mut rows = Vec::new();
    for library in LIBRARIES {
        let base = [
            "delayed",
            "--jobs",
            &jobs,
            "--delay-ms",
            &delay,
            "--threads",
            &on,
        ];
        let mut measured = base.to_vec();
        measured.extend(["--repeats", &repeats]);
        let r = run(library, &measured)?;
        // One cold run, for memory only (the caller's options win over the
        // protocol's).
        let mut cold = base.to_vec();
        cold.extend(["--repeats", "1", "--min-warmup", "0", "--max-warmup", "0"]);
        let memory = run(library, &cold)?;
        let mut p = params(&r, &FIGURES);
        memory_from_fresh_run(&mut p, &r, &memory, "process");
        rows.push(row(library, EXPERIMENT, library, "actor", sizes.jobs, p)?);
    }
    Ok(rows)
}

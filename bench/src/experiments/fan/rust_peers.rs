//! The fan experiment's Rust peer rows: kameo, ractor and actix fan in
//! (`{library}-fan-in-4`) and out (`{library}-fan-out-32`) at the same
//! sizes and on as many threads as troupe's rows, one process per library.

use serde_json::json;

use super::{Settings, EXPERIMENT, PRODUCERS, WORKERS};
use crate::peer::{num, suffixed};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{row, run, LIBRARIES};

/// Every library's two rows.
pub fn rows(s: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let (msgs, threads) = (s.msgs.to_string(), s.workers.to_string());
    let mut rows = Vec::new();
    for library in LIBRARIES {
        let r = run(
            library,
            &[
                "fan",
                "--msgs",
                &msgs,
                "--threads",
                &threads,
                "--repeats",
                &repeats,
            ],
        )?;
        for (kind, of, producers, receivers) in [
            ("_in", "fan-in-4", PRODUCERS, 1),
            ("_out", "fan-out-32", 1, WORKERS),
        ] {
            let mut p = suffixed(&r, kind);
            p.remove("msgs");
            for key in ["threads", "failure", crate::core_latency::PARAM] {
                if let Some(v) = r.get(key) {
                    p.insert(key.into(), v.clone());
                }
            }
            p.insert("producers".into(), json!(producers));
            p.insert("receivers".into(), json!(receivers));
            rows.push(row(
                library,
                EXPERIMENT,
                &format!("{library}-{of}"),
                of,
                num(&r, &format!("msgs{kind}")) as u64,
                p,
            )?);
        }
    }
    Ok(rows)
}

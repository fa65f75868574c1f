//! The ping-pong experiment's Rust peer rows: kameo, ractor and actix play
//! one pair on 1 and 2 threads and 1,000 pairs with 1 and 10 balls on 2
//! threads, at the same sizes as troupe's rows, each compared with troupe's
//! row of the same workload and threads at its default throughput (5).

use super::peer::{peer_row, workload_args};
use super::Settings;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{params, run, LIBRARIES};

/// Every library's rows, one process per row.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let pairs = sizes.pairs;
    let mut rows = Vec::new();
    for library in LIBRARIES {
        // (threads, balls; None for the one pair)
        for (threads, many) in [(1, None), (2, None), (2, Some(1u64)), (2, Some(10))] {
            let (variant, peer_of) = match many {
                None => (
                    format!("{library}-pair-w{threads}"),
                    format!("actor-tp5-w{threads}"),
                ),
                Some(balls) => (
                    format!("{library}-{pairs}x{balls}-pairs-w{threads}"),
                    format!("actor-{pairs}x{balls}-pairs-tp5-w{threads}"),
                ),
            };
            let mut args = workload_args(sizes, many);
            args.extend([
                "--threads".into(),
                threads.to_string(),
                "--repeats".into(),
                repeats.clone(),
            ]);
            let r = run(
                library,
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
            )?;
            let p = params(&r, &["threads"]);
            rows.push(peer_row(library, &variant, &peer_of, &r, p, sizes, many)?);
        }
    }
    Ok(rows)
}

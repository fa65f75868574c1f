//! The ping-pong experiment's Rust peer rows: kameo, ractor and actix play
//! one pair on 1 and 2 threads and 1,000 pairs with 1 and 10 balls on 2
//! threads, at the same sizes as troupe's rows, each compared with troupe's
//! row of the same workload and threads at its default throughput (5).

use serde_json::json;

use super::Settings;
use crate::peer::num;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{params, row, run, LIBRARIES};

/// Every library's rows, one process per row.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let pair_msgs = (2 * sizes.actor).to_string();
    let many_msgs = (2 * sizes.pairs as u64 * sizes.pair_repetitions).to_string();
    let pairs = sizes.pairs.to_string();
    let mut rows = Vec::new();
    for library in LIBRARIES {
        // (threads, balls; None for the one pair)
        for (threads, many) in [(1, None), (2, None), (2, Some(1u64)), (2, Some(10))] {
            let t = threads.to_string();
            let (variant, peer_of, args) = match many {
                None => (
                    format!("{library}-pair-w{threads}"),
                    format!("actor-tp5-w{threads}"),
                    vec!["pingpong", "--msgs", &pair_msgs, "--pairs", "1"],
                ),
                Some(balls) => (
                    format!("{library}-{pairs}x{balls}-pairs-w{threads}"),
                    format!("actor-{pairs}x{balls}-pairs-tp5-w{threads}"),
                    vec!["pingpong", "--msgs", &many_msgs, "--pairs", &pairs],
                ),
            };
            let balls = many.unwrap_or(1).to_string();
            let mut args = args;
            args.extend([
                "--in-flight",
                &balls,
                "--threads",
                &t,
                "--repeats",
                &repeats,
            ]);
            let r = run(library, &args)?;
            let mut p = params(&r, &["threads"]);
            // The many-pairs rows record their workload as troupe's do, so
            // that they are compared with the rows of the same pairs and balls.
            if let Some(balls) = many {
                p.insert("pairs".into(), json!(sizes.pairs));
                p.insert("balls".into(), json!(balls));
            }
            rows.push(row(
                library,
                "pingpong",
                &variant,
                &peer_of,
                num(&r, "msgs") as u64,
                p,
            )?);
        }
    }
    Ok(rows)
}

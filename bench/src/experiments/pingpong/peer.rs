//! The ping-pong experiment's Apache Pekko rows: the peer's pair and many-pairs runs at the same sizes as troupe's rows.

use serde_json::Value;

use super::Settings;
use crate::peer::{num, params, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// One pair (compared with troupe's 2-worker, throughput-5 pair, Pekko's
/// own configuration) and 1,000 pairs with 1 and 10 balls in flight.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let pair_msgs = (2 * sizes.actor).to_string();
    let many_msgs = (2 * sizes.pairs as u64 * sizes.pair_repetitions).to_string();
    let pairs = sizes.pairs.to_string();
    let mut rows = Vec::new();
    for (args, peer_of) in [
        (
            vec![
                "pingpong",
                "--msgs",
                &pair_msgs,
                "--pairs",
                "1",
                "--in-flight",
                "1",
            ],
            "actor-tp5-w2".to_string(),
        ),
        (
            vec![
                "pingpong",
                "--msgs",
                &many_msgs,
                "--pairs",
                &pairs,
                "--in-flight",
                "1",
            ],
            format!("actor-{pairs}x1-pairs-tp5-w2"),
        ),
        (
            vec![
                "pingpong",
                "--msgs",
                &many_msgs,
                "--pairs",
                &pairs,
                "--in-flight",
                "10",
            ],
            format!("actor-{pairs}x10-pairs-tp5-w2"),
        ),
    ] {
        let mut args = args;
        args.extend(["--repeats", &repeats]);
        let r = run(&args)?;
        let variant = r
            .get("variant")
            .and_then(Value::as_str)
            .unwrap_or("pekko")
            .to_string();
        rows.push(row(
            "pingpong",
            &variant,
            &peer_of,
            num(&r, "msgs") as u64,
            num(&r, "ns_per_msg"),
            params(&r, &["samples", "warmup_ns_per_msg"]),
        ));
    }
    Ok(rows)
}

//! The ping-pong experiment's Apache Pekko rows: the peer's pair and many-pairs runs at the same sizes as troupe's rows.

use serde_json::{json, Map, Value};

use super::Settings;
use crate::peer::{num, params, row_of, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// One pair (compared with troupe's 2-worker, throughput-5 pair, Pekko's
/// own configuration) and 1,000 pairs with 1 and 10 balls in flight.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let pairs = sizes.pairs;
    let mut rows = Vec::new();
    for many in [None, Some(1u64), Some(10)] {
        let peer_of = match many {
            None => "actor-tp5-w2".to_string(),
            Some(balls) => format!("actor-{pairs}x{balls}-pairs-tp5-w2"),
        };
        let mut args = workload_args(sizes, many);
        args.extend(["--repeats".into(), repeats.clone()]);
        let r = run(&args.iter().map(String::as_str).collect::<Vec<_>>())?;
        let variant = r
            .get("variant")
            .and_then(Value::as_str)
            .unwrap_or("pekko")
            .to_string();
        let p = params(
            &r,
            &[
                "threads",
                "samples",
                "warmup_samples",
                "warmup_ns_per_msg",
                "protocol",
                "failure",
            ],
        );
        rows.push(peer_row("pekko", &variant, &peer_of, &r, p, sizes, many)?);
    }
    Ok(rows)
}

/// The arguments of the peers' `pingpong` for one pair (`many` none) or the
/// many pairs with `many` balls in flight, at troupe's sizes; each peer adds
/// its own (threads, repeats).
pub(super) fn workload_args(sizes: &Settings, many: Option<u64>) -> Vec<String> {
    let (msgs, pairs) = match many {
        None => (2 * sizes.actor, 1),
        Some(_) => (2 * sizes.pairs as u64 * sizes.pair_repetitions, sizes.pairs),
    };
    let balls = many.unwrap_or(1);
    [
        "pingpong",
        "--msgs",
        &msgs.to_string(),
        "--pairs",
        &pairs.to_string(),
    ]
    .into_iter()
    .map(String::from)
    .chain(["--in-flight".to_string(), balls.to_string()])
    .collect()
}

/// A peer's row (`runtime`: pekko or a Rust library) of one pair (`many`
/// none) or the many pairs from its RESULT `r` and the `params` kept of it.
/// The many-pairs rows record their workload as troupe's do, so that they
/// are compared with the rows of the same pairs and balls.
pub(super) fn peer_row(
    runtime: &str,
    variant: &str,
    peer_of: &str,
    r: &Map<String, Value>,
    mut params: Map<String, Value>,
    sizes: &Settings,
    many: Option<u64>,
) -> Result<Row, WorkloadError> {
    if let Some(balls) = many {
        params.insert("pairs".into(), json!(sizes.pairs));
        params.insert("balls".into(), json!(balls));
    }
    row_of(
        runtime,
        "pingpong",
        variant,
        peer_of,
        num(r, "msgs") as u64,
        params,
    )
}

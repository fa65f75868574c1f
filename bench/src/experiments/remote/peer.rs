//! The remote experiment's Apache Pekko rows: remoting (Artery over TCP)
//! between two JVMs, the peer's `remote` experiment, at the same sizes as
//! troupe's rows.

use serde_json::{json, Map, Value};

use super::{Point, Settings, Shape, EXPERIMENT, POINTS, THREADS};
use crate::peer::{num, params, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// One row per workload. A peer without the `remote` experiment (or one
/// that cannot start its second JVM) gives no rows and one line saying so.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let mut rows = Vec::new();
    // The peer drives from one client process.
    for point in POINTS.into_iter().filter(|p| p.clients == 1) {
        match one(settings, options, point) {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("remote: no Pekko row for {}: {e}", point.name());
            }
        }
    }
    Ok(rows)
}

/// A peer's row params from its RESULT `r`: the figures every peer
/// reports, its `extra` ones, and the workload keys of troupe's row of
/// `point` (and the experiment's threads when the peer reported none), so
/// that the two rows pair; the peers drive from one client process.
pub(super) fn peer_params(
    settings: &Settings,
    point: Point,
    r: &Map<String, Value>,
    extra: &[&str],
) -> Map<String, Value> {
    let keys: Vec<&str> = [
        "samples",
        "warmup_samples",
        "warmup_ns_per_msg",
        "protocol",
        "failure",
        "rtt_p50_us",
        "rtt_p99_us",
        "threads",
    ]
    .iter()
    .chain(extra)
    .copied()
    .collect();
    let mut p = params(r, &keys);
    p.insert("workload".into(), json!(point.shape.workload()));
    p.insert(
        "in_flight".into(),
        json!(point.shape.in_flight(settings.window(point))),
    );
    p.insert("size".into(), json!(settings.size_of(point) as u64));
    p.insert("clients".into(), json!(1));
    p.entry("threads").or_insert(json!(THREADS));
    p
}

fn one(settings: &Settings, options: &RunOptions, point: Point) -> Result<Row, WorkloadError> {
    let shape = point.shape;
    let (mode, in_flight) = match shape {
        Shape::RoundTrips(n) => ("pingpong", n),
        Shape::Stream => ("stream", 1),
    };
    let msgs = settings.msgs(point).to_string();
    let in_flight_arg = in_flight.to_string();
    let bytes = settings.size_of(point);
    let size = bytes.to_string();
    let repeats = options.repeats.to_string();
    // The stream's marks as far apart as troupe's at this size.
    let every = settings.window(point).every.to_string();
    let args = [
        "remote",
        "--mode",
        mode,
        "--in-flight",
        &in_flight_arg,
        "--msgs",
        &msgs,
        "--size",
        &size,
        "--repeats",
        &repeats,
        "--every",
        &every,
    ];
    let r = run(&args)?;
    let p = peer_params(settings, point, &r, &[]);
    let _ = r.get("mode").and_then(Value::as_str);
    row(
        EXPERIMENT,
        &format!("pekko-{}", point.name()),
        &format!("troupe-{}", point.name()),
        num(&r, "msgs") as u64,
        p,
    )
}

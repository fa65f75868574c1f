//! The remote experiment's Apache Pekko rows: remoting (Artery over TCP)
//! between two JVMs, the peer's `remote` experiment, at the same sizes as
//! troupe's rows.

use serde_json::{json, Value};

use super::{Settings, Shape, EXPERIMENT, SHAPES, THREADS};
use crate::peer::{num, params, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// One row per workload. A peer without the `remote` experiment (or one
/// that cannot start its second JVM) gives no rows and one line saying so.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let mut rows = Vec::new();
    for shape in SHAPES {
        match one(settings, options, shape) {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("remote: no Pekko row for {}: {e}", shape.name());
            }
        }
    }
    Ok(rows)
}

fn one(settings: &Settings, options: &RunOptions, shape: Shape) -> Result<Row, WorkloadError> {
    let (mode, in_flight) = match shape {
        Shape::RoundTrips(n) => ("pingpong", n),
        Shape::Stream => ("stream", 1),
    };
    let msgs = settings.msgs(shape).to_string();
    let in_flight_arg = in_flight.to_string();
    let size = settings.size.to_string();
    let repeats = options.repeats.to_string();
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
    ];
    let r = run(&args)?;
    let mut p = params(
        &r,
        &[
            "samples",
            "warmup_samples",
            "warmup_ns_per_msg",
            "protocol",
            "failure",
            "rtt_p50_us",
            "rtt_p99_us",
            "threads",
        ],
    );
    // The same workload keys as troupe's rows, so they pair.
    p.insert("workload".into(), json!(shape.workload()));
    p.insert("in_flight".into(), json!(shape.in_flight(settings.window)));
    p.insert("size".into(), json!(settings.size as u64));
    p.entry("threads").or_insert(json!(THREADS));
    let _ = r.get("mode").and_then(Value::as_str);
    row(
        EXPERIMENT,
        &format!("pekko-{}", shape.name()),
        &format!("troupe-{}", shape.name()),
        num(&r, "msgs") as u64,
        p,
    )
}

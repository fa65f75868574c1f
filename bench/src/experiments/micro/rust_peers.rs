//! The micro-benchmarks' Rust peer rows: kameo, ractor and actix ask from a
//! plain thread (`{library}-ask-thread`, compared with `ask-thread`), ask
//! between two actors (`-ask-actor`, with `ask-actor`), and spawn and stop
//! idle actors (`-spawn-stop`, with `spawn-stop`; its `bytes_per_actor`
//! from the process's first cycle, a fresh process per library), on as
//! many threads as troupe's rows.

use serde_json::{json, Map, Value};

use super::{Settings, EXPERIMENT};
use crate::peer::suffixed;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{params, row, run, LIBRARIES};

/// `params` of `r` with the RESULT's `threads` and `failure`.
fn shared(r: &Map<String, Value>, mut p: Map<String, Value>) -> Map<String, Value> {
    for key in ["threads", "failure", crate::core_latency::PARAM] {
        if let Some(v) = r.get(key) {
            p.insert(key.into(), v.clone());
        }
    }
    p
}

/// Every library's rows: a process for the asks, one for spawn and stop.
pub fn rows(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let threads = sizes.workers.to_string();
    let (asks, actors) = (sizes.asks.to_string(), sizes.cycled.to_string());
    let mut rows = Vec::new();
    for library in LIBRARIES {
        let r = run(
            library,
            &[
                "ask",
                "--asks",
                &asks,
                "--threads",
                &threads,
                "--repeats",
                &repeats,
            ],
        )?;
        for (kind, of) in [("_thread", "ask-thread"), ("_actor", "ask-actor")] {
            // The figures of this kind of ask (`samples_thread`, ...,
            // `p50_ns_thread`), without their suffix.
            let mut p = shared(&r, suffixed(&r, kind));
            p.insert("asks".into(), json!(sizes.asks));
            rows.push(row(
                library,
                EXPERIMENT,
                &format!("{library}-{of}"),
                of,
                sizes.asks,
                p,
            )?);
        }
        let r = run(
            library,
            &[
                "spawn",
                "--actors",
                &actors,
                "--threads",
                &threads,
                "--repeats",
                &repeats,
            ],
        )?;
        let mut p = shared(&r, params(&r, &[]));
        p.insert("actors".into(), json!(sizes.cycled));
        if let Some(b) = r.get("bytes_per_actor") {
            p.insert("bytes_per_actor".into(), b.clone());
        }
        if let Some(Value::String(protocol)) = p.get_mut("protocol") {
            protocol.push_str("; bytes per actor from the process's first cycle");
        }
        rows.push(row(
            library,
            EXPERIMENT,
            &format!("{library}-spawn-stop"),
            "spawn-stop",
            sizes.cycled as u64,
            p,
        )?);
    }
    Ok(rows)
}

//! The remote experiment's Rust peer rows: ractor on ractor_cluster
//! (ractor's TCP remoting) between two processes on loopback, round trips
//! with 1 and 64 in flight at the run's payload size, paired with
//! troupe-remote's `troupe-rtt-1` and `troupe-rtt-64` rows
//! (peers/rust/remote). Of the three Rust libraries only ractor ships
//! remoting that runs here; kameo's and actix's lines under the table say
//! why they have no rows ([`NOT_RUN`]).

use serde_json::{json, Map, Value};

use super::peer::peer_params;
use super::{Point, Settings, Shape, EXPERIMENT, POINTS, THREADS};
use crate::peer::num;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{ensure_remote_built, row, run_remote};

/// The Rust libraries without remote rows, and why, one line each.
pub const NOT_RUN: [(&str, &str); 2] = [
    (
        "kameo",
        "kameo 0.22's remoting (feature `remote`) runs on libp2p: a swarm \
         (`remote::bootstrap`, or one the application builds: TCP with noise \
         encryption and yamux) and Kademlia to look a registered actor up; \
         not written for this benchmark yet, so no rows",
    ),
    (
        "actix",
        "actix 0.13 ships no remoting (its actors live in one process; \
         only third-party crates add it), so no rows",
    ),
];

/// The rows' variant: `ractor_cluster-rtt-64`.
fn variant(point: Point) -> String {
    format!("ractor_cluster-{}", point.name())
}

/// ractor_cluster's two rows. Where the peer cannot be built, `all` goes
/// on without them (one line says why); asked for by name, it is an error.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    if let Err(why) = ensure_remote_built() {
        if settings.in_all {
            eprintln!("remote: no ractor_cluster rows: {why}");
            return Ok(Vec::new());
        }
        return Err(WorkloadError::new(format!("ractor_cluster: {why}")));
    }
    let mut rows = Vec::new();
    for point in POINTS
        .into_iter()
        .filter(|p| p.is_basic() && matches!(p.shape, Shape::RoundTrips(_)))
    {
        rows.push(one(settings, options, point)?);
    }
    for (library, why) in NOT_RUN {
        eprintln!("remote: no {library} rows: {why}");
    }
    Ok(rows)
}

fn one(settings: &Settings, options: &RunOptions, point: Point) -> Result<Row, WorkloadError> {
    let Shape::RoundTrips(in_flight) = point.shape else {
        unreachable!("only round-trip points are asked for");
    };
    let in_flight = in_flight.to_string();
    let msgs = settings.msgs(point).to_string();
    let size = settings.size_of(point).to_string();
    let threads = THREADS.to_string();
    let repeats = options.repeats.to_string();
    let r = run_remote(&[
        "remote",
        "--in-flight",
        &in_flight,
        "--msgs",
        &msgs,
        "--size",
        &size,
        "--threads",
        &threads,
        "--repeats",
        &repeats,
    ])?;
    row_from(settings, point, &r)
}

/// The row of `point` from the peer's RESULT `r`, with the workload keys
/// of troupe's row of the same point, so that the two pair.
fn row_from(
    settings: &Settings,
    point: Point,
    r: &Map<String, Value>,
) -> Result<Row, WorkloadError> {
    let mut p = peer_params(settings, point, r, &["cpus_busy", "cpu_ns_per_msg"]);
    p.insert("transport".into(), json!("ractor_cluster"));
    row(
        "ractor",
        EXPERIMENT,
        &variant(point),
        &format!("troupe-{}", point.name()),
        num(r, "msgs") as u64,
        p,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::remote::Remote;
    use crate::experiments::Experiment;
    use crate::pairing::ratio_lines;
    use crate::runner::Scale;

    /// troupe's row of `point`, with the parameters `workload` gives it.
    fn troupe_row(settings: &Settings, point: Point, ns: f64) -> Row {
        let mut row =
            crate::report::tests::row(EXPERIMENT, &format!("troupe-{}", point.name()), &[ns]);
        for (k, v) in [
            ("runtime", json!("troupe")),
            ("transport", json!("troupe")),
            ("workload", json!(point.shape.workload())),
            (
                "in_flight",
                json!(point.shape.in_flight(settings.window(point))),
            ),
            ("size", json!(settings.size_of(point) as u64)),
            ("clients", json!(1)),
            ("threads", json!(THREADS)),
        ] {
            row.params.insert(k.into(), v);
        }
        row
    }

    #[test]
    fn ractor_cluster_rows_pair_with_troupes_round_trip_rows_and_say_why_two_libraries_have_none() {
        let settings = Settings::for_scale(Scale::Quick, true);
        let [rtt_1, rtt_64] = [POINTS[0], POINTS[1]];
        let result = |ns: f64| -> Map<String, Value> {
            serde_json::from_value(json!({
                "samples": [ns], "warmup_ns_per_msg": ns, "protocol": "warm-up: 3 runs",
                "msgs": 12800, "threads": 2, "rtt_p50_us": 90.0, "rtt_p99_us": 400.0,
            }))
            .unwrap()
        };
        let mut rows = vec![
            troupe_row(&settings, rtt_1, 100_000.0),
            troupe_row(&settings, rtt_64, 10_000.0),
        ];
        rows.push(row_from(&settings, rtt_1, &result(150_000.0)).unwrap());
        rows.push(row_from(&settings, rtt_64, &result(20_000.0)).unwrap());
        assert_eq!(rows[3].variant, "ractor_cluster-rtt-64");
        assert_eq!(rows[3].params["runtime"], "ractor");
        let lines = ratio_lines(&rows, Remote::KEYS);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("troupe-rtt-64 vs ractor_cluster-rtt-64")
                    && l.ends_with("troupe 2.00x ractor's speed")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("troupe-rtt-1 vs ractor_cluster-rtt-1")
                    && l.ends_with("troupe 1.50x ractor's speed")),
            "{lines:?}"
        );
        // Under the table: why kameo and actix have no rows, once a Rust
        // peer ran, and nothing of the kind without them.
        let refs: Vec<&Row> = rows.iter().collect();
        let extras = Remote.extras(&refs);
        for library in ["kameo", "actix"] {
            assert!(
                extras
                    .iter()
                    .any(|l| l.starts_with(&format!("{library}: no remote rows: "))),
                "{extras:?}"
            );
        }
        let extras = Remote.extras(&refs[..2]);
        assert!(
            !extras.iter().any(|l| l.contains("no remote rows")),
            "{extras:?}"
        );
    }
}

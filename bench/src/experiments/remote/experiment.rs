//! The remote experiment as an [`Experiment`]: its flag, its Pekko and
//! Rust peer rows, its columns and lines.

use clap::Args;
use serde_json::Value;

use super::{peer, run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{ns_per_msg, Better::Lower, Experiment, Headline, Rows};
use crate::report::Row;
use crate::runner::Scale;
use crate::table::Column;

/// The remote experiment.
pub struct Remote;

/// The remote experiment's own flags.
#[derive(Debug, Args)]
pub struct RemoteArgs {
    /// Payload bytes of the messages of the rows without a size of their
    /// own (default 100; the `-1k` and `-16k` rows keep theirs).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    size: Option<u64>,
}

impl Experiment for Remote {
    type Args = RemoteArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str = "Actors across two processes over NATS: round trips and a one-way stream, against raw NATS, Pekko remoting and ractor_cluster.";
    const RUN: Rows<Settings> = run;
    const PEER: Option<Rows<Settings>> = Some(peer::rows);
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);
    const COLUMNS: &'static [Column] = &[
        Column::param("workload", "workload"),
        Column::param("in flight", "in_flight"),
        Column::param("bytes", "size"),
        Column::param("clients", "clients"),
        Column::param("rtt p50 µs", "rtt_p50_us"),
        Column::param("rtt p99 µs", "rtt_p99_us"),
    ];
    const NOTES: &'static [&'static str] = &[
            "ns/msg is per round trip for the round-trip rows and per message received for the stream; every process gives the work 2 threads.",
        ];
    const KEYS: &'static [&'static str] = &["workload", "in_flight", "size", "clients"];
    // The default size's one-client row, not the 1 KiB, 16 KiB and
    // three-client ones.
    const HEADLINE: Option<Headline> = Headline::new(
        "ns per round trip, 64 in flight, 100 B",
        Lower,
        ns_per_msg,
        |r| {
            let param = |k: &str| r.params.get(k).and_then(Value::as_u64);
            param("in_flight") == Some(64)
                && param("size") == Some(100)
                && param("clients") == Some(1)
        },
    );

    fn settings(&self, args: RemoteArgs, scale: Scale, in_all: bool) -> Result<Settings, String> {
        let mut settings = Settings::for_scale(scale, in_all);
        if let Some(size) = args.size {
            settings.size = size as usize;
        }
        Ok(settings)
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        let mut lines: Vec<String> = rows.iter().map(|row| line(row)).collect();
        lines.extend(rows.iter().filter_map(|row| sharded_line(row, rows)));
        // With the Rust peers' rows, why two of the three libraries have none.
        if rows
            .iter()
            .any(|r| crate::rust_peers::is_rust_peer(crate::pairing::runtime(r)))
        {
            lines.extend(
                rust_peers::NOT_RUN
                    .iter()
                    .map(|(library, why)| format!("{library}: no remote rows: {why}")),
            );
        }
        lines
    }
}

/// A sharded row against the plain troupe row of its workload: what
/// routing through shard regions costs a remote message.
fn sharded_line(row: &Row, rows: &[&Row]) -> Option<String> {
    if row.params.get("transport").and_then(Value::as_str) != Some("sharded")
        || row.failure.is_some()
    {
        return None;
    }
    let same = |k: &str| row.params.get(k);
    let plain = rows.iter().find(|r| {
        r.params.get("transport").and_then(Value::as_str) == Some("troupe")
            && ["workload", "in_flight", "size", "clients"]
                .iter()
                .all(|k| r.params.get(*k) == same(k))
            && r.failure.is_none()
    })?;
    Some(format!(
        "{} vs {}: {:.2}x the plain remote throughput (target >= 0.9x)",
        row.variant,
        plain.variant,
        plain.ns_per_msg / row.ns_per_msg
    ))
}

/// A row's line under the table.
fn line(row: &Row) -> String {
    let what = match row.params.get("workload").and_then(Value::as_str) {
        Some("stream") => "messages received/s",
        _ => "round trips/s",
    };
    let mut line = format!(
        "{}: {:.0} {what} (median of {} runs)",
        row.variant, row.msgs_per_s, row.repeats
    );
    if let (Some(p50), Some(p99)) = (row.num("rtt_p50_us"), row.num("rtt_p99_us")) {
        line += &format!(", round trip p50 {p50:.1} µs, p99 {p99:.1} µs");
    }
    line
}

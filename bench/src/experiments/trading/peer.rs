//! The trading experiment's Apache Pekko rows: the peer's request-reply and
//! one-way variants with the log off, in the seed scenario (the only one
//! the peer runs).

use serde_json::json;

use super::{Point, Settings, EXPERIMENT};
use crate::peer::{num, params, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// The fields of a trading RESULT that the peers' rows keep, Pekko's and
/// the Rust peers' alike (the Pekko peer reports no `latency_samples`, so
/// its rows have none).
pub(super) const FIELDS: [&str; 23] = [
    "txlog",
    "clients",
    "threads",
    "orders",
    "tps",
    "mean_us",
    "p5_us",
    "p25_us",
    "p50_us",
    "p75_us",
    "p95_us",
    "p99_us",
    "max_us",
    "latency_samples",
    "trades",
    "verified",
    "cpus_busy",
    "cpu_ns_per_msg",
    "samples",
    "warmup_samples",
    "warmup_ns_per_msg",
    "protocol",
    "failure",
];

/// request-reply and one-way with the log off, at troupe's client counts.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let mut rows = Vec::new();
    let repeats = options.repeats.to_string();
    for point in settings.points.iter().filter(|p| {
        // One Pekko row per troupe default row: not per one-worker twin
        // or fixed way of stealing, which share the point otherwise.
        p.txlog == ::trading::TxLog::Off
            && p.variant != ::trading::Variant::Sync
            && p.pattern == ::trading::Pattern::Seed
            && p.threads.is_none()
            && p.stealing == troupe::Stealing::default()
    }) {
        let variant = point.variant.name();
        let args = workload_args(point, settings.orders, &["--repeats", &repeats]);
        let r = run(&args.iter().map(String::as_str).collect::<Vec<_>>())?;
        // A failed check (the standby not a replica, orders or trades
        // missing) comes back in `failure` and makes the row a failed row.
        let mut p = params(&r, &FIELDS);
        if r.get("verified") != Some(&json!(true)) && !p.contains_key("failure") {
            p.insert(
                "failure".into(),
                json!("the peer did not report the run verified"),
            );
        }
        p.insert("variant".into(), json!(format!("pekko {variant}")));
        p.insert("scenario".into(), json!("seed"));
        // The peer reports its median throughput; the median run's duration follows.
        p.insert(
            "duration_s".into(),
            json!(num(&r, "orders") / num(&r, "tps")),
        );
        rows.push(row(
            EXPERIMENT,
            &format!("pekko-{variant}/off"),
            &format!("{variant}/off"),
            num(&r, "orders") as u64,
            p,
        )?);
    }
    Ok(rows)
}

/// The arguments of the peers' `trading` for `point` at `orders` per run,
/// then the peer's own (`extra`: threads, repeats).
pub(super) fn workload_args(point: &Point, orders: usize, extra: &[&str]) -> Vec<String> {
    let (clients, orders) = (point.clients.to_string(), orders.to_string());
    [
        "trading",
        "--variant",
        point.variant.name(),
        "--clients",
        &clients,
        "--orders",
        &orders,
    ]
    .iter()
    .chain(extra)
    .map(|a| a.to_string())
    .collect()
}

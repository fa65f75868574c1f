//! The trading experiment's Rust peer rows: the request-reply and one-way
//! systems on kameo, ractor and actix (peers/rust/src/trading) with the log
//! off, in the seed scenario, at 10 clients (the workload; other
//! client counts are troupe's and Pekko's only), on the threads of each of
//! troupe's rows there (the settings' threads, and one for the one-worker
//! twin), each row compared with troupe's row of the same threads
//! (`kameo-one-way/off/t1` with `one-way/off/t1`).
//!
//! Besides the peer's own checks (which come back as `verified` and
//! `failure`), the bench checks what the peer reported against the
//! scenario troupe's rows run: the orders of a run (whole loops per
//! client), orders / 2 trades, and one latency per order of every measured
//! run, so a peer that lost or doubled an order, or ran another workload,
//! makes a failed row whatever it says of itself.

use serde_json::{json, Map, Value};

use super::peer::{workload_args, FIELDS};
use super::{label, Point, Settings, EXPERIMENT};
use crate::peer::{num, params};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{row, run, LIBRARIES};

/// The clients of the peer rows.
pub const CLIENTS: usize = 10;

/// The points the peers run: troupe's log-off seed points of the actor
/// variants at [`CLIENTS`], one per thread count (not per fixed way of
/// stealing or window, which share the point otherwise).
fn points(settings: &Settings) -> Vec<&Point> {
    settings
        .points
        .iter()
        .filter(|p| {
            p.txlog == ::trading::TxLog::Off
                && p.variant != ::trading::Variant::Sync
                && p.pattern == ::trading::Pattern::Seed
                && p.clients == CLIENTS
                && p.window == 1
                && p.stealing == troupe::Stealing::default()
        })
        .collect()
}

/// One row per library and point; a process per row.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let points = points(settings);
    if points.is_empty() {
        eprintln!(
            "trading: no Rust peer rows: they run at {CLIENTS} clients with the log off, \
             and no such request-reply or one-way point is selected"
        );
    }
    let repeats = options.repeats.to_string();
    let mut rows = Vec::new();
    for library in LIBRARIES {
        for point in &points {
            let variant = point.variant.name();
            let threads = point.threads.unwrap_or(settings.threads);
            let on = threads.to_string();
            let args = workload_args(
                point,
                settings.orders,
                &["--threads", &on, "--repeats", &repeats],
            );
            let r = run(
                library,
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
            )?;
            let expected = ::trading::Scenario::new(point.clients, settings.orders)
                .map_err(|e| WorkloadError::new(e.to_string()))?;
            let mut p = params(&r, &FIELDS);
            if let Some(why) = disagreement(&r, expected.orders(), threads) {
                p.entry("failure").or_insert_with(|| json!(why));
            }
            p.insert("variant".into(), json!(format!("{library} {variant}")));
            p.insert("scenario".into(), json!("seed"));
            p.insert("window".into(), json!(1));
            p.insert(
                "duration_s".into(),
                json!(num(&r, "orders") / num(&r, "tps")),
            );
            rows.push(row(
                library,
                EXPERIMENT,
                &format!("{library}-{}", label(point)),
                &label(point),
                expected.orders(),
                p,
            )?);
        }
    }
    Ok(rows)
}

/// Why a peer's RESULT is not a verified run of `orders` orders per run on
/// `threads` threads, or `None`: the peer must say it verified every run,
/// and its own figures must agree with the scenario.
fn disagreement(r: &Map<String, Value>, orders: u64, threads: usize) -> Option<String> {
    let count = |key: &str| r.get(key).and_then(Value::as_u64);
    let runs = r
        .get("samples")
        .and_then(Value::as_array)
        .map_or(0, |s| s.len() as u64);
    if r.get("verified") != Some(&json!(true)) {
        return Some("the peer did not report its runs verified".into());
    }
    if count("orders") != Some(orders) {
        return Some(format!(
            "the peer ran {:?} orders a run, the scenario has {orders}",
            count("orders")
        ));
    }
    if count("trades") != Some(orders / 2) {
        return Some(format!(
            "the peer reported {:?} trades, the scenario makes {}",
            count("trades"),
            orders / 2
        ));
    }
    if count("latency_samples") != Some(orders * runs) {
        return Some(format!(
            "the peer answered {:?} orders in its {runs} measured runs of {orders}",
            count("latency_samples")
        ));
    }
    if count("threads") != Some(threads as u64) {
        return Some(format!(
            "the peer ran on {:?} threads, asked for {threads}",
            count("threads")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verified: bool, orders: u64, trades: u64, latencies: u64) -> Map<String, Value> {
        json!({
            "verified": verified, "orders": orders, "trades": trades,
            "latency_samples": latencies, "threads": 2, "samples": [1.0, 2.0],
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn a_peer_run_that_lost_doubled_or_changed_orders_is_a_failure() {
        assert_eq!(disagreement(&result(true, 600, 300, 1200), 600, 2), None);
        let why = |r| disagreement(&r, 600, 2).unwrap();
        assert!(why(result(false, 600, 300, 1200)).contains("verified"));
        assert!(why(result(true, 540, 270, 1080)).contains("540"));
        assert!(why(result(true, 600, 299, 1200)).contains("trades"));
        // One order answered twice and another never: the count is off.
        assert!(why(result(true, 600, 300, 1201)).contains("1201"));
        assert!(disagreement(&result(true, 600, 300, 1200), 600, 1).is_some());
    }

    #[test]
    fn the_peers_run_at_ten_clients_on_each_thread_count_of_troupes_rows() {
        let settings = Settings::for_scale(crate::runner::Scale::Quick);
        let found: Vec<(String, Option<usize>)> = points(&settings)
            .into_iter()
            .map(|p| (label(p), p.threads))
            .collect();
        assert_eq!(
            found,
            [
                ("request-reply/off".to_string(), None),
                ("one-way/off".to_string(), None),
                ("request-reply/off/t1".to_string(), Some(1)),
                ("one-way/off/t1".to_string(), Some(1)),
            ]
        );
    }
}

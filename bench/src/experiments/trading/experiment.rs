//! The trading experiment as an [`Experiment`]: its flags (clients, variants,
//! log modes, sizes), its Pekko and Rust peer rows, its columns and its
//! charts (orders/s and latency against clients, as in the original post).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;

use super::{peer, run, rust_peers, Point, Settings, EXPERIMENT};
use crate::experiments::{msgs_per_s, Better::Higher, Experiment, Headline, Rows};
use crate::pairing::runtime;
use crate::report::Row;
use crate::runner::Scale;
use crate::site::charts;
use crate::table::{param_text, spread_rate, Column};

/// The trading experiment.
pub struct Trading;

/// Trading's own flags.
#[derive(Debug, Args)]
pub struct TradingArgs {
    /// Clients, comma-separated (default 1,10,40 with the log off and 10
    /// with it on; `--full`: the post's 1..40 for every mode).
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    clients: Option<Vec<usize>>,
    /// Variants, comma-separated: sync, request-reply, one-way (default all).
    #[arg(long, value_name = "V,V,..", value_delimiter = ',')]
    variants: Option<Vec<::trading::Variant>>,
    /// Log modes, comma-separated: off, buffered, group-commit (default all).
    #[arg(long, value_name = "M,M,..", value_delimiter = ',')]
    txlog: Option<Vec<::trading::TxLog>>,
    /// Scenarios, comma-separated: seed (every book ends empty), resting
    /// (half the asks rest). Every point runs in each one given (default:
    /// seed everywhere, plus resting with the log off and 10 clients for
    /// each variant).
    #[arg(long, value_name = "S,S,..", value_delimiter = ',')]
    scenario: Option<Vec<::trading::Pattern>>,
    /// Orders per run with the log off or buffered (default 750,000).
    #[arg(long, value_name = "N")]
    orders: Option<usize>,
    /// Orders per run under group commit (default 30,000; `--full`: 150,000).
    #[arg(long, value_name = "N")]
    synced_orders: Option<usize>,
    /// Directory under which each run's logs are written (and removed).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Orders each client keeps in flight, comma-separated: every
    /// request-reply and one-way point runs with each (default: 1, plus 64
    /// for request-reply and one-way under group commit with 10 clients).
    #[arg(long, value_name = "W,W,..", value_delimiter = ',')]
    window: Option<Vec<usize>>,
    /// Worker threads of the actor variants' dispatcher (default 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Option<u64>,
    /// How the actor variants' idle dispatcher threads take work from busy
    /// ones: adaptive (the runtime's default), eager or late; each actor
    /// point runs with each way given (rows of a fixed way end in `/eager`
    /// or `/late`).
    #[arg(long, value_name = "WAY,WAY,..", value_delimiter = ',')]
    stealing: Option<Vec<troupe::Stealing>>,
}

impl Experiment for Trading {
    type Args = TradingArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str = "Trading system: the seed and resting scenarios per variant, log mode and number of clients.";
    const RUN: Rows<Settings> = run;
    const PEER: Option<Rows<Settings>> = Some(peer::rows);
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);
    const NOTES: &'static [&'static str] = &[
        "orders/s is the median run; latencies merge every order of the measured runs. \
             sync is the no-actor baseline (one thread per client; the actor variants run \
             on the dispatcher's threads).",
        "verified: every client done, trades = orders / 2, the scenario's resting orders \
             (none in seed, half the asks in resting), and each standby equal to its primary \
             in counts, resting orders and per-book digests of processing order and trades.",
    ];
    const KEYS: &'static [&'static str] = &["clients", "txlog", "scenario"];
    const HEADLINE: Option<Headline> = Headline::new(
        "orders per second, log off, 10 clients",
        Higher,
        msgs_per_s,
        |r| param_text(r, "txlog") == "off" && r.num("clients") == Some(10.0),
    );

    fn settings(&self, args: TradingArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        let mut settings = Settings::for_scale(scale);
        settings.points.retain(|p| {
            args.variants
                .as_ref()
                .is_none_or(|v| v.contains(&p.variant))
                && args.txlog.as_ref().is_none_or(|m| m.contains(&p.txlog))
        });
        if let Some(clients) = args.clients {
            if clients.contains(&0) {
                return Err("--clients: every count must be at least 1".into());
            }
            let mut points = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for p in &settings.points {
                if seen.insert((p.variant, p.txlog, p.pattern, p.window, p.threads)) {
                    for &c in &clients {
                        points.push(Point { clients: c, ..*p });
                    }
                }
            }
            settings.points = points;
        }
        if let Some(patterns) = args.scenario {
            let mut points = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for p in &settings.points {
                if seen.insert((p.variant, p.txlog, p.clients, p.window, p.threads)) {
                    for &pattern in &patterns {
                        points.push(Point { pattern, ..*p });
                    }
                }
            }
            settings.points = points;
        }
        if let Some(threads) = args.threads {
            settings.threads = threads as usize;
        }
        if let Some(ways) = args.stealing {
            let mut points = Vec::new();
            for p in &settings.points {
                // No dispatcher (sync) or one worker: nothing to steal.
                if p.variant == ::trading::Variant::Sync || p.threads == Some(1) {
                    points.push(*p);
                } else {
                    points.extend(ways.iter().map(|&stealing| Point { stealing, ..*p }));
                }
            }
            settings.points = points;
        }
        if let Some(windows) = args.window {
            if windows.contains(&0) {
                return Err("--window: every window must be at least 1".into());
            }
            let mut points = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for p in &settings.points {
                if !seen.insert((p.variant, p.txlog, p.clients, p.pattern, p.threads)) {
                    continue;
                }
                if p.variant == ::trading::Variant::Sync {
                    // A sync client calls the engines itself: one at a time.
                    points.push(Point { window: 1, ..*p });
                } else {
                    points.extend(windows.iter().map(|&window| Point { window, ..*p }));
                }
            }
            settings.points = points;
        }
        if let Some(n) = args.orders {
            settings.orders = n;
        }
        if let Some(n) = args.synced_orders {
            settings.synced_orders = n;
        }
        if let Some(dir) = args.log_dir {
            settings.log_root = dir;
        }
        Ok(settings)
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            Column::text("txlog", "txlog"),
            Column::with("clients", |r| {
                r.num("clients")
                    .map_or_else(String::new, |c| format!("{c:.0}"))
            }),
            Column::text("scenario", "scenario"),
            Column::param("window", "window"),
            Column::with("orders", |r| crate::shared::group_thousands(r.msgs)),
            Column::with("duration s", |r| {
                r.num("duration_s")
                    .map_or_else(String::new, |d| format!("{d:.2}"))
            }),
            Column::with("orders/s", |r| {
                crate::shared::group_thousands(r.msgs_per_s.round() as u64)
            }),
            Column::with("orders/s min-max", spread_rate),
            Column::param("fdatasync us", "fdatasync_us"),
            Column::param("mean us", "mean_us"),
            Column::param("p5 us", "p5_us"),
            Column::param("p25 us", "p25_us"),
            Column::param("p50 us", "p50_us"),
            Column::param("p75 us", "p75_us"),
            Column::param("p95 us", "p95_us"),
            Column::param("p99 us", "p99_us"),
            Column::param("max us", "max_us"),
            Column::param("trades", "trades"),
            Column::with("cost", crate::table::cost_cell),
            Column::param("resting", "resting"),
            Column::text("verified", "verified"),
        ]
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        charts_of(rows)
    }
}

/// Orders/s against clients per variant, then latency against clients for
/// each variant with the log off (the post's four lines).
fn charts_of(rows: &[&Row]) -> Vec<String> {
    let mut tps: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        if let Some(c) = r.num("clients") {
            tps.entry((r.variant.clone(), runtime(r).to_string()))
                .or_default()
                .push((c, r.msgs_per_s));
        }
    }
    let mut out = vec![charts::lines(
        "trading: orders/s against clients",
        "clients",
        "orders/s",
        &charts::series(tps),
        (false, false),
    )];
    let mut variants: Vec<&Row> = Vec::new();
    for r in rows {
        if param_text(r, "txlog") == "off" && !variants.iter().any(|v| v.variant == r.variant) {
            variants.push(r);
        }
    }
    for first in variants {
        let mut lat: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.variant == first.variant) {
            let Some(c) = r.num("clients") else { continue };
            for key in ["mean_us", "p5_us", "p50_us", "p95_us"] {
                if let Some(v) = r.num(key) {
                    let label = key.trim_end_matches("_us").to_string();
                    lat.entry((label, runtime(r).to_string()))
                        .or_default()
                        .push((c, v));
                }
            }
        }
        out.push(charts::lines(
            &format!("trading {}: latency against clients", first.variant),
            "clients",
            "µs",
            &charts::series(lat),
            (false, false),
        ));
    }
    out
}

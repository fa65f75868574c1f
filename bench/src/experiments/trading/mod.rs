//! The trading experiment (seed 000, `EXPERIMENTS.md` section 1): the seed
//! scenario on the `trading` crate's system, per variant × transaction-log
//! mode × number of clients.
//!
//! A row is one (variant, log mode, clients) point: `variant` is
//! `"<variant>/<txlog>"`, `msgs` the orders per run and `ns_per_msg`
//! nanoseconds of wall time per order. Its params carry `variant`, `txlog`,
//! `clients`, `orders`, `tps` (median run), `duration_s` (median run), the
//! client-side latency of every order of every measured run merged into one
//! distribution (`mean_us`, `p5_us`, `p25_us`, `p50_us`, `p75_us`, `p95_us`,
//! `p99_us`, `max_us`), `trades` and `verified`. `runtime` is `baseline` for
//! the sync variant (no actors) and `troupe` otherwise.
//!
//! Every run is verified (trades == orders / 2, standbys equal to their
//! primaries, every client done); a run that fails verification fails the
//! experiment. Logs are written under a fresh directory per run, deleted
//! afterwards.

mod experiment;
pub mod peer;

pub use experiment::Trading;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map};
use trading::{RunConfig, Scenario, TxLog, Variant};

use crate::progress::Progress;
use crate::report::Row;
use crate::runner::{summarize, Measurement, Phase, RunOptions, Sample, Scale, WorkloadError};

/// The experiment's name in reports.
pub const EXPERIMENT: &str = "trading";

/// One point of the sweep.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// The variant.
    pub variant: Variant,
    /// The log mode.
    pub txlog: TxLog,
    /// Concurrent clients.
    pub clients: usize,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Points in run order.
    pub points: Vec<Point>,
    /// Orders per run with the log off or buffered.
    pub orders: usize,
    /// Orders per run under group commit (every order waits for fsyncs,
    /// so those runs are much slower).
    pub synced_orders: usize,
    /// Dispatcher threads of the actor variants.
    pub threads: usize,
    /// Where run directories for logs are made.
    pub log_root: PathBuf,
}

/// The post's client counts.
pub const FULL_CLIENTS: [usize; 9] = [1, 2, 4, 6, 8, 10, 20, 30, 40];

impl Settings {
    /// The default subset, the CI smoke size, or the post's whole sweep.
    pub fn for_scale(scale: Scale) -> Self {
        let mut points = Vec::new();
        let (clients, logged_clients, orders, synced_orders): (&[usize], &[usize], _, _) =
            match scale {
                Scale::Quick => (&[1, 10], &[10], 60_000, 3_000),
                Scale::Default => (&[1, 10, 40], &[10], 750_000, 30_000),
                Scale::Full => (&FULL_CLIENTS, &FULL_CLIENTS, 750_000, 150_000),
            };
        for txlog in TxLog::ALL {
            let counts = if txlog == TxLog::Off {
                clients
            } else {
                logged_clients
            };
            for variant in Variant::ALL {
                for &c in counts {
                    points.push(Point {
                        variant,
                        txlog,
                        clients: c,
                    });
                }
            }
        }
        Settings {
            points,
            orders,
            synced_orders,
            threads: 2,
            log_root: std::env::temp_dir(),
        }
    }
}

fn label(p: &Point) -> String {
    format!("{}/{}", p.variant, p.txlog)
}

/// Runs every selected point: one warm-up and `repeats` measured runs each.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let selected: Vec<&Point> = settings
        .points
        .iter()
        .filter(|p| {
            let name = format!("{}/c{}", label(p), p.clients);
            options.filter.as_deref().is_none_or(|f| name.contains(f))
        })
        .collect();
    let mut rows = Vec::new();
    let mut progress = Progress::new(EXPERIMENT, selected.len(), options.repeats);
    for (i, point) in selected.iter().enumerate() {
        progress.start_row(i, &format!("{} c{}", label(point), point.clients));
        let orders = if point.txlog == TxLog::GroupCommit {
            settings.synced_orders
        } else {
            settings.orders
        };
        let scenario = Scenario::new(point.clients, orders).map_err(WorkloadError::new)?;
        let mut results = Vec::new();
        for run in 0..=options.repeats {
            progress.phase(Phase::nth(run, options.repeats));
            let dir = settings
                .log_root
                .join(format!("troupe-trading-{}-{i}-{run}", std::process::id()));
            let config = RunConfig {
                variant: point.variant,
                scenario,
                txlog: point.txlog,
                log_root: (point.txlog != TxLog::Off).then(|| dir.clone()),
                threads: settings.threads,
                timeout: Duration::from_secs(600),
            };
            let outcome = trading::run(&config);
            let _ = std::fs::remove_dir_all(&dir);
            let result = outcome.map_err(|e| {
                progress.finish();
                WorkloadError::new(e).context(&format!("{} c{}", label(point), point.clients))
            })?;
            progress.note(&format!(
                "trading: [{}/{}] {} clients={} {}: {:.0} orders/s, p95 {:.1} us",
                i + 1,
                selected.len(),
                label(point),
                point.clients,
                Phase::nth(run, options.repeats),
                result.tps(),
                result.latency_ns.value_at_quantile(0.95) as f64 / 1e3
            ));
            if !result.verified() {
                progress.finish();
                return Err(WorkloadError::new(format!(
                    "{} clients={}: verification failed: {}",
                    label(point),
                    point.clients,
                    result.problems.join("; ")
                )));
            }
            results.push(result);
        }
        rows.push(row(point, &results));
    }
    Ok(rows)
}

fn row(point: &Point, results: &[trading::RunResult]) -> Row {
    let sample = |r: &trading::RunResult| Sample {
        msgs: r.orders(),
        elapsed: r.duration,
    };
    let measurement = Measurement {
        warmup: sample(&results[0]),
        samples: results[1..].iter().map(sample).collect(),
    };
    let measured = &results[1..];
    let mut latency = measured[0].latency_ns.clone();
    for r in &measured[1..] {
        latency
            .add(&r.latency_ns)
            .expect("histograms with the same bounds add");
    }
    let median = |f: &dyn Fn(&trading::RunResult) -> f64| {
        let values: Vec<f64> = measured.iter().map(f).collect();
        summarize(&values).map_or(f64::NAN, |s| s.median)
    };
    let us = |ns: u64| ns as f64 / 1e3;
    let mut params = Map::new();
    params.insert("variant".into(), json!(point.variant.name()));
    params.insert("txlog".into(), json!(point.txlog.name()));
    params.insert("clients".into(), json!(point.clients));
    params.insert("orders".into(), json!(measured[0].orders()));
    params.insert(
        "runtime".into(),
        json!(if point.variant == Variant::Sync {
            "baseline"
        } else {
            "troupe"
        }),
    );
    params.insert("tps".into(), json!(median(&|r| r.tps())));
    params.insert(
        "duration_s".into(),
        json!(median(&|r| r.duration.as_secs_f64())),
    );
    params.insert("mean_us".into(), json!(latency.mean() / 1e3));
    for (key, q) in [
        ("p5_us", 0.05),
        ("p25_us", 0.25),
        ("p50_us", 0.5),
        ("p75_us", 0.75),
        ("p95_us", 0.95),
        ("p99_us", 0.99),
    ] {
        params.insert(key.into(), json!(us(latency.value_at_quantile(q))));
    }
    params.insert("max_us".into(), json!(us(latency.max())));
    params.insert("latency_samples".into(), json!(latency.len()));
    params.insert("trades".into(), json!(measured[0].trades));
    params.insert(
        "verified".into(),
        json!(results.iter().all(trading::RunResult::verified)),
    );
    Row::new(EXPERIMENT, &label(point), params, &measurement)
}

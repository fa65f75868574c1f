//! The trading experiment (see docs/experiments.md, trading): the
//! `trading` crate's system per variant × transaction-log mode × number of
//! clients × scenario (`seed`: every book ends empty; `resting`: half the
//! asks rest).
//!
//! A row is one (variant, log mode, clients, scenario) point: `variant` is
//! `"<variant>/<txlog>"` (`"<variant>/<txlog>/resting"` in the resting
//! scenario), `msgs` the orders per run and `ns_per_msg` nanoseconds of
//! wall time per order. Its params carry `variant`, `txlog`, `clients`,
//! `scenario`, `orders`, `threads` (dispatcher threads of the actor
//! variants; one thread per client in the sync variant), `tps` (median
//! run), `duration_s` (median run), the client-side latency of every order
//! of every measured run merged into one distribution (`mean_us`, `p5_us`,
//! `p25_us`, `p50_us`, `p75_us`, `p95_us`, `p99_us`, `max_us`), `trades`,
//! `resting` and `verified`. `runtime` is `baseline` for the sync variant
//! (no actors) and `troupe` otherwise.
//!
//! Every run is verified (`trading::verify`: counts, resting orders, and
//! each standby's per-book digests of processing order and trades against
//! its primary's). A run that fails verification still gives its row, with
//! `verified: false` and the problems in `failure`, which fails the
//! benchmark's exit status. Logs are written under a fresh directory per
//! run, deleted afterwards.

mod disk;
mod experiment;
pub mod peer;
pub mod rust_peers;

pub use experiment::Trading;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map};
use trading::{Pattern, RunConfig, Scenario, TxLog, Variant};

use crate::progress::Progress;
use crate::report::Row;
use crate::warmup::Phases;
use crate::progress::Phase;
use crate::runner::{summarize, Measurement, RunOptions, Sample, Scale, WorkloadError};

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
    /// The scenario's pattern.
    pub pattern: Pattern,
    /// Orders each client keeps in flight (1 for the sync variant).
    pub window: usize,
    /// Dispatcher threads for this point, if not the settings' own: the
    /// one-worker twins, which say whether a second worker pays.
    pub threads: Option<usize>,
    /// How the dispatcher's idle threads take work from busy ones.
    pub stealing: troupe::Stealing,
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
                        pattern: Pattern::Seed,
                        window: 1,
                        threads: None,
                stealing: troupe::Stealing::default(),
                    });
                }
            }
        }
        // One-worker twins of the actor rows with the log off and ten or
        // more clients: the parallel efficiency of the second worker is
        // their ratio, read in one run.
        let twins: Vec<Point> = points
            .iter()
            .filter(|p| p.txlog == TxLog::Off && p.variant != Variant::Sync && p.clients >= 10)
            .map(|p| Point {
                threads: Some(1),
                ..*p
            })
            .collect();
        points.extend(twins);
        // Durable orders with many in flight per client, as real clients
        // keep them: 10 clients with 64 each under group commit.
        for variant in [Variant::RequestReply, Variant::OneWay] {
            points.push(Point {
                variant,
                txlog: TxLog::GroupCommit,
                clients: 10,
                pattern: Pattern::Seed,
                window: WINDOW,
                threads: None,
                stealing: troupe::Stealing::default(),
            });
        }
        // The resting scenario once per variant, so the published results
        // exercise the replica check where the books do not end empty.
        for variant in Variant::ALL {
            points.push(Point {
                variant,
                txlog: TxLog::Off,
                clients: 10,
                pattern: Pattern::Resting,
                window: 1,
                threads: None,
                stealing: troupe::Stealing::default(),
            });
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

/// The window of the default pipelined rows.
pub const WINDOW: usize = 64;

fn label(p: &Point) -> String {
    let base = match p.pattern {
        Pattern::Seed => format!("{}/{}", p.variant, p.txlog),
        pattern => format!("{}/{}/{pattern}", p.variant, p.txlog),
    };
    let base = match p.window {
        1 => base,
        w => format!("{base}/w{w}"),
    };
    let base = match p.threads {
        Some(t) => format!("{base}/t{t}"),
        None => base,
    };
    match p.stealing {
        troupe::Stealing::Adaptive => base,
        other => format!("{base}/{other}"),
    }
}

/// Runs every selected point: warm-up runs until the [`WarmUp`](crate::warmup::WarmUp) rule is
/// met, then `repeats` measured runs each.
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
        let scenario = Scenario::new(point.clients, orders)
            .map_err(|e| WorkloadError::new(e.to_string()))?
            .with_pattern(point.pattern);
        // Warm-up runs until the rule is met, then the measured runs; the
        // first of `results` are the warm-up.
        let mut results: Vec<trading::RunResult> = Vec::new();
        let mut phases = Phases::new(options.repeats);
        let rtt = crate::core_latency::Around::start();
        // The disk's own flush time, next to the rows that wait for it.
        let fdatasync_us = if point.txlog == TxLog::GroupCommit {
            Some(disk::fdatasync_us(&settings.log_root).map_err(WorkloadError::new)?)
        } else {
            None
        };
        let mut run = 0;
        while let Some(phase) = phases.next_phase() {
            run += 1;
            progress.phase(phase);
            let dir = settings
                .log_root
                .join(format!("troupe-trading-{}-{i}-{run}", std::process::id()));
            let config = RunConfig {
                variant: point.variant,
                scenario,
                txlog: point.txlog,
                log_root: (point.txlog != TxLog::Off).then(|| dir.clone()),
                threads: point.threads.unwrap_or(settings.threads),
                stealing: point.stealing,
                window: point.window,
                timeout: Duration::from_secs(600),
            };
            let outcome = trading::run(&config);
            let _ = std::fs::remove_dir_all(&dir);
            let result = outcome.map_err(|e| {
                progress.finish();
                WorkloadError::new(e.to_string())
                    .context(&format!("{} c{}", label(point), point.clients))
            })?;
            progress.note(&format!(
                "trading: [{}/{}] {} clients={} {}: {:.0} orders/s, p95 {:.1} us",
                i + 1,
                selected.len(),
                label(point),
                point.clients,
                phase,
                result.tps(),
                result.latency_ns.value_at_quantile(0.95) as f64 / 1e3
            ));
            if !result.verified() {
                progress.note(&format!(
                    "trading: {} clients={}: verification failed: {}",
                    label(point),
                    point.clients,
                    result.problems.join("; ")
                ));
            }
            if phase == Phase::WarmUp {
                phases.warmed(1e9 / result.tps());
            }
            results.push(result);
        }
        let threads = point.threads.unwrap_or(settings.threads);
        let mut row = row(point, &results, phases.into_warmups_ns(), threads);
        if point.variant != Variant::Sync {
            row.params
                .insert("stealing".into(), json!(point.stealing.to_string()));
        }
        row.params
            .insert(crate::core_latency::PARAM.into(), rtt.finish());
        if let Some(us) = fdatasync_us {
            row.params.insert("fdatasync_us".into(), json!(us));
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The row of one point from its warm-up runs (the first
/// `warmups_ns.len()` of `results`) and measured runs; a failed row if any
/// of them failed verification (the first failure's problems).
fn row(point: &Point, results: &[trading::RunResult], warmups_ns: Vec<f64>, threads: usize) -> Row {
    let sample = |r: &trading::RunResult| Sample {
        msgs: r.orders(),
        elapsed: r.duration,
    };
    let w = warmups_ns.len();
    let measurement = Measurement {
        warmup: sample(&results[w - 1]),
        warmups_ns,
        samples: results[w..].iter().map(sample).collect(),
        // Taken by `trading::run` around the timed part only.
        costs: results[w..]
            .iter()
            .map(|r| crate::cost::Spent {
                cpu: r.spent.cpu.unwrap_or_default(),
                sched: r.spent.sched,
            })
            .collect(),
    };
    let measured = &results[w..];
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
    params.insert("window".into(), json!(point.window));
    params.insert("scenario".into(), json!(point.pattern.name()));
    // Threads that ran the workload: the dispatcher's for the actor
    // variants, one per client for the sync variant (no dispatcher).
    params.insert(
        "threads".into(),
        json!(if point.variant == Variant::Sync {
            point.clients
        } else {
            threads
        }),
    );
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
    params.insert("resting".into(), json!(measured[0].resting));
    let failure = results.iter().enumerate().find_map(|(run, r)| {
        (!r.verified()).then(|| {
            let which = if run == 0 {
                "warm-up".to_string()
            } else {
                format!("run {run}")
            };
            format!(
                "verification failed ({which} of {}): {}",
                results.len(),
                r.problems.join("; ")
            )
        })
    });
    params.insert("verified".into(), json!(failure.is_none()));
    let mut row = Row::new(EXPERIMENT, &label(point), params, &measurement);
    row.failure = failure;
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> Point {
        Point {
            variant: Variant::OneWay,
            txlog: TxLog::Off,
            clients: 2,
            pattern: Pattern::Resting,
            window: 1,
            threads: None,
            stealing: troupe::Stealing::default(),
        }
    }

    fn runs() -> Vec<trading::RunResult> {
        let config = RunConfig {
            variant: Variant::OneWay,
            scenario: Scenario::new(2, 600).unwrap().with_pattern(Pattern::Resting),
            txlog: TxLog::Off,
            log_root: None,
            threads: 2,
            stealing: troupe::Stealing::default(),
            window: 1,
            timeout: Duration::from_secs(60),
        };
        (0..2).map(|_| trading::run(&config).unwrap()).collect()
    }

    #[test]
    fn verified_runs_make_a_valid_row() {
        let row = row(&point(), &runs(), vec![1.0], 2);
        assert_eq!(row.failure, None);
        assert_eq!(row.params["verified"], json!(true));
        assert_eq!(row.params["resting"], json!(150));
        assert_eq!(row.variant, "one-way/off/resting");
    }

    #[test]
    fn a_run_that_fails_verification_makes_a_failed_row_not_an_error() {
        let mut runs = runs();
        runs[1]
            .problems
            .push("engine 0: standby processed other orders".into());
        let row = row(&point(), &runs, vec![1.0], 2);
        assert_eq!(row.params["verified"], json!(false));
        let failure = row.failure.expect("the row is marked failed");
        assert!(failure.contains("run 1 of 2"), "{failure}");
        assert!(failure.contains("standby processed other orders"), "{failure}");
    }
}

//! The soak run: minutes of mixed load in one process, with the resident
//! memory sampled every second, to show whether anything grows.
//!
//! Four workloads run side by side until the deadline:
//! - trading: the seed scenario, one-way, 10 clients, 150,000 orders per
//!   run, run after run, each verified;
//! - primes: the actor-backed server under an open-loop load of 2,000
//!   requests/s over 50 connections, every answer checked;
//! - delayed: 5,000 messages a second, each sent by the scheduler one second
//!   later to a counting actor; at the end every one must have arrived;
//! - overload: a producer faster than its consumer behind a bounded
//!   mailbox, and asks that time out (see [`overload`]); at the end every
//!   message sent must have been handled and no ask may be left pending.
//!
//! The memory curve's drift is the mean of the last minute against the mean
//! of the second minute (the first is warm-up: caches, pools and wheels
//! reach their working size). A leak shows as steady growth; a plateau is
//! the workload's working set.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Map};
use troupe::prelude::*;

mod experiment;
mod overload;

pub use experiment::Soak;

use crate::experiments::primes::loadgen::{run_round, Round};
use crate::report::Row;
use crate::rss;
use crate::runner::{Measurement, RunOptions, Sample, WorkloadError};

/// The experiment's name in reports.
pub const EXPERIMENT: &str = "soak";

/// What the soak measured.
struct Tally {
    trading_runs: AtomicU64,
    trading_orders: AtomicU64,
    trading_failures: AtomicU64,
    primes_ok: AtomicU64,
    primes_errors: AtomicU64,
    delayed_sent: AtomicU64,
    delayed_received: Arc<AtomicU64>,
}

struct Counter(Arc<AtomicU64>);

impl Actor for Counter {
    type Msg = ();

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs the soak for `duration`; one row with the memory series.
pub fn run(duration: &Duration, _: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let err = |e: &dyn std::fmt::Display| WorkloadError::new(e.to_string());
    let tally = Arc::new(Tally {
        trading_runs: AtomicU64::new(0),
        trading_orders: AtomicU64::new(0),
        trading_failures: AtomicU64::new(0),
        primes_ok: AtomicU64::new(0),
        primes_errors: AtomicU64::new(0),
        delayed_sent: AtomicU64::new(0),
        delayed_received: Arc::new(AtomicU64::new(0)),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let deadline = started + *duration;

    let trading = {
        let (tally, stop) = (tally.clone(), stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let config = trading::RunConfig {
                    variant: trading::Variant::OneWay,
                    scenario: trading::Scenario::new(10, 150_000).expect("valid scenario"),
                    txlog: trading::TxLog::Off,
                    log_root: None,
                    threads: 1,
                    stealing: troupe::Stealing::default(),
                    window: 1,
                    timeout: Duration::from_secs(120),
                };
                match trading::run(&config) {
                    Ok(r) if r.verified() => {
                        tally.trading_runs.fetch_add(1, Ordering::Relaxed);
                        tally
                            .trading_orders
                            .fetch_add(r.orders(), Ordering::Relaxed);
                    }
                    _ => {
                        tally.trading_failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    };

    let server = crate::experiments::primes::start(primes::server::Kind::Actor)?;
    let addr = server.addr();
    let primes = {
        let (tally, stop) = (tally.clone(), stop.clone());
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| err(&e))?;
        thread::spawn(move || {
            let round = Round {
                addr,
                connections: 50,
                requests: 4_000,
                path: "/primes/20".into(),
                expected: Arc::new(primes::sieve::render_json(
                    &primes::sieve::PrimeCache::new().first(20)[..20],
                )),
                rate: Some(2_000.0),
            };
            while !stop.load(Ordering::Relaxed) {
                let r = client.block_on(run_round(&round));
                tally.primes_ok.fetch_add(r.ok, Ordering::Relaxed);
                tally
                    .primes_errors
                    .fetch_add(r.errors + r.connect_errors, Ordering::Relaxed);
            }
        })
    };

    let system = ActorSystem::builder()
        .name("soak-delayed")
        .threads(1)
        .build()
        .map_err(|e| err(&e))?;
    let counter = {
        let received = tally.delayed_received.clone();
        system
            .spawn(Props::new(move || Counter(received.clone())))
            .map_err(|e| err(&e))?
    };
    let delayed = {
        let (tally, stop, scheduler) = (tally.clone(), stop.clone(), system.scheduler().clone());
        thread::spawn(move || {
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..500 {
                    scheduler.schedule_once(Duration::from_secs(1), &counter, ());
                }
                tally.delayed_sent.fetch_add(500, Ordering::Relaxed);
                next += Duration::from_millis(100);
                thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        })
    };

    let overload = overload::Overload::start(&stop)?;

    let mut series = Vec::new();
    let mut next = started;
    while Instant::now() < deadline {
        next += Duration::from_secs(1);
        thread::sleep(next.saturating_duration_since(Instant::now()));
        let secs = started.elapsed().as_secs_f64();
        let bytes = rss::current_rss_bytes().unwrap_or(0);
        series.push((secs, bytes));
        if series.len() % 10 == 0 {
            eprintln!(
                "soak: {secs:.0} s, rss {:.1} MiB, trading runs {}, primes ok {}, delayed {}/{}, overload sent {}",
                bytes as f64 / (1 << 20) as f64,
                tally.trading_runs.load(Ordering::Relaxed),
                tally.primes_ok.load(Ordering::Relaxed),
                tally.delayed_received.load(Ordering::Relaxed),
                tally.delayed_sent.load(Ordering::Relaxed),
                overload.snapshot().sent,
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let panicked = join_workloads(vec![
        ("trading", trading),
        ("primes", primes),
        ("delayed", delayed),
    ]);
    let counted = overload.snapshot();
    let overload_result = overload.finish();
    crate::experiments::primes::stop(server)?;
    // The last scheduled messages fire one second after they were sent.
    let drain_deadline = Instant::now() + Duration::from_secs(10);
    while tally.delayed_received.load(Ordering::Relaxed)
        < tally.delayed_sent.load(Ordering::Relaxed)
        && Instant::now() < drain_deadline
    {
        thread::sleep(Duration::from_millis(50));
    }
    system.shutdown();
    system.await_termination().map_err(|e| err(&e))?;

    let mean = |from: f64, to: f64| {
        let picked: Vec<f64> = series
            .iter()
            .filter(|(s, _)| *s > from && *s <= to)
            .map(|(_, b)| *b as f64)
            .collect();
        (!picked.is_empty()).then(|| picked.iter().sum::<f64>() / picked.len() as f64)
    };
    let total = started.elapsed().as_secs_f64();
    let (early, late) = if total >= 180.0 {
        (mean(60.0, 120.0), mean(total - 60.0, total))
    } else {
        // Short runs: second third against last third.
        (
            mean(total / 3.0, 2.0 * total / 3.0),
            mean(2.0 * total / 3.0, total),
        )
    };
    let drift = match (early, late) {
        (Some(e), Some(l)) if e > 0.0 => (l - e) / e * 100.0,
        _ => f64::NAN,
    };
    let peak = series.iter().map(|(_, b)| *b).max().unwrap_or(0);
    let mut params = Map::new();
    for (key, value) in [
        ("trading_runs", &tally.trading_runs),
        ("trading_orders", &tally.trading_orders),
        ("trading_failures", &tally.trading_failures),
        ("primes_ok", &tally.primes_ok),
        ("primes_errors", &tally.primes_errors),
        ("delayed_sent", &tally.delayed_sent),
    ] {
        params.insert(key.into(), json!(value.load(Ordering::Relaxed)));
    }
    for (key, value) in [
        ("overload_sent", counted.sent),
        ("overload_send_timeouts", counted.send_timeouts),
        ("overload_asks_answered", counted.asks_answered),
        ("overload_asks_timed_out", counted.asks_timed_out),
        ("overload_asks_refused", counted.asks_refused),
        ("overload_asks_failed", counted.asks_failed),
    ] {
        params.insert(key.into(), json!(value));
    }
    params.insert(
        "delayed_received".into(),
        json!(tally.delayed_received.load(Ordering::Relaxed)),
    );
    params.insert("seconds".into(), json!(total));
    params.insert(
        "rss_early_mib".into(),
        json!(early.map(|b| b / (1 << 20) as f64)),
    );
    params.insert(
        "rss_late_mib".into(),
        json!(late.map(|b| b / (1 << 20) as f64)),
    );
    params.insert("rss_peak_mib".into(), json!(peak as f64 / (1 << 20) as f64));
    params.insert("rss_drift_pct".into(), json!(drift));
    params.insert(
        "rss_series".into(),
        json!(series
            .iter()
            .map(|(s, b)| [*s, *b as f64])
            .collect::<Vec<_>>()),
    );
    let work = tally.trading_orders.load(Ordering::Relaxed)
        + tally.primes_ok.load(Ordering::Relaxed)
        + tally.delayed_received.load(Ordering::Relaxed);
    let sample = Sample {
        msgs: work.max(1),
        elapsed: Duration::from_secs_f64(total),
    };
    let measurement = Measurement::new(sample, vec![sample]);
    let failures = counted.asks_failed
        + tally.trading_failures.load(Ordering::Relaxed)
        + tally.primes_errors.load(Ordering::Relaxed)
        + tally.delayed_sent.load(Ordering::Relaxed)
        - tally
            .delayed_received
            .load(Ordering::Relaxed)
            .min(tally.delayed_sent.load(Ordering::Relaxed));
    let row = Row::new(EXPERIMENT, "mixed", params, &measurement);
    println!(
        "soak: {total:.0} s of trading + primes + delayed + overload; rss early {:.1} MiB, late {:.1} MiB, peak {:.1} MiB, drift {drift:+.1}%",
        early.unwrap_or(f64::NAN) / (1 << 20) as f64,
        late.unwrap_or(f64::NAN) / (1 << 20) as f64,
        peak as f64 / (1 << 20) as f64
    );
    println!(
        "  trading: {} verified runs ({} orders), {} failed; primes: {} ok, {} errors; delayed: {}/{} arrived",
        tally.trading_runs.load(Ordering::Relaxed),
        tally.trading_orders.load(Ordering::Relaxed),
        tally.trading_failures.load(Ordering::Relaxed),
        tally.primes_ok.load(Ordering::Relaxed),
        tally.primes_errors.load(Ordering::Relaxed),
        tally.delayed_received.load(Ordering::Relaxed),
        tally.delayed_sent.load(Ordering::Relaxed),
    );
    println!(
        "  overload: {} sent through a mailbox of {}, {} sends found no room for a second; asks: {} answered, {} timed out, {} refused by the full mailbox, {} failed otherwise; {}",
        counted.sent,
        overload::CAPACITY,
        counted.send_timeouts,
        counted.asks_answered,
        counted.asks_timed_out,
        counted.asks_refused,
        counted.asks_failed,
        match &overload_result {
            Ok(handled) => format!("all {handled} handled, no ask left pending"),
            Err(e) => e.to_string(),
        }
    );
    overload_result?;
    if !panicked.is_empty() {
        return Err(WorkloadError::new(format!(
            "soak: the {} workload panicked",
            panicked.join(", ")
        )));
    }
    if failures > 0 {
        return Err(WorkloadError::new(format!(
            "soak: {failures} failures (see the line above)"
        )));
    }
    Ok(vec![row])
}

/// Joins the workload threads and names those that panicked: a workload
/// that dies early would otherwise pass as a quiet one.
fn join_workloads(threads: Vec<(&'static str, thread::JoinHandle<()>)>) -> Vec<&'static str> {
    threads
        .into_iter()
        .filter_map(|(name, thread)| thread.join().is_err().then_some(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_workload_is_named() {
        let fine = thread::spawn(|| {});
        let broken = thread::spawn(|| panic!("workload failure (expected by this test)"));
        assert_eq!(
            join_workloads(vec![("fine", fine), ("broken", broken)]),
            ["broken"]
        );
    }
}

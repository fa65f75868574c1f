//! One benchmark run: build the system for a variant, let the clients place
//! their orders, collect latencies, and verify (see `verify`).

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::config::{RunConfig, Variant};
use crate::engine_core::EngineSummary;
use crate::error::RunError;
use crate::txlog::TxLog;
use crate::variants::{actors, locked};
use crate::verify::verify;

/// What a run measured.
#[derive(Debug)]
pub struct RunResult {
    /// The configuration it ran.
    pub config: RunConfig,
    /// First order sent to last order completed (the clock starts before
    /// the clients are released).
    pub duration: Duration,
    /// Every completed order's latency at its client, send to completion,
    /// in ns.
    pub latency_ns: Histogram<u64>,
    /// CPU time and dispatcher counters over the timed part.
    pub spent: crate::verify::Spent,
    /// Trades executed by the primaries.
    pub trades: u64,
    /// Orders resting in the primaries' books at the end.
    pub resting: u64,
    /// (primary, standby) summaries per engine.
    pub engines: Vec<(EngineSummary, EngineSummary)>,
    /// Everything verification found wrong; empty means verified.
    pub problems: Vec<String>,
}

impl RunResult {
    /// Orders placed.
    pub fn orders(&self) -> u64 {
        self.config.scenario.orders()
    }

    /// Orders per second over the run.
    pub fn tps(&self) -> f64 {
        self.orders() as f64 / self.duration.as_secs_f64()
    }

    /// True if verification found nothing wrong.
    pub fn verified(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Runs the scenario once. A run that completes but fails its checks is
/// not an error: its `problems` say what failed.
///
/// # Errors
///
/// If the system cannot be built (bad configuration, a log that cannot be
/// opened) or the clients do not finish within the timeout.
pub fn run(config: &RunConfig) -> Result<RunResult, RunError> {
    if config.txlog != TxLog::Off && config.log_root.is_none() {
        return Err(RunError::NoLogDirectory);
    }
    if config.variant == Variant::Sync && config.window > 1 {
        return Err(RunError::WindowNeedsActors);
    }
    let raw = match config.variant {
        Variant::Sync => locked::run(config)?,
        Variant::RequestReply | Variant::OneWay => actors::run(config)?,
    };
    let problems = verify(&config.scenario, &raw);
    Ok(RunResult {
        config: config.clone(),
        duration: raw.finished.duration_since(raw.started),
        spent: raw.spent,
        trades: raw.engines.iter().map(|(p, _)| p.trades).sum(),
        resting: raw.engines.iter().map(|(p, _)| p.resting).sum(),
        engines: raw.engines,
        latency_ns: raw.latency_ns,
        problems,
    })
}

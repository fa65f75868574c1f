//! One benchmark run of the seed scenario: build the system for a variant,
//! let the clients place their orders, collect latencies, and verify.
//!
//! Verification: every client finished; trades == orders / 2; the primaries
//! processed every order and rejected none; every standby has exactly its
//! primary's orders, trades and books (fingerprint).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine_core::EngineSummary;
use crate::topology::Scenario;
use crate::txlog::TxLog;
use crate::{actors_run, sync};

/// How clients, receivers and engines talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Locks and direct calls on the clients' threads.
    Sync,
    /// Actors; the primary replies once both engines are done.
    RequestReply,
    /// Actors; fire-and-forget sends and a completion token.
    OneWay,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 3] = [Variant::Sync, Variant::RequestReply, Variant::OneWay];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Sync => "sync",
            Variant::RequestReply => "request-reply",
            Variant::OneWay => "one-way",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                format!("unknown variant {s:?} (expected sync, request-reply or one-way)")
            })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The variant.
    pub variant: Variant,
    /// Clients and loops.
    pub scenario: Scenario,
    /// Whether and how engines log.
    pub txlog: TxLog,
    /// Where engines keep their logs (one directory per engine below it);
    /// must be given when the log is on.
    pub log_root: Option<PathBuf>,
    /// Dispatcher threads for the actor variants.
    pub threads: usize,
    /// Give up (and report) if the clients are not done by then.
    pub timeout: Duration,
}

/// What a run measured.
#[derive(Debug)]
pub struct RunResult {
    /// The configuration it ran.
    pub config: RunConfig,
    /// First order sent to last order completed.
    pub duration: Duration,
    /// Every order's latency at its client, send to completion, in ns.
    pub latency_ns: Histogram<u64>,
    /// Trades executed by the primaries.
    pub trades: u64,
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

/// Runs the scenario once.
///
/// # Errors
///
/// If the system cannot be built (bad configuration, a log that cannot be
/// opened) or the clients do not finish within the timeout.
pub fn run(config: &RunConfig) -> Result<RunResult, String> {
    if config.txlog != TxLog::Off && config.log_root.is_none() {
        return Err("a log directory is needed when the transaction log is on".into());
    }
    let raw = match config.variant {
        Variant::Sync => sync::run(config)?,
        Variant::RequestReply | Variant::OneWay => actors_run::run(config)?,
    };
    let problems = verify(config.scenario, &raw);
    let latency_ns = raw.latency_ns;
    Ok(RunResult {
        config: config.clone(),
        duration: raw.finished.duration_since(raw.started),
        trades: raw.engines.iter().map(|(p, _)| p.trades).sum(),
        engines: raw.engines,
        latency_ns,
        problems,
    })
}

/// What a variant's runner hands back for verification.
pub struct RawRun {
    /// When the clients were started.
    pub started: Instant,
    /// When the last order completed.
    pub finished: Instant,
    /// Merged client latencies (ns).
    pub latency_ns: Histogram<u64>,
    /// Clients that reported completion.
    pub clients_finished: usize,
    /// (primary, standby) per engine.
    pub engines: Vec<(EngineSummary, EngineSummary)>,
}

fn verify(scenario: Scenario, raw: &RawRun) -> Vec<String> {
    let mut problems = Vec::new();
    let orders = scenario.orders();
    if raw.clients_finished != scenario.clients {
        problems.push(format!(
            "{} of {} clients finished",
            raw.clients_finished, scenario.clients
        ));
    }
    if raw.latency_ns.len() != orders {
        problems.push(format!(
            "{} orders completed, {orders} placed",
            raw.latency_ns.len()
        ));
    }
    let processed: u64 = raw.engines.iter().map(|(p, _)| p.orders).sum();
    let trades: u64 = raw.engines.iter().map(|(p, _)| p.trades).sum();
    let rejected: u64 = raw
        .engines
        .iter()
        .map(|(p, s)| p.rejected + s.rejected)
        .sum();
    if processed != orders {
        problems.push(format!(
            "primaries processed {processed} orders of {orders}"
        ));
    }
    if trades != orders / 2 {
        problems.push(format!("{trades} trades, expected {}", orders / 2));
    }
    if rejected != 0 {
        problems.push(format!("{rejected} orders were rejected"));
    }
    for (i, (primary, standby)) in raw.engines.iter().enumerate() {
        if primary != standby {
            problems.push(format!(
                "engine {i}: standby {standby:?} differs from primary {primary:?}"
            ));
        }
    }
    problems
}

//! What a variant's runner hands back, and the checks every run must pass.
//!
//! - every client finished, every order completed (none failed), and the
//!   clock started before the first order was sent;
//! - the primaries processed every order, made the scenario's trades
//!   (orders / 2), rejected none, and left the scenario's resting orders
//!   (none in the seed pattern, half the asks in the resting one);
//! - every standby is its primary's replica: the same counters, the same
//!   resting orders (fingerprint), and per book the same digest of the
//!   orders in processing order and of every trade (ids, price, quantity).
//!   The digests are what catch a standby that processed the same orders
//!   in another order: in the seed pattern every book ends empty and the
//!   counts hold under any order.

use std::time::Instant;

use hdrhistogram::Histogram;

use crate::engine_core::EngineSummary;
use crate::topology::{book_names, Scenario};

/// The process's CPU time and troupe's dispatcher counters over a run's
/// timed part: what the run cost besides its time. Taken at the start of
/// the clock and when the last client has reported, so setup, shutdown and
/// verification are not in it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spent {
    /// CPU time of every thread of the process (`None` if the clock could
    /// not be read).
    pub cpu: Option<std::time::Duration>,
    /// What every troupe pool of the process did (zero for the sync
    /// variant, which has none).
    pub sched: troupe::DispatcherStats,
}

/// Starts measuring a [`Spent`]; call the result when the timed part ends.
pub(crate) fn spending() -> impl FnOnce() -> Spent {
    let cpu = cpu_time::ProcessTime::try_now().ok();
    let sched = troupe::DispatcherStats::process();
    move || Spent {
        cpu: cpu.map(|t| t.elapsed()),
        sched: troupe::DispatcherStats::process().since(&sched),
    }
}

/// What a variant's runner hands back for verification.
#[derive(Debug)]
pub struct RawRun {
    /// When the clock started (before any client was released).
    pub started: Instant,
    /// When the first order was sent.
    pub first_sent: Instant,
    /// When the last order completed.
    pub finished: Instant,
    /// What the process spent from the start of the clock until the last
    /// client reported (see [`Spent`]).
    pub spent: Spent,
    /// Merged client latencies of completed orders (ns).
    pub latency_ns: Histogram<u64>,
    /// Orders the clients were told had failed.
    pub failed: u64,
    /// Clients that reported completion.
    pub clients_finished: usize,
    /// (primary, standby) per engine.
    pub engines: Vec<(EngineSummary, EngineSummary)>,
}

/// Everything wrong with `raw` as a run of `scenario`; empty means verified.
pub fn verify(scenario: &Scenario, raw: &RawRun) -> Vec<String> {
    let mut problems = Vec::new();
    let orders = scenario.orders();
    if raw.clients_finished != scenario.clients {
        problems.push(format!(
            "{} of {} clients finished",
            raw.clients_finished, scenario.clients
        ));
    }
    if raw.latency_ns.len() + raw.failed != orders {
        problems.push(format!(
            "{} orders completed and {} failed, {orders} placed",
            raw.latency_ns.len(),
            raw.failed
        ));
    }
    if raw.failed != 0 {
        problems.push(format!("{} orders failed", raw.failed));
    }
    if raw.first_sent < raw.started {
        problems.push("the clock started after the first order was sent".into());
    }
    let sum =
        |f: &dyn Fn(&EngineSummary) -> u64| raw.engines.iter().map(|(p, _)| f(p)).sum::<u64>();
    let processed = sum(&|p| p.orders);
    let trades = sum(&|p| p.trades);
    let resting = sum(&|p| p.resting);
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
    if trades != scenario.trades() {
        problems.push(format!("{trades} trades, expected {}", scenario.trades()));
    }
    if resting != scenario.resting() {
        problems.push(format!(
            "{resting} orders resting, expected {}",
            scenario.resting()
        ));
    }
    if rejected != 0 {
        problems.push(format!("{rejected} orders were rejected"));
    }
    for (i, (primary, standby)) in raw.engines.iter().enumerate() {
        if let Some(problem) = compare_pair(i, primary, standby) {
            problems.push(problem);
        }
    }
    problems
}

/// Why the standby of engine `engine` is not its primary's replica, if it
/// is not.
pub fn compare_pair(
    engine: usize,
    primary: &EngineSummary,
    standby: &EngineSummary,
) -> Option<String> {
    let counts = |s: &EngineSummary| (s.orders, s.trades, s.rejected, s.resting);
    if counts(primary) != counts(standby) {
        return Some(format!(
            "engine {engine}: standby (orders, trades, rejected, resting) {:?} differ from the primary's {:?}",
            counts(standby),
            counts(primary)
        ));
    }
    let books = primary.books_differing_from(standby);
    if !books.is_empty() {
        let names = book_names();
        let books: Vec<&str> = books.iter().map(|&b| names[b].as_str()).collect();
        return Some(format!(
            "engine {engine}: standby processed other orders or made other trades than the primary in books {}",
            books.join(", ")
        ));
    }
    if primary.fingerprint != standby.fingerprint {
        return Some(format!(
            "engine {engine}: standby's resting orders differ from the primary's"
        ));
    }
    None
}

//! What a cluster run found: the engines' reports, the checks of what
//! survived, and the summary `trading cluster` prints.
//!
//! The checks run over the engine nodes alive at the end. A node that
//! ended on its own (fail-stop: say, a paused primary that found its
//! leases moved when it resumed) is listed in the outcome with its reason
//! and left out: its books live on in the node that took its leases. That
//! is expected after a fault the run injected, and a problem in a run
//! without one. (A node alive that does not answer never gets here: the
//! launcher reports it as an error.)
//!
//! - for every engine, exactly one live primary, and its standby (if any)
//!   joined at the revision the primary reports, with the same books and
//!   digests;
//! - every acknowledged order applied exactly once, and no order applied
//!   that was not placed: from the primary's own log when logging is on,
//!   from the counts otherwise. The log holds each order applied since it
//!   began, ids read back and counted; a log that begins with a state (a
//!   standby's catch-up from a primary that had applied orders already)
//!   holds the orders before it as a count and a digest of their ids, which
//!   must equal those of the acknowledged orders missing from the rest of
//!   the log (when some orders were given up, which of them were applied is
//!   unknown, and that part is checked by its count);
//! - the primary's books and applied ids (count, digest) equal a replay of
//!   its log on a fresh market.

use std::io::Write;
use std::path::Path;

use serde::Serialize;
use troupe_cluster::persistence::LocalJournal;

use super::applied::{mix, Applied};
use super::lease::engine_name;
use super::node::ClientsResult;
use super::state::{self, Event};
use super::wire::{EngineMessages, EngineReport};
use crate::engine_core::EngineCore;
use crate::topology::{engine_of, Scenario, ENGINES};

/// One engine as reported at the end.
#[derive(Debug, Serialize)]
pub struct EngineState {
    /// Engine index.
    pub index: usize,
    /// The report.
    pub report: EngineReport,
}

/// An engine node that ended on its own before the checks.
#[derive(Clone, Debug, Serialize)]
pub struct FailStopped {
    /// The node.
    pub node: String,
    /// Its exit code (none if a signal ended it).
    pub status: Option<i32>,
    /// The reason it printed (`fail-stop <why>`), if any.
    pub why: Option<String>,
}

/// What a cluster run measured and found.
#[derive(Debug, Serialize)]
pub struct ClusterOutcome {
    /// Each round of clients' results, in order.
    pub rounds: Vec<ClientsResult>,
    /// Every live engine's report.
    pub engines: Vec<EngineState>,
    /// Wall-clock time of the SIGKILL (Unix ns), if any.
    pub killed_at_ns: Option<u64>,
    /// Wall-clock time of the SIGSTOP (Unix ns), if the primaries' node
    /// was paused instead.
    pub paused_at_ns: Option<u64>,
    /// Wall-clock time the primaries' node was cut off the network (Unix
    /// ns), if it was partitioned instead.
    pub partitioned_at_ns: Option<u64>,
    /// Wall-clock time the NATS server was SIGKILLed (Unix ns), if the
    /// fault was a broker restart instead (no node fault: every node must
    /// reconnect and go on).
    pub broker_killed_at_ns: Option<u64>,
    /// ... and when it was ready again.
    pub broker_restarted_at_ns: Option<u64>,
    /// Engine nodes that ended on their own, left out of the checks.
    pub fail_stopped: Vec<FailStopped>,
    /// For each engine whose primary changed: the SIGKILL (SIGSTOP, cut) to
    /// the first order the new primary accepted, in milliseconds.
    pub failover_ms: Vec<f64>,
    /// Orders the logs hold twice (must be 0).
    pub applied_twice: u64,
    /// Acknowledged orders missing from the primaries (must be 0).
    pub acked_missing: u64,
    /// Everything that did not hold.
    pub problems: Vec<String>,
}

impl ClusterOutcome {
    /// True if every check held.
    pub fn verified(&self) -> bool {
        self.problems.is_empty()
    }

    /// Messages per acknowledged order over every round, each counted
    /// once (by its sender, or by the primary for a receiver's batch):
    /// client to receiver, receiver to primary, primary to standby,
    /// standby to primary, engines to clients, and their sum. Counts what
    /// the live engines report, so a run that lost an engine undercounts;
    /// `None` before any order is acknowledged.
    pub fn messages_per_order(&self) -> Option<[f64; 6]> {
        let acked: u64 = self.rounds.iter().map(|r| r.acked).sum();
        if acked == 0 {
            return None;
        }
        let m: EngineMessages = self.engines.iter().map(|e| e.report.messages).sum();
        let batches: u64 = self.rounds.iter().map(|r| r.batches_sent).sum();
        let per = |n: u64| n as f64 / acked as f64;
        Some([
            per(batches),
            per(m.orders_in),
            per(m.replicate_out),
            per(m.replicated_out),
            per(m.answers_out),
            per(batches + m.total()),
        ])
    }
}

/// What a primary's log holds, replayed: the engine it rebuilds, the ids
/// applied, the count and digest of those in the state the log starts
/// from (if any), the ids of the orders after it, and how many orders it
/// holds twice (an order logged when its id counted as applied already).
struct Logged {
    core: EngineCore,
    applied: Applied,
    base: Option<(u64, u64)>,
    orders: Vec<u64>,
    twice: u64,
}

fn replay_log(dir: &Path, persistence_id: &str) -> Result<Logged, String> {
    let mut logged = Logged {
        core: EngineCore::new(),
        applied: Applied::default(),
        base: None,
        orders: Vec::new(),
        twice: 0,
    };
    let mut reader = state::EventReader::default();
    LocalJournal::read_events(dir, persistence_id, &mut |_, bytes| {
        match reader.read_stored(persistence_id, bytes)? {
            Event::Order(order) => {
                if !logged.applied.insert(order.id) {
                    logged.twice += 1;
                }
                logged.orders.push(order.id);
                logged.core.process(&order);
            }
            // A state is a whole engine: it replaces what came before
            // (only a standby's catch-up, its log's first event).
            Event::State(s) => {
                logged.base = Some(s.applied.digest()).filter(|(count, _)| *count > 0);
                logged.core = s.core;
                logged.applied = s.applied;
                logged.orders.clear();
            }
        }
        Ok(())
    })
    .map_err(|e| format!("read {}: {e}", dir.display()))?;
    Ok(logged)
}

/// One round of clients as placed: the scenario and its first client id.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    /// The round's scenario.
    pub scenario: Scenario,
    /// Its first client's id.
    pub client_base: usize,
}

/// Checks what survived against every round placed (`placed[i]` produced
/// `outcome.rounds[i]`); adds what does not hold to `outcome.problems`.
pub fn check(outcome: &mut ClusterOutcome, placed: &[Placed], logs: Option<&Path>) {
    let fault_at = outcome
        .killed_at_ns
        .or(outcome.paused_at_ns)
        .or(outcome.partitioned_at_ns);
    for f in &outcome.fail_stopped {
        let why = f.why.as_deref().unwrap_or("no reason printed");
        if fault_at.is_none() {
            outcome.problems.push(format!(
                "{} ended on its own (exit code {:?}: {why}) with no node fault injected",
                f.node, f.status
            ));
        } else if f.why.is_none() {
            // A fail-stop always says why; an exit without a reason is a
            // crash, not the fail-stop the design relies on.
            outcome.problems.push(format!(
                "{} ended (exit code {:?}) without a fail-stop reason",
                f.node, f.status
            ));
        }
    }
    // What each engine must hold: every acknowledged order of its books;
    // what it may hold: every order placed there.
    let mut acked_by_engine: Vec<Vec<u64>> = vec![Vec::new(); ENGINES];
    let mut given_up_by_engine = [0u64; ENGINES];
    let mut placed_by_engine = [0u64; ENGINES];
    let mut placed_ids = std::collections::HashMap::new();
    for (round, p) in outcome.rounds.iter().zip(placed) {
        let given_up: std::collections::HashSet<u64> = round.given_up.iter().copied().collect();
        if round.acked + given_up.len() as u64 != p.scenario.orders() {
            outcome.problems.push(format!(
                "{} acknowledged + {} given up != {} placed",
                round.acked,
                given_up.len(),
                p.scenario.orders()
            ));
        }
        for c in 0..p.scenario.clients {
            for n in 0..p.scenario.orders_per_client() {
                let o = p.scenario.order(p.client_base + c, n);
                let engine = engine_of(o.book);
                placed_by_engine[engine] += 1;
                placed_ids.insert(o.id, engine);
                if given_up.contains(&o.id) {
                    given_up_by_engine[engine] += 1;
                } else {
                    acked_by_engine[engine].push(o.id);
                }
            }
        }
    }
    for index in 0..ENGINES {
        let of_engine: Vec<&EngineReport> = outcome
            .engines
            .iter()
            .filter(|e| e.index == index)
            .map(|e| &e.report)
            .collect();
        let primaries: Vec<&&EngineReport> =
            of_engine.iter().filter(|r| r.role == "primary").collect();
        let [primary] = primaries.as_slice() else {
            outcome.problems.push(format!(
                "engine {index}: {} primaries among the live nodes",
                primaries.len()
            ));
            continue;
        };
        for other in of_engine.iter().filter(|r| r.role != "primary") {
            if other.role != "standby" || Some(other.epoch) != primary.standby_epoch {
                outcome.problems.push(format!(
                    "engine {index}: {} on {} following epoch {}, while the primary's standby \
                     joined at {:?}",
                    other.role, other.node, other.epoch, primary.standby_epoch
                ));
            } else if (
                other.orders,
                other.fingerprint,
                &other.digests,
                other.applied_digest,
            ) != (
                primary.orders,
                primary.fingerprint,
                &primary.digests,
                primary.applied_digest,
            ) {
                outcome.problems.push(format!(
                    "engine {index}: standby on {} differs from its primary ({} vs {} orders)",
                    other.node, other.orders, primary.orders
                ));
            }
        }
        // With no node fault (none, or a broker restart), both engine
        // nodes are alive: every engine keeps its primary and its standby.
        if fault_at.is_none() {
            if !of_engine.iter().any(|r| r.role == "standby") {
                outcome.problems.push(format!(
                    "engine {index}: no standby, with no node fault injected"
                ));
            }
            if primary.promoted_at_ns.is_some() {
                outcome.problems.push(format!(
                    "engine {index}: the standby on {} took over, with no node fault injected",
                    primary.node
                ));
            }
        }
        if let (Some(fault_at), Some(first)) = (fault_at, primary.first_order_after_promotion_ns) {
            if primary.promoted_at_ns.is_some() {
                outcome
                    .failover_ms
                    .push(first.saturating_sub(fault_at) as f64 / 1e6);
            }
        }
        let acked = &acked_by_engine[index];
        match logs {
            Some(root) => {
                let dir = root.join(&primary.node);
                let logged = match replay_log(&dir, &engine_name(index)) {
                    Ok(l) => l,
                    Err(e) => {
                        outcome.problems.push(e);
                        continue;
                    }
                };
                outcome.applied_twice += logged.twice;
                let in_log: std::collections::HashSet<u64> =
                    logged.orders.iter().copied().collect();
                let before: Vec<u64> = acked
                    .iter()
                    .copied()
                    .filter(|id| !in_log.contains(id))
                    .collect();
                let (count, digest) = logged.base.unwrap_or((0, 0));
                let expected = before.iter().fold(0u64, |d, id| d.wrapping_add(mix(*id)));
                let given_up = given_up_by_engine[index];
                if (before.len() as u64) > count {
                    outcome.acked_missing += before.len() as u64 - count;
                } else if given_up == 0 && (count, digest) != (before.len() as u64, expected) {
                    outcome.problems.push(format!(
                        "engine {index}: the state its log starts from holds {count} orders, \
                         not the {} acknowledged ones missing from the rest of the log",
                        before.len()
                    ));
                } else if count > before.len() as u64 + given_up {
                    outcome.problems.push(format!(
                        "engine {index}: the state its log starts from holds {count} orders, \
                         more than the {} acknowledged and {given_up} given up missing from the \
                         rest of the log",
                        before.len()
                    ));
                }
                let strangers = logged
                    .orders
                    .iter()
                    .filter(|id| placed_ids.get(*id) != Some(&index))
                    .count();
                if strangers > 0 {
                    outcome.problems.push(format!(
                        "engine {index}: {strangers} logged orders nobody placed"
                    ));
                }
                let replayed = logged.core.summary();
                if (
                    replayed.orders,
                    replayed.trades,
                    replayed.fingerprint,
                    replayed.digests.to_vec(),
                    logged.applied.digest(),
                ) != (
                    primary.orders,
                    primary.trades,
                    primary.fingerprint,
                    primary.digests.clone(),
                    primary.applied_digest,
                ) {
                    outcome.problems.push(format!(
                        "engine {index}: the primary's books differ from a replay of its log"
                    ));
                }
            }
            None => {
                // No log: the count is what can be checked. Every
                // acknowledged order is applied, at most every placed one.
                if primary.orders < acked.len() as u64 || primary.orders > placed_by_engine[index] {
                    outcome.problems.push(format!(
                        "engine {index}: {} orders applied, {} acknowledged, {} placed",
                        primary.orders,
                        acked.len(),
                        placed_by_engine[index]
                    ));
                }
            }
        }
    }
    if outcome.applied_twice > 0 {
        outcome
            .problems
            .push(format!("{} orders applied twice", outcome.applied_twice));
    }
    if outcome.acked_missing > 0 {
        outcome.problems.push(format!(
            "{} acknowledged orders missing from the primaries",
            outcome.acked_missing
        ));
    }
}

/// Writes `outcome` as the summary lines `trading cluster` prints.
pub fn print_outcome(outcome: &ClusterOutcome, out: &mut dyn Write) -> std::io::Result<()> {
    for c in &outcome.rounds {
        writeln!(
            out,
            "{} orders: {} acknowledged in {:.3} s = {:.0} orders/s; {} retries, {} given up",
            c.orders,
            c.acked,
            c.seconds,
            c.orders_per_second,
            c.retries,
            c.given_up.len()
        )?;
        let [p50, p90, p99, p999, max] = c.latency_us;
        writeln!(
            out,
            "latency us: p50 {p50:.1} p90 {p90:.1} p99 {p99:.1} p99.9 {p999:.1} max {max:.1}"
        )?;
    }
    if let Some([client, receiver, replicate, replicated, answers, total]) =
        outcome.messages_per_order()
    {
        writeln!(
            out,
            "messages per order: {total:.3} (client to receiver {client:.3}, receiver to primary \
             {receiver:.3}, primary to standby {replicate:.3}, standby to primary {replicated:.3}, \
             engine to client {answers:.3})"
        )?;
    }
    let dups: u64 = outcome.engines.iter().map(|e| e.report.duplicates).sum();
    let gaps: u64 = outcome.engines.iter().map(|e| e.report.gaps).sum();
    writeln!(
        out,
        "retried orders answered from memory: {dups}; replication gaps filled: {gaps}; applied \
         twice: {}; acknowledged but missing: {}",
        outcome.applied_twice, outcome.acked_missing
    )?;
    for f in &outcome.fail_stopped {
        writeln!(
            out,
            "{} fail-stopped on its own (exit code {}): {}; left out of the checks",
            f.node,
            f.status.map_or("none".into(), |c| c.to_string()),
            f.why.as_deref().unwrap_or("no reason printed")
        )?;
    }
    if !outcome.failover_ms.is_empty() {
        let mut f = outcome.failover_ms.clone();
        f.sort_by(f64::total_cmp);
        let fault = if outcome.killed_at_ns.is_some() {
            "SIGKILL"
        } else if outcome.paused_at_ns.is_some() {
            "SIGSTOP"
        } else {
            "cut"
        };
        writeln!(
            out,
            "failover ({fault} to the new primary's first order), {} engines: min {:.0} ms, median {:.0} ms, max {:.0} ms",
            f.len(),
            f[0],
            f[f.len() / 2],
            f[f.len() - 1]
        )?;
    }
    if let (Some(killed), Some(ready)) =
        (outcome.broker_killed_at_ns, outcome.broker_restarted_at_ns)
    {
        writeln!(
            out,
            "nats-server restarted: {:.0} ms from its SIGKILL to ready again",
            ready.saturating_sub(killed) as f64 / 1e6
        )?;
    }
    for p in &outcome.problems {
        writeln!(out, "PROBLEM: {p}")?;
    }
    Ok(())
}

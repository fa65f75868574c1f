//! The sync variant: no actors. Each client is a thread that routes its
//! order itself, locks the owning engine, matches, and calls the standby
//! synchronously while still holding the primary's lock (so the standby
//! sees the primary's order). Fast when uncontended; clients of one engine
//! queue on its lock.
//!
//! The clock starts once every client thread is ready and before any is
//! released: the threads wait at a first barrier (ready), the driver reads
//! the clock, then a second barrier (go) lets them all start.

use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::client::new_histogram;
use crate::config::RunConfig;
use crate::error::RunError;
use crate::ledger::Ledger;
use crate::topology::{engine_of, Half, ENGINES};
use crate::txlog::LogSpec;
use crate::verify::RawRun;

struct Pair {
    primary: Mutex<Ledger>,
    standby: Mutex<Ledger>,
}

/// One client thread's results: its latencies, when it sent its first
/// order and when its last one completed.
type Report = (Histogram<u64>, Instant, Instant);

/// Runs the scenario on client threads and locks.
pub fn run(config: &RunConfig) -> Result<RawRun, RunError> {
    let root = config.log_root.as_deref();
    let open = |engine, half| {
        Ledger::open(&LogSpec::for_engine(config.txlog, root, engine, half)).map(Mutex::new)
    };
    let pairs = (0..ENGINES)
        .map(|e| {
            Ok(Pair {
                primary: open(e, Half::Primary)?,
                standby: open(e, Half::Standby)?,
            })
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    let scenario = config.scenario;
    let clients = scenario.clients;
    let ready = Barrier::new(clients + 1);
    let go = Barrier::new(clients + 1);
    let (started, spent, reports) = thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|client| {
                let (pairs, ready, go) = (&pairs, &ready, &go);
                s.spawn(move || -> Result<Report, RunError> {
                    let mut latency_ns = new_histogram();
                    ready.wait();
                    go.wait();
                    let mut first_sent = None;
                    for n in 0..scenario.orders_per_client() {
                        let order = scenario.order(client, n);
                        let sent = Instant::now();
                        first_sent.get_or_insert(sent);
                        let pair = &pairs[engine_of(order.book)];
                        let mut primary =
                            pair.primary.lock().map_err(|_| RunError::ClientPanicked)?;
                        primary.process_blocking(&order)?;
                        let mut standby =
                            pair.standby.lock().map_err(|_| RunError::ClientPanicked)?;
                        standby.process_blocking(&order)?;
                        drop((standby, primary));
                        let ns = sent.elapsed().as_nanos() as u64;
                        latency_ns.saturating_record(ns.max(1));
                    }
                    let now = Instant::now();
                    Ok((latency_ns, first_sent.unwrap_or(now), now))
                })
            })
            .collect();
        ready.wait();
        let spending = crate::verify::spending();
        let started = Instant::now();
        go.wait();
        let reports: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(RunError::ClientPanicked)))
            .collect();
        (started, spending(), reports)
    });
    let mut latency_ns = new_histogram();
    let mut finished = started;
    let mut first_sent: Option<Instant> = None;
    let mut clients_finished = 0;
    for report in reports {
        let (h, first, end) = report?;
        latency_ns.add(&h)?;
        finished = finished.max(end);
        first_sent = Some(first_sent.map_or(first, |f| f.min(first)));
        clients_finished += 1;
    }
    let engines = pairs
        .into_iter()
        .map(|p| {
            let primary = p
                .primary
                .into_inner()
                .map_err(|_| RunError::ClientPanicked)?;
            let standby = p
                .standby
                .into_inner()
                .map_err(|_| RunError::ClientPanicked)?;
            Ok((primary.core().summary(), standby.core().summary()))
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    Ok(RawRun {
        started,
        first_sent: first_sent.unwrap_or(started),
        finished,
        spent,
        latency_ns,
        failed: 0,
        clients_finished,
        engines,
    })
}

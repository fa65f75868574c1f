//! The sync variant: no actors. Each client is a thread that routes its
//! order itself, locks the owning engine, matches, and calls the standby
//! synchronously while still holding the primary's lock (so the standby
//! sees the primary's order). Fast when uncontended; clients of one engine
//! queue on its lock.

use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::Instant;

use trading_engine::{codec, Command, NewOrder};

use crate::client::new_histogram;
use crate::engine_core::EngineCore;
use crate::run::{RawRun, RunConfig};
use crate::topology::{engine_of, scenario_order, ENGINES};
use crate::txlog::{EngineLog, LogError};

struct LockedEngine {
    core: EngineCore,
    log: EngineLog,
    record: Vec<u8>,
}

impl LockedEngine {
    fn open(config: &RunConfig, engine: usize, role: &str) -> Result<Self, String> {
        let mut core = EngineCore::new();
        let spec = crate::actors_run::log_spec(config, engine, role);
        let log = EngineLog::open(&spec, &mut core).map_err(|e| e.to_string())?;
        Ok(LockedEngine {
            core,
            log,
            record: Vec::with_capacity(64),
        })
    }

    fn process(&mut self, order: &NewOrder) -> Result<(), LogError> {
        self.core.process(order);
        self.record.clear();
        codec::encode(&Command::New(*order), self.core.market(), &mut self.record);
        self.log.append_blocking(&self.record)
    }
}

struct Pair {
    primary: Mutex<LockedEngine>,
    standby: Mutex<LockedEngine>,
}

/// Runs the scenario on client threads and locks.
pub fn run(config: &RunConfig) -> Result<RawRun, String> {
    let pairs = (0..ENGINES)
        .map(|e| {
            Ok(Pair {
                primary: Mutex::new(LockedEngine::open(config, e, "primary")?),
                standby: Mutex::new(LockedEngine::open(config, e, "standby")?),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let clients = config.scenario.clients;
    let per_client = config.scenario.orders_per_client();
    let barrier = Barrier::new(clients + 1);
    let (started, reports) = thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|client| {
                let (pairs, barrier) = (&pairs, &barrier);
                s.spawn(move || -> Result<_, String> {
                    let mut latency_ns = new_histogram();
                    barrier.wait();
                    for n in 0..per_client {
                        let order = scenario_order(client, n);
                        let sent = Instant::now();
                        let pair = &pairs[engine_of(order.book)];
                        let mut primary =
                            pair.primary.lock().map_err(|_| "primary lock poisoned")?;
                        primary.process(&order).map_err(|e| e.to_string())?;
                        let mut standby =
                            pair.standby.lock().map_err(|_| "standby lock poisoned")?;
                        standby.process(&order).map_err(|e| e.to_string())?;
                        drop((standby, primary));
                        let ns = sent.elapsed().as_nanos() as u64;
                        latency_ns.saturating_record(ns.max(1));
                    }
                    Ok((latency_ns, Instant::now()))
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let reports: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".into()))
            })
            .collect();
        (started, reports)
    });
    let mut latency_ns = new_histogram();
    let mut finished = started;
    let mut clients_finished = 0;
    for report in reports {
        let (h, end) = report?;
        latency_ns
            .add(&h)
            .map_err(|e| format!("merging latencies: {e}"))?;
        finished = finished.max(end);
        clients_finished += 1;
    }
    let engines = pairs
        .into_iter()
        .map(|p| {
            let primary = p
                .primary
                .into_inner()
                .map_err(|_| "primary lock poisoned")?;
            let standby = p
                .standby
                .into_inner()
                .map_err(|_| "standby lock poisoned")?;
            Ok((primary.core.summary(), standby.core.summary()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(RawRun {
        started,
        finished,
        latency_ns,
        clients_finished,
        engines,
    })
}

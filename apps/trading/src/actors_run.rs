//! The request-reply and one-way variants: clients, receivers and engine
//! pairs as troupe actors on one dispatcher pool.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::{ActorRef, ActorSystem, Props, SupervisorStrategy};

use crate::client::{new_histogram, Answer, Client, Receiver};
use crate::engine::{Engine, Role};
use crate::engine_core::EngineSummary;
use crate::messages::{ClientMsg, EngineMsg};
use crate::run::{RawRun, RunConfig, Variant};
use crate::topology::{ENGINES, RECEIVERS};
use crate::txlog::{LogSpec, TxLog};

/// The engine pairs of a running system.
pub struct Pairs {
    /// Primary engine by engine index.
    pub primaries: Vec<ActorRef<EngineMsg>>,
    /// Standby engine by engine index.
    pub standbys: Vec<ActorRef<EngineMsg>>,
}

/// The log of engine `engine` in `role` ("primary" or "standby").
pub fn log_spec(config: &RunConfig, engine: usize, role: &str) -> LogSpec {
    match (&config.log_root, config.txlog) {
        (Some(root), mode) if mode != TxLog::Off => LogSpec {
            mode,
            dir: root.join(format!("engine-{engine}-{role}")),
        },
        _ => LogSpec::off(),
    }
}

/// Spawns the ten engine pairs; primaries restart on failure and rebuild
/// their books from their logs.
pub fn spawn_pairs(system: &ActorSystem, config: &RunConfig) -> Result<Pairs, String> {
    let mut primaries = Vec::with_capacity(ENGINES);
    let mut standbys = Vec::with_capacity(ENGINES);
    for engine in 0..ENGINES {
        let spec = log_spec(config, engine, "standby");
        let standby = system
            .spawn(
                Props::new(move || Engine::new(Role::Standby, spec.clone()))
                    .name(format!("engine-{engine}-standby"))
                    .supervisor(SupervisorStrategy::restart()),
            )
            .map_err(|e| e.to_string())?;
        let spec = log_spec(config, engine, "primary");
        let role = Role::Primary {
            standby: standby.clone(),
        };
        let primary = system
            .spawn(
                Props::new(move || Engine::new(role.clone(), spec.clone()))
                    .name(format!("engine-{engine}-primary"))
                    .supervisor(SupervisorStrategy::restart()),
            )
            .map_err(|e| e.to_string())?;
        primaries.push(primary);
        standbys.push(standby);
    }
    Ok(Pairs {
        primaries,
        standbys,
    })
}

/// Asks every engine for its summary.
pub fn summaries(pairs: &Pairs) -> Result<Vec<(EngineSummary, EngineSummary)>, String> {
    let ask = |engine: &ActorRef<EngineMsg>| {
        engine
            .ask(EngineMsg::Summary, Duration::from_secs(30))
            .wait()
            .map_err(|e| format!("engine summary: {e}"))
    };
    pairs
        .primaries
        .iter()
        .zip(&pairs.standbys)
        .map(|(p, s)| Ok((ask(p)?, ask(s)?)))
        .collect()
}

/// Runs the scenario on actors.
pub fn run(config: &RunConfig) -> Result<RawRun, String> {
    let system = ActorSystem::builder()
        .name("trading")
        .threads(config.threads)
        .build()
        .map_err(|e| e.to_string())?;
    let result = drive(&system, config);
    system.shutdown();
    system
        .await_termination()
        .map_err(|e| format!("actor system did not terminate: {e}"))?;
    result
}

fn drive(system: &ActorSystem, config: &RunConfig) -> Result<RawRun, String> {
    let pairs = spawn_pairs(system, config)?;
    let primaries: Arc<[ActorRef<EngineMsg>]> = pairs.primaries.clone().into();
    let receivers = (0..RECEIVERS)
        .map(|i| {
            let primaries = primaries.clone();
            system
                .spawn(
                    Props::new(move || Receiver {
                        primaries: primaries.clone(),
                    })
                    .name(format!("receiver-{i}")),
                )
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let answer = match config.variant {
        Variant::OneWay => Answer::Token,
        _ => Answer::Reply,
    };
    let (report_tx, report_rx) = mpsc::channel();
    let per_client = config.scenario.orders_per_client();
    let clients: Vec<ActorRef<ClientMsg>> = (0..config.scenario.clients)
        .map(|i| {
            let receiver = receivers[i % RECEIVERS].clone();
            let tx = report_tx.clone();
            system
                .spawn(
                    Props::new(move || {
                        Client::new(i, receiver.clone(), answer, per_client, tx.clone())
                    })
                    .name(format!("client-{i}")),
                )
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    drop(report_tx);

    let started = Instant::now();
    for client in &clients {
        client.tell(ClientMsg::Start);
    }
    let deadline = started + config.timeout;
    let mut latency_ns = new_histogram();
    let mut finished = started;
    let mut clients_finished = 0;
    while clients_finished < clients.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match report_rx.recv_timeout(left) {
            Ok(report) => {
                latency_ns
                    .add(&report.latency_ns)
                    .map_err(|e| format!("merging latencies: {e}"))?;
                finished = finished.max(report.finished);
                clients_finished += 1;
            }
            Err(_) => break,
        }
    }
    if clients_finished < clients.len() {
        return Err(format!(
            "only {clients_finished} of {} clients finished within {:?}",
            clients.len(),
            config.timeout
        ));
    }
    Ok(RawRun {
        started,
        finished,
        latency_ns,
        clients_finished,
        engines: summaries(&pairs)?,
    })
}

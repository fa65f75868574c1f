//! The request-reply and one-way variants: clients, receivers and engine
//! pairs as troupe actors on one dispatcher pool.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::{ActorRef, ActorSystem, Props, SupervisorStrategy};

use crate::client::{new_histogram, Answer, Client, Receiver};
use crate::config::{RunConfig, Variant};
use crate::engine::{Engine, Redo, Role};
use crate::engine_core::EngineSummary;
use crate::error::RunError;
use crate::messages::{ClientMsg, EngineMsg};
use crate::topology::{Half, ENGINES, RECEIVERS};
use crate::txlog::LogSpec;
use crate::verify::RawRun;

/// The engine pairs of a running system.
pub struct Pairs {
    /// Primary engine by engine index.
    pub primaries: Vec<ActorRef<EngineMsg>>,
    /// Standby engine by engine index.
    pub standbys: Vec<ActorRef<EngineMsg>>,
}

fn system_error(e: impl std::fmt::Display) -> RunError {
    RunError::System(e.to_string())
}

/// Spawns the ten engine pairs; engines restart on failure, rebuild their
/// books from their logs and redo the order they failed in.
pub fn spawn_pairs(system: &ActorSystem, config: &RunConfig) -> Result<Pairs, RunError> {
    let mut primaries = Vec::with_capacity(ENGINES);
    let mut standbys = Vec::with_capacity(ENGINES);
    let root = config.log_root.as_deref();
    for engine in 0..ENGINES {
        let spec = LogSpec::for_engine(config.txlog, root, engine, Half::Standby);
        let redo = Redo::default();
        let standby = system
            .spawn(
                Props::new(move || Engine::new(Role::Standby, spec.clone(), redo.clone()))
                    .name(format!("engine-{engine}-standby"))
                    .supervisor(SupervisorStrategy::restart()),
            )
            .map_err(system_error)?;
        let spec = LogSpec::for_engine(config.txlog, root, engine, Half::Primary);
        let role = Role::Primary {
            standby: standby.clone(),
        };
        let redo = Redo::default();
        let primary = system
            .spawn(
                Props::new(move || Engine::new(role.clone(), spec.clone(), redo.clone()))
                    .name(format!("engine-{engine}-primary"))
                    .supervisor(SupervisorStrategy::restart()),
            )
            .map_err(system_error)?;
        primaries.push(primary);
        standbys.push(standby);
    }
    Ok(Pairs {
        primaries,
        standbys,
    })
}

/// Asks every engine for its summary.
pub fn summaries(pairs: &Pairs) -> Result<Vec<(EngineSummary, EngineSummary)>, RunError> {
    let ask = |engine: &ActorRef<EngineMsg>| {
        engine
            .ask(EngineMsg::Summary, Duration::from_secs(30))
            .wait()
            .map_err(RunError::Summary)
    };
    pairs
        .primaries
        .iter()
        .zip(&pairs.standbys)
        .map(|(p, s)| Ok((ask(p)?, ask(s)?)))
        .collect()
}

/// Runs the scenario on actors.
pub fn run(config: &RunConfig) -> Result<RawRun, RunError> {
    let system = ActorSystem::builder()
        .name("trading")
        .dispatcher(
            "default",
            troupe::DispatcherConfig::pool(config.threads).stealing(config.stealing),
        )
        .build()
        .map_err(system_error)?;
    let result = drive(&system, config);
    system.shutdown();
    system.await_termination().map_err(system_error)?;
    result
}

fn drive(system: &ActorSystem, config: &RunConfig) -> Result<RawRun, RunError> {
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
                .map_err(system_error)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let answer = match config.variant {
        Variant::OneWay => Answer::Token,
        _ => Answer::Reply,
    };
    let (report_tx, report_rx) = mpsc::channel();
    let scenario = config.scenario;
    let window = config.window;
    let clients: Vec<ActorRef<ClientMsg>> = (0..config.scenario.clients)
        .map(|i| {
            let receiver = receivers[i % RECEIVERS].clone();
            let tx = report_tx.clone();
            system
                .spawn(
                    Props::new(move || {
                        Client::new(i, receiver.clone(), answer, scenario, window, tx.clone())
                    })
                    .name(format!("client-{i}")),
                )
                .map_err(system_error)
        })
        .collect::<Result<_, _>>()?;
    drop(report_tx);

    let spending = crate::verify::spending();
    let started = Instant::now();
    for client in &clients {
        client.tell(ClientMsg::Start);
    }
    let deadline = started + config.timeout;
    let mut latency_ns = new_histogram();
    let mut finished = started;
    let mut first_sent: Option<Instant> = None;
    let mut failed = 0;
    let mut clients_finished = 0;
    while clients_finished < clients.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match report_rx.recv_timeout(left) {
            Ok(report) => {
                latency_ns.add(&report.latency_ns)?;
                finished = finished.max(report.finished);
                first_sent =
                    Some(first_sent.map_or(report.first_sent, |f| f.min(report.first_sent)));
                failed += report.failed;
                clients_finished += 1;
            }
            Err(_) => break,
        }
    }
    let spent = spending();
    if clients_finished < clients.len() {
        return Err(RunError::Timeout {
            finished: clients_finished,
            clients: clients.len(),
            timeout: config.timeout,
        });
    }
    Ok(RawRun {
        started,
        first_sent: first_sent.unwrap_or(started),
        finished,
        spent,
        latency_ns,
        failed,
        clients_finished,
        engines: summaries(&pairs)?,
    })
}

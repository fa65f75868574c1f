//! One process of the distributed trading system, in one of three roles:
//! `engines` (an engine per engine index, primary or standby as the
//! leases say), `receivers` (the ten order receivers) or `clients` (the
//! scenario's clients, which print `acked <percent>` as each whole percent
//! of the orders is acknowledged, then their results as one JSON line,
//! and exit). A node prints `ready` on stdout once it serves, and leaves when
//! its standard input closes or it gets Ctrl-C or SIGTERM (clients stop
//! placing orders and exit with an error).

use std::error::Error;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props, Signal, SupervisorStrategy};
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

use super::client::{ClusterClient, ClusterClientReport, ClusterReceiver, Progress, RetryPolicy};
use super::engine::{open_node_log, ClusterEngine, LogPlan};
use super::interrupt;
use super::lease::{engine_at, engine_name, open_bucket, Keeper};
use super::wire::{AckMode, ClientMsg, EngineCmd, ReceiverMsg};
use crate::client::new_histogram;
use crate::topology::{Pattern, Scenario, ENGINES, RECEIVERS};
use crate::txlog::TxLog;

/// Messages an actor handles per turn on a shared runtime before the
/// runtime's other tasks (the NATS connection, the heartbeat) get one:
/// troupe's default for its own dispatchers. Measured with 5, 64 and 256
/// on the 10-client, 64-in-flight run: no difference beyond the noise.
const ACTOR_THROUGHPUT: usize = 5;

/// Where a node's actors run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum NodeDispatcher {
    /// As tasks on the node's tokio runtime, beside its NATS connection:
    /// a message from the wire reaches its actor, and an actor's message
    /// reaches the wire, without crossing threads. `--threads` sets the
    /// runtime's workers.
    #[default]
    Shared,
    /// On a dispatcher of `--threads` threads of their own; the node's
    /// NATS connection keeps one runtime thread.
    Pool,
}

impl NodeDispatcher {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            NodeDispatcher::Shared => "shared",
            NodeDispatcher::Pool => "pool",
        }
    }
}

/// What a node process does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NodeRole {
    /// Matching engines, one per engine index.
    Engines,
    /// The order receivers.
    Receivers,
    /// The scenario's clients.
    Clients,
}

/// A node's settings.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// NATS server URL.
    pub nats: String,
    /// This node's name (unique per process incarnation).
    pub name: String,
    /// The cluster's name.
    pub cluster: String,
    /// What it does.
    pub role: NodeRole,
    /// Where its actors run.
    pub dispatcher: NodeDispatcher,
    /// Threads for them (the runtime's workers when `Shared`).
    pub threads: usize,
    /// The engines' log mode.
    pub txlog: TxLog,
    /// Where engines keep their logs (`<dir>/<node>`: one journal per
    /// node, shared by its engines).
    pub log_dir: Option<PathBuf>,
    /// A snapshot every this many logged events (0: never).
    pub snapshot_every: u64,
    /// Clients (clients role).
    pub clients: usize,
    /// The first client's id (clients role).
    pub client_base: usize,
    /// Orders over all clients (clients role).
    pub orders: usize,
    /// Orders each client keeps in flight (clients role).
    pub window: usize,
    /// How the clients' orders are acknowledged (clients role).
    pub mode: AckMode,
    /// The scenario's pattern (clients role).
    pub pattern: Pattern,
    /// When clients resend and give up.
    pub retry: RetryPolicy,
    /// Copies of the lease bucket if this node creates it.
    pub lease_replicas: usize,
    /// Heartbeat interval; a node silent for `heartbeat_timeout` is down.
    pub heartbeat: Duration,
    /// See `heartbeat`.
    pub heartbeat_timeout: Duration,
}

/// The published name of receiver `index`.
pub fn receiver_name(index: usize) -> String {
    format!("receiver-{index}")
}

/// What the clients node prints (after `result `) when it is done.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct ClientsResult {
    /// Orders the scenario has.
    pub orders: u64,
    /// Orders acknowledged.
    pub acked: u64,
    /// Ids of orders given up.
    pub given_up: Vec<u64>,
    /// Resends.
    pub retries: u64,
    /// Acknowledgements for orders no longer current.
    pub late_acks: u64,
    /// Batches of orders the clients sent (each one message).
    pub batches_sent: u64,
    /// First send to last acknowledgement, seconds.
    pub seconds: f64,
    /// Acknowledged orders per second.
    pub orders_per_second: f64,
    /// Latency percentiles in microseconds: p50, p90, p99, p99.9, max.
    pub latency_us: [f64; 5],
}

impl NodeOptions {
    fn remote_config(&self) -> RemoteConfig {
        let mut config = RemoteConfig::new(&self.nats, &self.name).cluster(&self.cluster);
        config.heartbeat_interval = self.heartbeat;
        config.heartbeat_timeout = self.heartbeat_timeout;
        config
    }
}

/// Runs a node until it is done (clients) or its stdin closes.
pub async fn run_node(options: NodeOptions) -> Result<(), Box<dyn Error>> {
    let builder = ActorSystem::builder().name(options.name.clone());
    let system = match options.dispatcher {
        // The runtime this runs on is the node's (see `NodeArgs::run`).
        NodeDispatcher::Shared => builder.tokio_dispatcher(
            "default",
            tokio::runtime::Handle::current(),
            ACTOR_THROUGHPUT,
        ),
        NodeDispatcher::Pool => builder.threads(options.threads),
    }
    .build()?;
    let node = Arc::new(Node::start(&system, options.remote_config()).await?);
    let work = async {
        match options.role {
            NodeRole::Engines => engines(&system, &node, &options).await,
            NodeRole::Receivers => receivers(&system, &node).await,
            NodeRole::Clients => clients(&system, &node, &options).await,
        }
    };
    let outcome = tokio::select! {
        // Engines and receivers that serve wait for the signal themselves
        // and leave as when stdin closes (polled first, so that their
        // clean leave wins); the other arm ends a node still starting,
        // and clients, with an error.
        biased;
        outcome = work => outcome,
        _ = interrupt::signalled() => Err(interrupt::INTERRUPTED_ERROR.into()),
    };
    if interrupt::interrupted() {
        super::lease::LEAVING.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    outcome
}

fn ready() -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()
}

/// Blocks (off the runtime's workers) until stdin closes or the process
/// gets Ctrl-C or SIGTERM: either way the node leaves.
async fn until_stdin_closes() {
    let stdin = tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    });
    tokio::select! {
        _ = stdin => {}
        _ = interrupt::signalled() => {}
    }
}

/// Looks `name` up until it is found or 30 s pass.
async fn find<M: RemoteMessage>(node: &Node, name: &str) -> Result<ActorRef<M>, Box<dyn Error>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match node.lookup::<M>(name).await {
            Ok(found) => return Ok(found),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("{name} not found within 30 s: {e}").into())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Ends the process when an engine stops (fail-stop: its books live on in
/// the other process, and this one must not half-serve).
struct Sentinel(Vec<ActorRef<EngineCmd>>);

impl Actor for Sentinel {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        for engine in &self.0 {
            ctx.watch(engine);
        }
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        // A node leaving on purpose stops its engines itself.
        let leaving = super::lease::LEAVING.load(std::sync::atomic::Ordering::Relaxed);
        if let (Signal::Terminated(id, _), false) = (signal, leaving) {
            super::lease::fail_stop(format!("engine {id:?} stopped"));
        }
    }
}

async fn engines(
    system: &ActorSystem,
    node: &Arc<Node>,
    options: &NodeOptions,
) -> Result<(), Box<dyn Error>> {
    let kv = open_bucket(node, &options.cluster, options.lease_replicas).await?;
    let journal = match (&options.log_dir, options.txlog) {
        (_, TxLog::Off) => None,
        (Some(dir), mode) => {
            let dir = dir.join(&options.name);
            open_node_log(&dir, mode)
                .map_err(|e| format!("cannot open the log in {}: {e}", dir.display()))?
        }
        (None, _) => return Err("a log mode other than off needs --log-dir".into()),
    };
    let mut engines = Vec::new();
    let mut keepers = Vec::new();
    for index in 0..ENGINES {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let plan = LogPlan {
            journal: journal.clone(),
            snapshot_every: options.snapshot_every,
        };
        let name = options.name.clone();
        let engine = system.spawn(
            Props::new(move || ClusterEngine::new(index, name.clone(), plan.clone(), tx.clone()))
                .name(engine_name(index))
                .supervisor(SupervisorStrategy::stop()),
        )?;
        node.publish(&engine_at(index, &options.name), &engine)
            .await?;
        engines.push(engine.clone());
        keepers.push(Keeper {
            node: node.clone(),
            kv: kv.clone(),
            index,
            engine,
            requests: rx,
        });
    }
    let watched = engines.clone();
    system.spawn(Props::new(move || Sentinel(watched.clone())).name("sentinel"))?;
    let mut settled = Vec::new();
    for keeper in keepers {
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(keeper.run(tx));
        settled.push(rx);
    }
    for s in settled {
        s.await
            .map_err(|_| "a lease keeper ended before it settled")?;
    }
    ready()?;
    until_stdin_closes().await;
    super::lease::LEAVING.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

async fn receivers(system: &ActorSystem, node: &Arc<Node>) -> Result<(), Box<dyn Error>> {
    let mut primaries = Vec::with_capacity(ENGINES);
    for index in 0..ENGINES {
        // Found once, so that orders are not sent before a primary serves;
        // then followed by name: a standby that takes over publishes the
        // same name, and a looked-up ref would stay with the dead primary.
        find::<EngineCmd>(node, &engine_name(index)).await?;
        primaries.push(node.select::<EngineCmd>(&engine_name(index))?);
    }
    let primaries: Arc<[ActorRef<EngineCmd>]> = primaries.into();
    for index in 0..RECEIVERS {
        let engines = primaries.clone();
        let receiver = system.spawn(
            Props::new(move || ClusterReceiver {
                engines: engines.clone(),
            })
            .name(receiver_name(index)),
        )?;
        node.publish(&receiver_name(index), &receiver).await?;
    }
    ready()?;
    until_stdin_closes().await;
    Ok(())
}

async fn clients(
    system: &ActorSystem,
    node: &Arc<Node>,
    options: &NodeOptions,
) -> Result<(), Box<dyn Error>> {
    let scenario = Scenario::new(options.clients, options.orders)?.with_pattern(options.pattern);
    let mut receivers = Vec::with_capacity(RECEIVERS);
    for index in 0..RECEIVERS {
        receivers.push(find::<ReceiverMsg>(node, &receiver_name(index)).await?);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    // A launcher reads these lines to time a fault by how far the load
    // got (see `launch`); a failed write only loses that timing.
    let progress = Arc::new(Progress::new(scenario.orders(), |percent| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "acked {percent}");
        let _ = out.flush();
    }));
    let mut clients = Vec::new();
    for index in 0..scenario.clients {
        let receiver = receivers[index % RECEIVERS].clone();
        let (tx, policy, window, mode) = (tx.clone(), options.retry, options.window, options.mode);
        let progress = progress.clone();
        let id = options.client_base + index;
        clients.push(
            system.spawn(
                Props::new(move || {
                    ClusterClient::new(
                        id,
                        receiver.clone(),
                        scenario,
                        policy,
                        window,
                        mode,
                        tx.clone(),
                        progress.clone(),
                    )
                })
                .name(format!("client-{index}")),
            )?,
        );
    }
    drop(tx);
    ready()?;
    for client in &clients {
        client.tell(ClientMsg::Start);
    }
    let reports = tokio::task::spawn_blocking(move || rx.iter().collect());
    let reports: Vec<ClusterClientReport> = tokio::select! {
        reports = reports => reports?,
        _ = until_stdin_closes() => {
            return Err("told to leave before the clients finished".into())
        }
    };
    if reports.len() != scenario.clients {
        return Err(format!("{} of {} clients reported", reports.len(), scenario.clients).into());
    }
    let mut latency = new_histogram();
    let mut result = ClientsResult {
        orders: scenario.orders(),
        acked: 0,
        given_up: Vec::new(),
        retries: 0,
        late_acks: 0,
        batches_sent: 0,
        seconds: 0.0,
        orders_per_second: 0.0,
        latency_us: [0.0; 5],
    };
    let first = reports.iter().map(|r| r.first_sent).min();
    let last = reports.iter().map(|r| r.finished).max();
    for r in reports {
        latency.add(&r.latency_ns)?;
        result.acked += r.acked;
        result.given_up.extend(r.given_up);
        result.retries += r.retries;
        result.late_acks += r.late_acks;
        result.batches_sent += r.batches_sent;
    }
    if let (Some(first), Some(last)) = (first, last) {
        result.seconds = last.duration_since(first).as_secs_f64();
        result.orders_per_second = result.acked as f64 / result.seconds.max(1e-9);
    }
    let us = |q: f64| latency.value_at_quantile(q) as f64 / 1e3;
    result.latency_us = [
        us(0.5),
        us(0.9),
        us(0.99),
        us(0.999),
        latency.max() as f64 / 1e3,
    ];
    let mut out = std::io::stdout().lock();
    writeln!(out, "result {}", serde_json::to_string(&result)?)?;
    out.flush()?;
    Ok(())
}

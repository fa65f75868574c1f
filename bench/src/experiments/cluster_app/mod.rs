//! The experiment that is a cluster application (docs/experiments.md,
//! cluster-app): `entities` sharded persistent ledgers over `shards`
//! shards on three node processes (this binary's hidden
//! `cluster-app-node`, see `node.rs`) and one nats-server, and a client in
//! the bench's process asking commands through a proxy region with
//! `window` asks in flight. Each command is an id the ledger persists
//! (one event) before it answers.
//!
//! - `jetstream`: the ledgers on the JetStream journal, shared by the
//!   nodes, each activation fenced with its shard's token
//!   (`ShardRegion::start_persistent`).
//! - `local`: each node's ledgers on a local journal of its own (group
//!   commit, fsync); the entities pinned (no rebalancing, no passivation,
//!   no node leaves), since a local journal cannot follow a moved entity.
//!
//! Per row the server and the three nodes start once, outside the clock,
//! and every ledger is activated (asked once) before the warm-up. Every
//! run sends `commands` new command ids, spread round-robin over the
//! ledgers, and is timed from the first send to the last answer; `p50_us`
//! and `p99_us` are the asks' latencies. After every run each ledger is
//! read back and checked against the ids the client saw acknowledged for
//! it: every acknowledged id there, none twice, nothing else (an ask that
//! fails fails the row). `journal_writes_per_cmd` is the journal writes
//! (appends and fences, counted by the nodes) per command and
//! `msgs_per_cmd` the NATS messages the four processes' clients published
//! per command (requests, answers, JetStream publishes, heartbeats; the
//! server's own acknowledgements are not counted).

mod experiment;
mod kill;
pub mod node;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use troupe::{ActorRef, ActorSystem};
use troupe_cluster::sharding::ShardRegion;
use troupe_remote::launcher::NatsServer;
use troupe_remote::{Node, RemoteConfig};

pub use experiment::ClusterApp;

use self::node::{sharding_settings, LedgerCmd};
use crate::child::Child;
use crate::report::Row;
use crate::runner::{expect_eq, summarize, RunOptions, Sample, Scale, Workload, WorkloadError};
use crate::shared::run_experiment;

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "cluster-app";

/// The bench's hidden subcommand that runs one node.
pub const NODE_SUBCOMMAND: &str = "cluster-app-node";

/// Node processes of the cluster.
const NODES: usize = 3;

const WAIT: Duration = Duration::from_secs(60);

/// Sizes of the experiment.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Ledgers (entities).
    pub entities: u64,
    /// Shards of the entity type.
    pub shards: u32,
    /// Asks in flight.
    pub window: usize,
    /// Commands per run.
    pub commands: u64,
    /// SIGKILLs of a node for the kill row, each in a fresh cluster (the
    /// first a warm-up); under 2, no kill row.
    pub kills: u32,
    /// Part of `all`: a missing nats-server skips the experiment.
    pub in_all: bool,
}

impl Settings {
    /// The sizes for a scale.
    pub fn for_scale(scale: Scale, in_all: bool) -> Settings {
        let (entities, shards, window, commands, kills) = match scale {
            Scale::Quick => (100, 10, 64, 2_000, 3),
            Scale::Default => (1_000, 100, 256, 40_000, 3),
            Scale::Full => (1_000, 100, 256, 200_000, 21),
        };
        Settings {
            entities,
            shards,
            window,
            commands,
            kills,
            in_all,
        }
    }
}

fn err(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::new(e.to_string())
}

/// A node's counts since it started: journal appends, fences, messages
/// published, ids asked for again (see `node.rs`).
fn stats(node: &mut Child) -> Result<[u64; 4], WorkloadError> {
    node.say("stats")?;
    let line = node.line(WAIT)?;
    let numbers: Vec<u64> = line
        .strip_prefix("stats ")
        .map(|rest| rest.split(' ').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    match numbers[..] {
        [a, b, c, d] => Ok([a, b, c, d]),
        _ => Err(err(format!("a node answered `{line}` to stats"))),
    }
}

/// The client: its own node and a proxy region of the ledgers.
struct Client {
    runtime: tokio::runtime::Runtime,
    system: ActorSystem,
    node: Arc<Node>,
    /// Taken when the client leaves.
    region: Option<ShardRegion<LedgerCmd>>,
    ledgers: Arc<Vec<ActorRef<LedgerCmd>>>,
}

impl Client {
    fn start(url: &str, settings: &Settings) -> Result<Client, WorkloadError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(err)?;
        let system = ActorSystem::builder().threads(1).build().map_err(err)?;
        let (node, region) = runtime.block_on(async {
            let node = Arc::new(
                Node::start(&system, RemoteConfig::new(url, "cluster-app-client"))
                    .await
                    .map_err(err)?,
            );
            let region =
                ShardRegion::start_proxy(node.clone(), &system, sharding_settings(settings.shards))
                    .await
                    .map_err(err)?;
            // The three nodes and the client hear each other before any
            // shard is allocated, so shards spread over the three.
            let deadline = Instant::now() + WAIT;
            while node.members().len() < NODES + 1 {
                if Instant::now() > deadline {
                    return Err(err("the client did not hear the three nodes within 60 s"));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<_, WorkloadError>((node, region))
        })?;
        let ledgers = (0..settings.entities)
            .map(|i| region.entity_ref(format!("ledger-{i}")))
            .collect();
        Ok(Client {
            runtime,
            system,
            node,
            region: Some(region),
            ledgers: Arc::new(ledgers),
        })
    }

    /// Sends commands `first..first + n` (command `c` to ledger `c %
    /// entities`), `window` in flight; returns each ask's latency (ns).
    fn send(&self, first: u64, n: u64, window: usize) -> Result<Vec<u64>, WorkloadError> {
        let ledgers = self.ledgers.clone();
        self.runtime.block_on(async move {
            let mut lanes = tokio::task::JoinSet::new();
            for lane in 0..window as u64 {
                let ledgers = ledgers.clone();
                lanes.spawn(async move {
                    let mut latencies = Vec::new();
                    for c in (first + lane..first + n).step_by(window) {
                        let ledger = &ledgers[(c % ledgers.len() as u64) as usize];
                        let sent = Instant::now();
                        ledger
                            .ask(|r| LedgerCmd::Add(c, r), WAIT)
                            .await
                            .map_err(|e| err(format!("command {c} to {:?}: {e}", ledger.name())))?;
                        latencies.push(sent.elapsed().as_nanos() as u64);
                    }
                    Ok::<_, WorkloadError>(latencies)
                });
            }
            let mut all = Vec::with_capacity(n as usize);
            while let Some(done) = lanes.join_next().await {
                all.extend(done.map_err(|e| err(format!("a lane panicked: {e}")))??);
            }
            Ok(all)
        })
    }

    /// Every ledger's ids, in ledger order (all asked at once).
    fn read_all(&self) -> Result<Vec<Vec<u64>>, WorkloadError> {
        let ledgers = self.ledgers.clone();
        self.runtime.block_on(async move {
            let mut reads = tokio::task::JoinSet::new();
            for (i, ledger) in ledgers.iter().enumerate() {
                let ledger = ledger.clone();
                reads.spawn(async move {
                    let ids = ledger
                        .ask(LedgerCmd::Read, WAIT)
                        .await
                        .map_err(|e| err(format!("reading {:?}: {e}", ledger.name())))?;
                    Ok::<_, WorkloadError>((i, ids))
                });
            }
            let mut out = vec![Vec::new(); ledgers.len()];
            while let Some(done) = reads.join_next().await {
                let (i, ids) = done.map_err(|e| err(format!("a read panicked: {e}")))??;
                out[i] = ids;
            }
            Ok(out)
        })
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let (region, node) = (self.region.take(), self.node.clone());
        self.runtime.block_on(async move {
            if let Some(region) = region {
                region.leave().await;
            }
            node.shutdown().await;
        });
        self.system.shutdown();
        let _ = self.system.await_termination_timeout(WAIT);
    }
}

/// Checks every ledger against the commands acknowledged so far
/// (`0..acked`, command `c` to ledger `c % entities`): each holds exactly
/// its ids, once each (in the order they were persisted, which with
/// `window` asks in flight is not the order they were sent: the check
/// sorts).
fn verify(ledgers: &[Vec<u64>], acked: u64) -> Result<(), WorkloadError> {
    let n = ledgers.len() as u64;
    for (i, ids) in ledgers.iter().enumerate() {
        let mut ids = ids.clone();
        ids.sort_unstable();
        let expected: Vec<u64> = (i as u64..acked).step_by(n as usize).collect();
        if ids != expected {
            let mut seen = std::collections::HashSet::new();
            let doubled = ids.iter().filter(|id| !seen.insert(**id)).count();
            let lost = expected.iter().filter(|id| !seen.contains(id)).count();
            let unknown = seen
                .iter()
                .filter(|id| expected.binary_search(id).is_err())
                .count();
            return Err(err(format!(
                "validation failed: ledger-{i} holds {} ids, {} acknowledged: {lost} lost, \
                 {doubled} doubled, {unknown} never acknowledged",
                ids.len(),
                expected.len()
            )));
        }
    }
    Ok(())
}

/// What each run measured: latency percentiles (µs: p50, p99), journal
/// writes and messages per command.
type Figures = Rc<RefCell<Vec<[f64; 4]>>>;

/// A running cluster: the client, the node processes and their
/// nats-server (dropped in that order: the client leaves, the nodes leave
/// when their stdin closes, the server stops last).
struct Cluster {
    client: Client,
    nodes: Vec<Child>,
    _server: NatsServer,
}

impl Cluster {
    /// A fresh server (clusters share no lease bucket or stream), three
    /// nodes on `journal` and the client, every ledger activated (asked
    /// once) and checked empty.
    fn start(journal: &str, settings: &Settings) -> Result<Cluster, WorkloadError> {
        let server = crate::nats::binary()
            .and_then(|b| NatsServer::launch(&b, &[]))
            .map_err(|why| WorkloadError::new(format!("no nats-server: {why}")))?;
        let url = server.url();
        let mut nodes = Vec::new();
        for i in 0..NODES {
            let shards = settings.shards.to_string();
            let name = format!("cluster-app-{i}");
            let args = [
                NODE_SUBCOMMAND,
                "--url",
                &url,
                "--name",
                &name,
                "--journal",
                journal,
                "--shards",
                &shards,
            ];
            let mut child = Child::start(&args, &format!("cluster-app node {i}"))?;
            child.expect("ready", WAIT)?;
            nodes.push(child);
        }
        let client = Client::start(&url, settings)?;
        // Every ledger starts (recovers, takes its token) before anything
        // is measured, so runs measure commands, not activations.
        verify(&client.read_all()?, 0)?;
        Ok(Cluster {
            client,
            nodes,
            _server: server,
        })
    }
}

fn workload(journal: &'static str, settings: Settings, figures: Figures) -> Workload {
    Workload::with_setup(journal, move || {
        let mut cluster = Cluster::start(journal, &settings)?;
        let mut sent = 0u64;
        // The cluster is dropped with the row (client, nodes, server).
        Ok(move || {
            let Cluster { client, nodes, .. } = &mut cluster;
            let before = nodes.iter_mut().map(stats).collect::<Result<Vec<_>, _>>()?;
            let published = client.node.nats_client().statistics();
            let client_before = published
                .out_messages
                .load(std::sync::atomic::Ordering::Relaxed);
            let started = Instant::now();
            let mut latencies = client.send(sent, settings.commands, settings.window)?;
            let elapsed = started.elapsed();
            sent += settings.commands;
            let after = nodes.iter_mut().map(stats).collect::<Result<Vec<_>, _>>()?;
            let client_after = published
                .out_messages
                .load(std::sync::atomic::Ordering::Relaxed);
            let delta =
                |k: usize| -> u64 { after.iter().zip(&before).map(|(a, b)| a[k] - b[k]).sum() };
            expect_eq(
                "commands answered",
                settings.commands,
                latencies.len() as u64,
            )?;
            // Every id was sent once: a ledger asked for one again got a
            // command delivered twice.
            expect_eq("commands delivered twice", 0, delta(3))?;
            verify(&client.read_all()?, sent)?;
            let per_cmd = |x: u64| x as f64 / settings.commands as f64;
            latencies.sort_unstable();
            let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize] as f64 / 1e3;
            figures.borrow_mut().push([
                pct(0.50),
                pct(0.99),
                per_cmd(delta(0) + delta(1)),
                per_cmd(delta(2) + client_after - client_before),
            ]);
            Ok(Sample {
                msgs: settings.commands,
                elapsed,
            })
        })
    })
    .param("runtime", "troupe")
    .param("journal", journal)
    .param("entities", settings.entities)
    .param("shards", settings.shards as u64)
    .param("window", settings.window as u64)
    .param("commands", settings.commands)
    .param("nodes", NODES as u64)
    .param("processes", NODES as u64 + 2)
}

/// Runs the JetStream and the local-journal rows on a nats-server of the
/// experiment's own.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    if !crate::nats::for_experiment(EXPERIMENT, settings.in_all)? {
        return Ok(Vec::new());
    }
    let mut figures = Vec::new();
    let mut workloads = Vec::new();
    for journal in ["jetstream", "local"] {
        let f = Figures::default();
        workloads.push(workload(journal, *settings, f.clone()));
        figures.push((journal, f));
    }
    let mut rows = run_experiment(EXPERIMENT, workloads, options)?;
    let kill_wanted = options
        .filter
        .as_deref()
        .is_none_or(|f| kill::VARIANT.contains(f));
    if kill_wanted {
        rows.extend(kill::row(settings)?);
    }
    for row in &mut rows {
        let Some((_, f)) = figures.iter().find(|(v, _)| *v == row.variant) else {
            continue;
        };
        let runs = f.borrow();
        // The measured runs are the last `repeats` (the warm-up came first).
        let measured = &runs[runs.len().saturating_sub(row.repeats)..];
        for (i, key) in ["p50_us", "p99_us", "journal_writes_per_cmd", "msgs_per_cmd"]
            .iter()
            .enumerate()
        {
            let values: Vec<f64> = measured.iter().map(|p| p[i]).collect();
            if let Some(s) = summarize(&values) {
                row.params.insert((*key).into(), json!(s.median));
            }
        }
    }
    Ok(rows)
}

//! A whole distributed trading system on this machine: a nats-server (or a
//! NATS cluster of several, one per simulated host), two engine nodes (each
//! engine's primary on one, its standby on the other), a receivers node,
//! and rounds of clients, each node its own process. With several servers,
//! `engines-a` is on the first server's host, `engines-b` on the second's,
//! and everything else on the third's; killing a host kills its node and
//! its server together.
//! [`Cluster`] is the system between rounds (what a benchmark drives);
//! [`run_cluster`] is `trading cluster`: one round, optionally a fault
//! mid-load, and the checks of [`super::verify`]. The fault is a SIGKILL
//! of the primaries' (or the standbys') process, with a fresh engine node
//! joining after it if asked, a pause (SIGSTOP, then SIGCONT) of the
//! primaries' process, or a partition: the engine nodes run in network
//! namespaces of their own ([`super::netns`]), and the primaries' node is
//! cut off the network, then joined again. It comes once a share of the orders is
//! acknowledged, as the clients' process reports it line by line, never
//! at a time on the clock alone: on a fast host the clients could finish
//! first.
//!
//! Or the fault is a restart of the NATS server itself (`broker_outage`:
//! SIGKILLed, then started again on the same port and store; see
//! `launch/broker.rs` for what the cluster's acknowledgement needs of the server,
//! and why its one server syncs every write).
//!
//! Before it checks, the launcher tells apart the engine nodes that ended
//! on their own (fail-stop: a paused or cut-off primary whose leases
//! moved exits when it resumes or is joined again) from those alive: the first are recorded and left out
//! of the checks, the second must answer.

mod broker;
mod round;

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv::Store;
use troupe::ActorSystem;
use troupe_remote::launcher::{find_binary, NatsServer};
use troupe_remote::{Node, RemoteConfig};

use super::client::RetryPolicy;
use super::interrupt;
use super::lease::{engine_at, engine_name, open_bucket};
use super::netns::Sandbox;
use super::node::ClientsResult;
use super::node::NodeDispatcher;
use super::procs::{NodeCommand, Proc};
use super::verify::{check, ClusterOutcome, EngineState, FailStopped, Placed};
use super::wire::{AckMode, EngineCmd};
use crate::topology::{Pattern, Scenario, ENGINES};
use crate::txlog::TxLog;
pub use broker::ServerConfig;
pub use round::run_cluster;

/// What `trading cluster` runs.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// How to start a node process.
    pub node_command: NodeCommand,
    /// Clients.
    pub clients: usize,
    /// Orders over all clients.
    pub orders: usize,
    /// Orders each client keeps in flight.
    pub window: usize,
    /// How orders are acknowledged.
    pub mode: AckMode,
    /// The scenario's pattern.
    pub pattern: Pattern,
    /// The engines' log mode.
    pub txlog: TxLog,
    /// Where logs go (a fresh temporary directory if none; removed after).
    pub log_dir: Option<PathBuf>,
    /// SIGKILL (or pause, with `pause_primary`) the process holding
    /// engine 0's lease once this percentage of the orders is
    /// acknowledged.
    pub kill_at_acked: Option<u64>,
    /// ... and not before this long after the clients start (none: as
    /// soon as the share is reached).
    pub kill_after: Option<Duration>,
    /// Instead of a SIGKILL, SIGSTOP the primaries' process at the share
    /// above and SIGCONT it this long after.
    pub pause_primary: Option<Duration>,
    /// Instead of a SIGKILL, cut the primaries' node off the network at
    /// the share above (its network namespace's link goes down) and join
    /// it again this long after. Needs root, iproute2 and one server.
    pub partition_primary: Option<Duration>,
    /// Kill the standbys' process instead of the primaries'.
    pub kill_standby: bool,
    /// Kill the victim's NATS server with it (its whole host; needs three
    /// servers or more, so that a majority of them survives).
    pub kill_host: bool,
    /// Instead of a node, SIGKILL the NATS server at the share above and
    /// start it again on the same port and store this long after (zero: at
    /// once). One server only.
    pub broker_outage: Option<Duration>,
    /// NATS servers joined as one cluster (1: a single server); the lease
    /// bucket gets a copy on each, up to 3.
    pub servers: usize,
    /// The nats-server binary (none: `NATS_SERVER`, else `nats-server` on
    /// `PATH`; see [`find_binary`]).
    pub nats_server: Option<PathBuf>,
    /// After a kill, start a fresh engine node that joins as standby.
    pub restart_killed: bool,
    /// Instead of one node, SIGKILL every engine node at the share above
    /// (a power cut, a redeploy), then start each again under its name,
    /// from its log: the whole-cluster restart. Needs a log mode.
    pub restart_all: bool,
    /// Where each node's actors run.
    pub dispatcher: NodeDispatcher,
    /// Threads per node for its actors.
    pub threads: usize,
    /// Each engine's snapshot interval, in logged events (0: never).
    pub snapshot_every: u64,
    /// When clients resend and give up.
    pub retry: RetryPolicy,
    /// Node heartbeat interval and the silence after which a node is down.
    pub heartbeat: (Duration, Duration),
    /// How long a round of clients may take.
    pub timeout: Duration,
    /// How long the verifier waits for the engine nodes to settle on one
    /// primary per engine, and for an engine node alive that does not
    /// answer (one isolated and back, on its way out); normally
    /// [`SETTLE_WITHIN`].
    pub settle_within: Duration,
}

impl ClusterOptions {
    /// Copies of the lease bucket: one per server, up to three.
    pub fn lease_replicas(&self) -> usize {
        self.servers.clamp(1, 3)
    }
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Removes the run's temporary log directory when dropped.
struct TempLogs(Option<PathBuf>);

impl Drop for TempLogs {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// How long a node may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long the verifier waits for the engine nodes to settle on one
/// primary per engine: longer than a lease keeper retries a bucket
/// operation ([`super::lease::RETRY_WITHIN`]) before its node gives up.
pub const SETTLE_WITHIN: Duration = Duration::from_secs(40);

/// A running cluster without clients.
pub struct Cluster {
    options: ClusterOptions,
    log_root: Option<PathBuf>,
    runtime: tokio::runtime::Runtime,
    system: ActorSystem,
    node: Node,
    kv: Store,
    engines: Vec<Proc>,
    receivers: Option<Proc>,
    placed: Vec<Placed>,
    rounds: Vec<ClientsResult>,
    killed_at_ns: Option<u64>,
    paused_at_ns: Option<u64>,
    partitioned_at_ns: Option<u64>,
    broker_killed_at_ns: Option<u64>,
    broker_restarted_at_ns: Option<u64>,
    /// Engine nodes that ended on their own (found by `verify`).
    fail_stopped: Vec<FailStopped>,
    // Dropped last: the logs and the servers outlive the processes, the
    // servers' configuration outlives them, and the network namespaces
    // (with a partition) outlive the servers.
    _temp: TempLogs,
    servers: Vec<NatsServer>,
    _server_config: Option<ServerConfig>,
    sandbox: Option<Sandbox>,
}

/// The network namespace of engine node `name` in a partition test.
fn namespace_of(name: &str) -> Option<usize> {
    match name {
        "engines-a" => Some(0),
        "engines-b" => Some(1),
        _ => None,
    }
}

/// The simulated host (server index) of node `name`: engines-a on the
/// first, engines-b on the second, everything else on the third.
fn host_of(name: &str, servers: usize) -> usize {
    let host = match name {
        "engines-a" => 0,
        "engines-b" => 1,
        _ => 2,
    };
    host % servers
}

impl Cluster {
    /// Starts the server, the engine nodes and the receivers; `progress`
    /// gets a line per step.
    pub fn start(
        options: &ClusterOptions,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Cluster, String> {
        if options.servers == 0 || (options.kill_host && options.servers < 3) {
            return Err(format!(
                "{} NATS server(s): a run needs one, and killing a host needs three \
                 (a majority of the servers must survive it)",
                options.servers
            ));
        }
        let binary = find_binary(options.nats_server.as_deref())?;
        // A partition test runs the engine nodes in namespaces of their
        // own, so the server listens on their bridge.
        let sandbox = match options.partition_primary {
            Some(_) => Some(Sandbox::create(2)?),
            None => None,
        };
        // One server syncs every JetStream write (the lease bucket's)
        // before acknowledging it; several keep a copy each (see `broker`).
        let server_config = match options.servers {
            1 => Some(ServerConfig::write()?),
            _ => None,
        };
        let config_path = server_config
            .as_ref()
            .map(|c| c.path().display().to_string());
        let config_args: Vec<&str> = match &config_path {
            Some(path) => vec!["-c", path],
            None => Vec::new(),
        };
        let servers = match (options.servers, &sandbox) {
            (1, Some(sandbox)) => vec![NatsServer::launch_on(
                &binary,
                sandbox.host().into(),
                &config_args,
            )?],
            (1, None) => vec![NatsServer::launch(&binary, &config_args)?],
            (_, Some(_)) => return Err("a partition test runs on one NATS server".into()),
            (n, None) => NatsServer::launch_cluster(&binary, n)?,
        };
        let url = servers[host_of("launcher", servers.len())].url();
        let urls: Vec<String> = servers.iter().map(NatsServer::url).collect();
        progress(&format!("nats-server on {}", urls.join(", ")));
        let (log_root, temp) = match (&options.log_dir, options.txlog) {
            (_, TxLog::Off) => (None, TempLogs(None)),
            (Some(dir), _) => (Some(dir.clone()), TempLogs(None)),
            (None, _) => {
                let dir = std::env::temp_dir().join(format!(
                    "trading-cluster-{}-{}",
                    std::process::id(),
                    unix_ns()
                ));
                (Some(dir.clone()), TempLogs(Some(dir)))
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        // From here Ctrl-C no longer kills the launcher outright: its waits
        // end with an error, and dropping the cluster stops every process.
        runtime.spawn(interrupt::signalled());
        let system = ActorSystem::builder()
            .name("launcher")
            .threads(1)
            .build()
            .map_err(|e| e.to_string())?;
        let mut config = RemoteConfig::new(&url, "launcher").cluster("trading");
        config.heartbeat_interval = options.heartbeat.0;
        config.heartbeat_timeout = options.heartbeat.1;
        let node = runtime
            .block_on(Node::start(&system, config))
            .map_err(|e| format!("launcher node: {e}"))?;
        let kv = runtime.block_on(open_bucket(&node, "trading", options.lease_replicas()))?;
        let mut cluster = Cluster {
            options: options.clone(),
            log_root,
            runtime,
            system,
            node,
            kv,
            engines: Vec::new(),
            receivers: None,
            placed: Vec::new(),
            rounds: Vec::new(),
            killed_at_ns: None,
            paused_at_ns: None,
            partitioned_at_ns: None,
            broker_killed_at_ns: None,
            broker_restarted_at_ns: None,
            fail_stopped: Vec::new(),
            _temp: temp,
            servers,
            _server_config: server_config,
            sandbox,
        };
        for name in ["engines-a", "engines-b"] {
            cluster.add_engines(name)?;
            progress(&format!("{name} ready"));
        }
        let mut receivers = Proc::spawn(
            &cluster.options.node_command,
            "receivers",
            &cluster.args("receivers", "receivers"),
        )?;
        receivers.expect("ready", READY_WITHIN)?;
        cluster.receivers = Some(receivers);
        progress("receivers ready");
        Ok(cluster)
    }

    /// The arguments node `name` of this cluster gets.
    fn args(&self, role: &str, name: &str) -> Vec<String> {
        let o = &self.options;
        let mut args = vec![
            "--role".into(),
            role.into(),
            "--nats".into(),
            self.servers[host_of(name, self.servers.len())].url(),
            "--lease-replicas".into(),
            o.lease_replicas().to_string(),
            "--dispatcher".into(),
            o.dispatcher.name().into(),
            "--threads".into(),
            o.threads.to_string(),
            "--txlog".into(),
            o.txlog.to_string(),
            "--snapshot-every".into(),
            o.snapshot_every.to_string(),
            "--heartbeat-ms".into(),
            o.heartbeat.0.as_millis().to_string(),
            "--heartbeat-timeout-ms".into(),
            o.heartbeat.1.as_millis().to_string(),
            "--retry-ms".into(),
            o.retry.retry_after.as_millis().to_string(),
            "--give-up-ms".into(),
            o.retry.give_up_after.as_millis().to_string(),
        ];
        if let Some(root) = &self.log_root {
            args.extend(["--log-dir".into(), root.display().to_string()]);
        }
        args
    }

    /// Starts an engine node and waits until it leads or follows (in its
    /// network namespace, in a partition test).
    fn add_engines(&mut self, name: &str) -> Result<(), String> {
        let command = match (&self.sandbox, namespace_of(name)) {
            (Some(sandbox), Some(i)) => {
                let (program, mut args) = sandbox.exec_prefix(i);
                args.push(self.options.node_command.program.display().to_string());
                args.extend(self.options.node_command.args.iter().cloned());
                NodeCommand {
                    program: program.into(),
                    args,
                }
            }
            (Some(_), None) => return Err(format!("no network namespace for {name}")),
            (None, _) => self.options.node_command.clone(),
        };
        let mut p = Proc::spawn(&command, name, &self.args("engines", name))?;
        p.expect("ready", READY_WITHIN)?;
        self.engines.push(p);
        Ok(())
    }

    /// Starts a round of clients (fresh client ids, `window` orders in
    /// flight each, acknowledged as `mode` says) and returns once they
    /// place orders; [`Cluster::finish_round`] waits for their results.
    pub fn start_round(
        &mut self,
        scenario: Scenario,
        window: usize,
        mode: AckMode,
    ) -> Result<Proc, String> {
        let client_base = self
            .placed
            .last()
            .map_or(0, |p| p.client_base + p.scenario.clients);
        let name = format!("clients-{}", self.placed.len());
        let mut args = self.args("clients", &name);
        args.extend([
            "--clients".into(),
            scenario.clients.to_string(),
            "--orders".into(),
            scenario.orders().to_string(),
            "--scenario".into(),
            scenario.pattern.to_string(),
            "--client-base".into(),
            client_base.to_string(),
            "--window".into(),
            window.to_string(),
            "--variant".into(),
            mode.name().into(),
        ]);
        let mut clients = Proc::spawn(&self.options.node_command, &name, &args)?;
        clients.expect("ready", READY_WITHIN)?;
        self.placed.push(Placed {
            scenario,
            client_base,
        });
        Ok(clients)
    }

    /// Waits for the round `clients` runs to finish and returns its result.
    pub fn finish_round(&mut self, mut clients: Proc) -> Result<&ClientsResult, String> {
        let line = clients.expect("result", self.options.timeout)?;
        let result: ClientsResult =
            serde_json::from_str(&line).map_err(|e| format!("clients' result: {e}"))?;
        clients.finish();
        self.rounds.push(result);
        Ok(self.rounds.last().expect("just pushed"))
    }

    /// Waits until the round `clients` runs has had `percent` of its
    /// orders acknowledged; an error if it finished (or gave up) first.
    pub fn wait_for_acked(&self, clients: &mut Proc, percent: u64) -> Result<(), String> {
        let reached = clients.expect_first(
            &format!("'acked {percent}' or more"),
            self.options.timeout,
            |line| {
                if let Some(p) = line.strip_prefix("acked ") {
                    return (p.trim().parse::<u64>().ok()? >= percent).then_some(Ok(()));
                }
                line.strip_prefix("result ")
                    .map(|json| Err(json.to_string()))
            },
        )?;
        reached.map_err(|json| {
            let done = serde_json::from_str::<ClientsResult>(&json)
                .map(|r| format!("{} of {} acknowledged", r.acked, r.orders))
                .unwrap_or_else(|e| format!("unreadable result: {e}"));
            format!(
                "the clients finished before {percent}% of the orders were acknowledged \
                 ({done}): no fault was injected"
            )
        })
    }

    /// The engine node holding engine 0's lease (or, with `standby`, the
    /// other one): its place in `engines`.
    fn victim(&self, standby: bool) -> Result<usize, String> {
        let owner = self
            .runtime
            .block_on(self.kv.entry(engine_name(0)))
            .map_err(|e| e.to_string())?
            .map(|e| String::from_utf8_lossy(&e.value).into_owned())
            .ok_or("engine-0 has no lease")?;
        self.engines
            .iter()
            .position(|p| (p.name == owner) != standby)
            .ok_or_else(|| format!("no engine node to pick beside the lease owner {owner}"))
    }

    /// SIGSTOPs the engine node holding engine 0's lease; returns its
    /// name. It stays in the cluster: [`Cluster::resume`] wakes it, and
    /// [`Cluster::verify`] finds out whether it fail-stopped then.
    pub fn pause(&mut self) -> Result<String, String> {
        let victim = self.victim(false)?;
        self.engines[victim].pause()?;
        self.paused_at_ns = Some(unix_ns());
        Ok(self.engines[victim].name.clone())
    }

    /// SIGCONTs the paused engine node `name`.
    pub fn resume(&mut self, name: &str) -> Result<(), String> {
        self.engines
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| format!("no engine node {name} to resume"))?
            .resume()
    }

    /// Cuts the engine node holding engine 0's lease off the network (a
    /// partition test); returns its name. [`Cluster::heal`] joins it again.
    pub fn partition(&mut self) -> Result<String, String> {
        let victim = self.victim(false)?;
        let name = self.engines[victim].name.clone();
        let (Some(sandbox), Some(i)) = (&self.sandbox, namespace_of(&name)) else {
            return Err(format!(
                "{name} runs in no network namespace of this cluster"
            ));
        };
        sandbox.cut(i)?;
        self.partitioned_at_ns = Some(unix_ns());
        Ok(name)
    }

    /// Joins the cut-off engine node `name` to the network again.
    pub fn heal(&mut self, name: &str) -> Result<(), String> {
        match (&self.sandbox, namespace_of(name)) {
            (Some(sandbox), Some(i)) => sandbox.heal(i),
            _ => Err(format!(
                "{name} runs in no network namespace of this cluster"
            )),
        }
    }

    /// SIGKILLs the engine node holding engine 0's lease (or, with
    /// `standby`, the other one), and with `kill_host` its NATS server
    /// too; returns its name.
    pub fn kill(&mut self, standby: bool) -> Result<String, String> {
        let victim = self.victim(standby)?;
        let victim = self.engines.remove(victim);
        let name = victim.name.clone();
        victim.kill()?;
        if self.options.kill_host {
            let host = host_of(&name, self.servers.len());
            self.servers[host].stop();
        }
        self.killed_at_ns = Some(unix_ns());
        Ok(name)
    }

    /// SIGKILLs every engine node at once and returns their names.
    pub fn kill_all(&mut self) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        for victim in std::mem::take(&mut self.engines) {
            names.push(victim.name.clone());
            victim.kill()?;
        }
        self.killed_at_ns = Some(unix_ns());
        Ok(names)
    }

    /// Starts engine nodes again under `names`, each from its own log
    /// directory (the node's log root is named after it).
    pub fn restart(&mut self, names: &[String]) -> Result<(), String> {
        for name in names {
            self.add_engines(name)?;
        }
        Ok(())
    }

    /// Starts a fresh engine node `name` once no lease is held by `dead`;
    /// it joins every engine as standby.
    pub fn rejoin(&mut self, dead: &str, name: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let held = self.runtime.block_on(async {
                for index in 0..ENGINES {
                    let entry = self.kv.entry(engine_name(index)).await;
                    match entry.map_err(|e| e.to_string())? {
                        Some(e) if e.value.as_ref() == dead.as_bytes() => return Ok(true),
                        _ => {}
                    }
                }
                Ok::<_, String>(false)
            });
            // A read error is no answer (after a lost server the bucket
            // has no leader for a few seconds): ask again.
            if held == Ok(false) {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "leases still held by the dead {dead} after 30 s (last read: {held:?})"
                ));
            }
            interrupt::sleep(Duration::from_millis(20))?;
        }
        self.add_engines(name)
    }

    /// Moves every engine node that has ended on its own from `engines`
    /// to `fail_stopped`.
    fn note_ended(&mut self) {
        let mut i = 0;
        while i < self.engines.len() {
            match self.engines[i].ended() {
                Some(ended) => {
                    let p = self.engines.remove(i);
                    self.fail_stopped.push(FailStopped {
                        node: p.name.clone(),
                        status: ended.status.code(),
                        why: ended.why,
                    });
                }
                None => i += 1,
            }
        }
    }

    /// Every live engine node's reports; `Ok(None)` if a node ended while
    /// it was asked (it is noted, and the caller asks again) or if a node
    /// alive does not answer before `deadline` (one cut off and joined
    /// again is down for good to the launcher, and ends itself once its
    /// connection carries again: TCP retransmits after a backoff of up to
    /// seconds); an error if a node is alive and does not answer after it.
    fn reports(&mut self, deadline: Instant) -> Result<Option<Vec<EngineState>>, String> {
        let mut all = Vec::new();
        for p in 0..self.engines.len() {
            let name = self.engines[p].name.clone();
            let asked = self.runtime.block_on(async {
                let mut of_node = Vec::new();
                for index in 0..ENGINES {
                    let engine = self
                        .node
                        .lookup::<EngineCmd>(&engine_at(index, &name))
                        .await
                        .map_err(|e| format!("{name}: {e}"))?;
                    let report = engine
                        .ask(EngineCmd::Report, Duration::from_secs(10))
                        .await
                        .map_err(|e| format!("report of engine {index} on {name}: {e:?}"))?;
                    of_node.push(EngineState { index, report });
                }
                Ok::<_, String>(of_node)
            });
            match asked {
                Ok(of_node) => all.extend(of_node),
                Err(e) => {
                    let before = self.fail_stopped.len();
                    self.note_ended();
                    if self.fail_stopped.len() == before && Instant::now() > deadline {
                        return Err(format!(
                            "{e} (the node is alive and does not answer after {:?})",
                            self.options.settle_within
                        ));
                    }
                    return Ok(None);
                }
            }
        }
        Ok(Some(all))
    }

    /// Every live engine's report, and the checks of what survived. An
    /// engine node that ended on its own is recorded in the outcome and
    /// left out; one alive that does not answer within `settle_within`
    /// is an error. A node resumed from a pause or joined again after a
    /// partition may still be on its way out (it exits once it sees its
    /// leases moved): until every engine has one primary among the live
    /// nodes, the reports are asked again, for up to `settle_within`.
    pub fn verify(&mut self) -> Result<ClusterOutcome, String> {
        let deadline = Instant::now() + self.options.settle_within;
        let (reports, settled) = loop {
            self.note_ended();
            let Some(reports) = self.reports(deadline)? else {
                interrupt::sleep(Duration::from_millis(50))?;
                continue;
            };
            let settled = (0..ENGINES).all(|index| {
                reports
                    .iter()
                    .filter(|e| e.index == index && e.report.role == "primary")
                    .count()
                    == 1
            });
            if settled || Instant::now() > deadline {
                break (reports, settled);
            }
            interrupt::sleep(Duration::from_millis(50))?;
        };
        let mut outcome = ClusterOutcome {
            rounds: self.rounds.clone(),
            engines: reports,
            killed_at_ns: self.killed_at_ns,
            paused_at_ns: self.paused_at_ns,
            partitioned_at_ns: self.partitioned_at_ns,
            broker_killed_at_ns: self.broker_killed_at_ns,
            broker_restarted_at_ns: self.broker_restarted_at_ns,
            fail_stopped: self.fail_stopped.clone(),
            failover_ms: Vec::new(),
            applied_twice: 0,
            acked_missing: 0,
            problems: Vec::new(),
        };
        if !settled {
            outcome.problems.push(format!(
                "the live engine nodes did not settle on one primary per engine within \
                 {:?}",
                self.options.settle_within
            ));
        }
        check(&mut outcome, &self.placed, self.log_root.as_deref());
        Ok(outcome)
    }

    /// Every node leaves; the server stops.
    pub fn stop(mut self) {
        self.leave_all();
        self.runtime.block_on(self.node.shutdown());
        self.system.shutdown();
    }

    /// Tells every node to leave at once, then waits for each.
    fn leave_all(&mut self) {
        for p in self.engines.iter_mut().chain(self.receivers.as_mut()) {
            p.tell_to_leave();
        }
        let deadline = Instant::now() + super::procs::LEAVE_WITHIN;
        for p in self.engines.drain(..).chain(self.receivers.take()) {
            p.finish_by(deadline);
        }
    }
}

impl Drop for Cluster {
    /// Also on an error or an interrupt: the nodes leave before the logs
    /// are removed and the server stops (the fields dropped after this).
    fn drop(&mut self) {
        self.leave_all();
    }
}

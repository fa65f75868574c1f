//! `trading cluster`: a whole distributed trading system on this machine
//! (a nats-server, two engine nodes, a receivers node and a clients node,
//! each its own process), optionally a SIGKILL of the process holding the
//! engines' leases mid-load and a fresh engine node joining after it, and
//! the check of what survived:
//!
//! - for every engine, exactly one live primary, and its standby (if any)
//!   with the same books and digests;
//! - every acknowledged order applied exactly once, and no order applied
//!   that was not placed: from the primary's own log when logging is on
//!   (ids read back and counted), from the counts otherwise;
//! - the primary's books equal a replay of its log on a fresh market.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use trading_engine::{codec, Command as TradeCommand};
use troupe::ActorSystem;
use troupe_journal::read_from;
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

use super::client::RetryPolicy;
use super::lease::{engine_name, open_bucket};
use super::node::{engine_at, ClientsResult};
use super::wire::{EngineCmd, EngineReport};
use crate::engine_core::EngineCore;
use crate::topology::{engine_of, Pattern, Scenario, ENGINES};
use crate::txlog::TxLog;

/// What `trading cluster` runs.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Clients.
    pub clients: usize,
    /// Orders over all clients.
    pub orders: usize,
    /// The scenario's pattern.
    pub pattern: Pattern,
    /// The engines' log mode.
    pub txlog: TxLog,
    /// Where logs go (a fresh temporary directory if none; removed after).
    pub log_dir: Option<PathBuf>,
    /// SIGKILL the process holding engine 0's lease this long after the
    /// clients start.
    pub kill_after: Option<Duration>,
    /// Kill the standbys' process instead of the primaries'.
    pub kill_standby: bool,
    /// After a kill, start a fresh engine node that joins as standby.
    pub restart_killed: bool,
    /// Dispatcher threads per node.
    pub threads: usize,
    /// When clients resend and give up.
    pub retry: RetryPolicy,
    /// Node heartbeat interval and the silence after which a node is down.
    pub heartbeat: (Duration, Duration),
    /// How long the clients may take.
    pub timeout: Duration,
}

/// One engine as reported at the end.
#[derive(Debug, Serialize)]
pub struct EngineState {
    /// Engine index.
    pub index: usize,
    /// The report.
    pub report: EngineReport,
}

/// What a cluster run measured and found.
#[derive(Debug, Serialize)]
pub struct ClusterOutcome {
    /// The clients' results.
    pub clients: ClientsResult,
    /// Every live engine's report.
    pub engines: Vec<EngineState>,
    /// Wall-clock time of the SIGKILL (Unix ns), if any.
    pub killed_at_ns: Option<u64>,
    /// For each engine whose primary changed: SIGKILL to the first order
    /// the new primary accepted, in milliseconds.
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
}

/// A node process and what it printed.
struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(name: &str, args: &[String]) -> Result<Proc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("own binary: {e}"))?;
        let mut child = Command::new(exe)
            .arg("node")
            .args(["--name", name])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start node {name}: {e}"))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.to_string(),
            stdin: child.stdin.take(),
            child,
            lines,
        })
    }

    /// Waits for a line starting with `prefix`; returns the rest.
    fn expect(&mut self, prefix: &str, within: Duration) -> Result<String, String> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return Ok(rest.trim().to_string());
                    }
                }
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    return Err(format!(
                        "node {} printed no '{prefix}' within {within:?} (exit status: {status:?})",
                        self.name
                    ));
                }
            }
        }
    }

    /// Closes stdin (the node leaves) and waits up to 10 s, then kills.
    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// Runs the distributed system once; `progress` gets a line per step.
pub fn run_cluster(
    options: &ClusterOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<ClusterOutcome, String> {
    let scenario = Scenario::new(options.clients, options.orders)
        .map_err(|e| e.to_string())?
        .with_pattern(options.pattern);
    let server = NatsServer::start()?;
    let url = server.url();
    progress(&format!("nats-server on {url}"));
    let (log_root, _temp) = match (&options.log_dir, options.txlog) {
        (_, TxLog::Off) => (None, TempLogs(None)),
        (Some(dir), _) => (Some(dir.clone()), TempLogs(None)),
        (None, _) => {
            let dir = std::env::temp_dir().join(format!("trading-cluster-{}", std::process::id()));
            (Some(dir.clone()), TempLogs(Some(dir)))
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
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
    let kv = runtime.block_on(open_bucket(&node, "trading"))?;

    let common = |role: &str| -> Vec<String> {
        let mut args = vec![
            "--role".into(),
            role.into(),
            "--nats".into(),
            url.clone(),
            "--threads".into(),
            options.threads.to_string(),
            "--txlog".into(),
            options.txlog.to_string(),
            "--heartbeat-ms".into(),
            options.heartbeat.0.as_millis().to_string(),
            "--heartbeat-timeout-ms".into(),
            options.heartbeat.1.as_millis().to_string(),
        ];
        if let Some(root) = &log_root {
            args.extend(["--log-dir".into(), root.display().to_string()]);
        }
        args
    };
    let ready_within = Duration::from_secs(60);
    let mut engines = Vec::new();
    for name in ["engines-a", "engines-b"] {
        let mut p = Proc::spawn(name, &common("engines"))?;
        p.expect("ready", ready_within)?;
        progress(&format!("{name} ready"));
        engines.push(p);
    }
    let mut receivers = Proc::spawn("receivers", &common("receivers"))?;
    receivers.expect("ready", ready_within)?;
    progress("receivers ready");
    let mut client_args = common("clients");
    client_args.extend([
        "--clients".into(),
        options.clients.to_string(),
        "--orders".into(),
        options.orders.to_string(),
        "--scenario".into(),
        options.pattern.to_string(),
        "--retry-ms".into(),
        options.retry.retry_after.as_millis().to_string(),
        "--give-up-ms".into(),
        options.retry.give_up_after.as_millis().to_string(),
    ]);
    let mut clients = Proc::spawn("clients", &client_args)?;
    clients.expect("ready", ready_within)?;
    progress(&format!(
        "{} clients placing {} orders",
        scenario.clients,
        scenario.orders()
    ));

    let mut killed_at_ns = None;
    let mut killed_node = None;
    if let Some(after) = options.kill_after {
        std::thread::sleep(after);
        let owner = runtime
            .block_on(kv.entry(engine_name(0)))
            .map_err(|e| e.to_string())?
            .map(|e| String::from_utf8_lossy(&e.value).into_owned())
            .ok_or("engine-0 has no lease")?;
        let victim = engines
            .iter()
            .position(|p| (p.name == owner) != options.kill_standby)
            .ok_or_else(|| format!("no engine node to kill beside the lease owner {owner}"))?;
        let owner = engines[victim].name.clone();
        let what = if options.kill_standby {
            "standbys"
        } else {
            "primaries"
        };
        let mut victim = engines.remove(victim);
        victim
            .child
            .kill()
            .map_err(|e| format!("SIGKILL {owner}: {e}"))?;
        killed_at_ns = Some(unix_ns());
        let _ = victim.child.wait();
        progress(&format!("SIGKILLed {owner} (the {what}' node)"));
        killed_node = Some(owner.clone());
        if options.restart_killed {
            // The fresh node joins as standby once every lease has moved
            // off the dead node (it follows whoever owns each engine).
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let owners = runtime.block_on(owners(&kv))?;
                if owners.values().all(|o| *o != owner) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("leases still held by the dead {owner} after 30 s"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut fresh = Proc::spawn("engines-c", &common("engines"))?;
            fresh.expect("ready", ready_within)?;
            progress("engines-c joined as standby");
            engines.push(fresh);
        }
    }

    let result = clients.expect("result", options.timeout)?;
    let result: ClientsResult =
        serde_json::from_str(&result).map_err(|e| format!("clients' result: {e}"))?;
    progress(&format!(
        "clients done: {} acknowledged, {} given up, {} retries",
        result.acked,
        result.given_up.len(),
        result.retries
    ));
    clients.finish();

    // A standby acknowledges what it applied before the primary does, but
    // a joining one may still be catching up: give it a moment to settle.
    let reports = runtime.block_on(async {
        let mut all = Vec::new();
        for p in &engines {
            for index in 0..ENGINES {
                let engine = node
                    .lookup::<EngineCmd>(&engine_at(index, &p.name))
                    .await
                    .map_err(|e| format!("{}: {e}", p.name))?;
                let report = engine
                    .ask(EngineCmd::Report, Duration::from_secs(10))
                    .await
                    .map_err(|e| format!("report of engine {index} on {}: {e:?}", p.name))?;
                all.push(EngineState { index, report });
            }
        }
        Ok::<_, String>(all)
    })?;
    let mut outcome = ClusterOutcome {
        clients: result,
        engines: reports,
        killed_at_ns,
        failover_ms: Vec::new(),
        applied_twice: 0,
        acked_missing: 0,
        problems: Vec::new(),
    };
    check(
        &mut outcome,
        &scenario,
        log_root.as_deref(),
        killed_node.as_deref(),
    );

    for p in engines {
        p.finish();
    }
    receivers.finish();
    runtime.block_on(node.shutdown());
    system.shutdown();
    drop(server);
    Ok(outcome)
}

async fn owners(kv: &async_nats::jetstream::kv::Store) -> Result<HashMap<usize, String>, String> {
    let mut owners = HashMap::new();
    for index in 0..ENGINES {
        if let Some(e) = kv
            .entry(engine_name(index))
            .await
            .map_err(|e| e.to_string())?
        {
            owners.insert(index, String::from_utf8_lossy(&e.value).into_owned());
        }
    }
    Ok(owners)
}

/// The order ids a primary's log holds, in log order.
fn logged_ids(dir: &Path) -> Result<Vec<(u64, trading_engine::NewOrder)>, String> {
    let mut market = crate::topology::market();
    let mut orders = Vec::new();
    let mut bad = None;
    read_from(dir, 0, |record| {
        match codec::decode(&record.payload, &mut market) {
            Ok(TradeCommand::New(order)) => orders.push((order.id, order)),
            other => bad = Some(format!("{other:?}")),
        }
    })
    .map_err(|e| format!("read {}: {e}", dir.display()))?;
    match bad {
        Some(b) => Err(format!("{}: unreadable record {b}", dir.display())),
        None => Ok(orders),
    }
}

fn check(
    outcome: &mut ClusterOutcome,
    scenario: &Scenario,
    logs: Option<&Path>,
    killed: Option<&str>,
) {
    let given_up: std::collections::HashSet<u64> =
        outcome.clients.given_up.iter().copied().collect();
    if outcome.clients.acked + given_up.len() as u64 != scenario.orders() {
        outcome.problems.push(format!(
            "{} acknowledged + {} given up != {} placed",
            outcome.clients.acked,
            given_up.len(),
            scenario.orders()
        ));
    }
    // What each engine must hold: every acknowledged order of its books.
    let mut acked_by_engine: Vec<Vec<u64>> = vec![Vec::new(); ENGINES];
    let mut placed_by_engine = [0u64; ENGINES];
    for c in 0..scenario.clients {
        for n in 0..scenario.orders_per_client() {
            let o = scenario.order(c, n);
            placed_by_engine[engine_of(o.book)] += 1;
            if !given_up.contains(&o.id) {
                acked_by_engine[engine_of(o.book)].push(o.id);
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
            } else if (other.orders, other.fingerprint, &other.digests)
                != (primary.orders, primary.fingerprint, &primary.digests)
            {
                outcome.problems.push(format!(
                    "engine {index}: standby on {} differs from its primary ({} vs {} orders)",
                    other.node, other.orders, primary.orders
                ));
            }
        }
        if let (Some(killed_at), Some(first)) =
            (outcome.killed_at_ns, primary.first_order_after_promotion_ns)
        {
            if killed.is_some() && primary.promoted_at_ns.is_some() {
                outcome
                    .failover_ms
                    .push(first.saturating_sub(killed_at) as f64 / 1e6);
            }
        }
        let acked = &acked_by_engine[index];
        match logs {
            Some(root) => {
                let dir = root.join(&primary.node).join(engine_name(index));
                let logged = match logged_ids(&dir) {
                    Ok(l) => l,
                    Err(e) => {
                        outcome.problems.push(e);
                        continue;
                    }
                };
                let mut seen = std::collections::HashSet::new();
                let mut core = EngineCore::new();
                for (id, order) in &logged {
                    if !seen.insert(*id) {
                        outcome.applied_twice += 1;
                    }
                    core.process(order);
                }
                let missing = acked.iter().filter(|id| !seen.contains(id)).count() as u64;
                outcome.acked_missing += missing;
                let strangers = seen
                    .iter()
                    .filter(|id| {
                        let (c, n) = ((**id >> 32) as usize, (**id as u32) as usize);
                        c >= scenario.clients
                            || n >= scenario.orders_per_client()
                            || engine_of(scenario.order(c, n).book) != index
                    })
                    .count();
                if strangers > 0 {
                    outcome.problems.push(format!(
                        "engine {index}: {strangers} logged orders nobody placed"
                    ));
                }
                let replayed = core.summary();
                if (
                    replayed.orders,
                    replayed.trades,
                    replayed.fingerprint,
                    replayed.digests.to_vec(),
                ) != (
                    primary.orders,
                    primary.trades,
                    primary.fingerprint,
                    primary.digests.clone(),
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
    let c = &outcome.clients;
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
    let dups: u64 = outcome.engines.iter().map(|e| e.report.duplicates).sum();
    writeln!(
        out,
        "retried orders answered from memory: {dups}; applied twice: {}; acknowledged but missing: {}",
        outcome.applied_twice, outcome.acked_missing
    )?;
    if !outcome.failover_ms.is_empty() {
        let mut f = outcome.failover_ms.clone();
        f.sort_by(f64::total_cmp);
        writeln!(
            out,
            "failover (SIGKILL to the new primary's first order), {} engines: min {:.0} ms, median {:.0} ms, max {:.0} ms",
            f.len(),
            f[0],
            f[f.len() / 2],
            f[f.len() - 1]
        )?;
    }
    for p in &outcome.problems {
        writeln!(out, "PROBLEM: {p}")?;
    }
    Ok(())
}

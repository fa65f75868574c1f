//! The distributed trading experiment (docs/experiments.md, trading
//! across processes): the `trading` crate's cluster (a nats-server, two
//! engine nodes with each engine's primary on one and its standby on the
//! other, a receivers node, and a process of clients per run), request-reply
//! and one-way, with the transaction log off, buffered or under group
//! commit, clients with one order in flight and (`/w64`) with 64.
//!
//! Throughput rows: the cluster starts once per row (outside the clock);
//! every run is a fresh clients process with client ids of its own, so its
//! order ids are new, and is timed by the clients themselves from their
//! first send to their last acknowledgement. After every run the cluster
//! is checked (`trading::cluster::verify`: one primary per engine, its
//! standby equal to it, every acknowledged order in the primary's log
//! exactly once, books equal to a replay of the log); a failed check fails
//! the row. `msgs` is the orders per run, `ns_per_msg` wall time per
//! acknowledged order.
//!
//! The failover row: every run is a fresh cluster whose primaries' process
//! is SIGKILLed mid-load, once a share of its orders is acknowledged (as
//! the clients' process reports it: a kill timed on the clock alone can
//! come after a fast host's clients finished); its figure is the time from the SIGKILL to the
//! first order a new primary accepted (median over the engines the
//! scenario uses), and the run is checked like the others. The first kill
//! is the warm-up.

mod experiment;

pub use experiment::TradingCluster;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde_json::json;
use trading::cluster::node::NodeDispatcher;
use trading::cluster::{run_cluster, Cluster, ClusterOptions, ClusterOutcome, NodeCommand};
use trading::cluster::client::RetryPolicy;
use trading::cluster::wire::AckMode;
use trading::{Pattern, Scenario, TxLog};

use crate::report::Row;
use crate::runner::{summarize, RunOptions, Sample, Scale, Workload, WorkloadError};
use crate::shared::run_experiment;

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "trading-cluster";

/// The bench's hidden subcommand that runs one node of a cluster.
pub const NODE_SUBCOMMAND: &str = "trading-node";

/// One throughput point.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// How orders are acknowledged.
    pub mode: AckMode,
    /// The log mode.
    pub txlog: TxLog,
    /// Concurrent clients.
    pub clients: usize,
    /// Orders each client keeps in flight.
    pub window: usize,
}

impl Point {
    /// `<mode>/<txlog>/c<clients>`, with `/w<window>` when the clients
    /// pipeline.
    pub fn variant(&self) -> String {
        let base = format!("{}/{}/c{}", self.mode.name(), self.txlog, self.clients);
        match self.window {
            1 => base,
            w => format!("{base}/w{w}"),
        }
    }
}

/// The window of the pipelined rows.
pub const WINDOW: usize = 64;

/// What to run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Throughput points in run order.
    pub points: Vec<Point>,
    /// Orders per client per run.
    pub orders_per_client: usize,
    /// SIGKILLs for the failover row (the first is the warm-up); 0 skips it.
    pub kills: usize,
    /// Orders per kill run, and the percentage of them acknowledged when
    /// the kill comes.
    pub kill_orders: usize,
    /// See `kill_orders`.
    pub kill_at_acked: u64,
    /// Part of `all`: a missing nats-server skips the experiment.
    pub in_all: bool,
}

impl Settings {
    /// The sizes for a scale.
    pub fn for_scale(scale: Scale, in_all: bool) -> Settings {
        let (clients, logged, per_client, kills): (&[usize], &[usize], _, _) = match scale {
            Scale::Quick => (&[10], &[10], 150, 2),
            Scale::Default => (&[1, 10, 40], &[10], 1_200, if in_all { 6 } else { 21 }),
            Scale::Full => (&[1, 10, 40], &[1, 10, 40], 3_000, 21),
        };
        let mut points = Vec::new();
        for mode in [AckMode::RequestReply, AckMode::OneWay] {
            for txlog in TxLog::ALL {
                let counts = if txlog == TxLog::Off { clients } else { logged };
                points.extend(counts.iter().map(|&clients| Point {
                    mode,
                    txlog,
                    clients,
                    window: 1,
                }));
                // Ten clients with orders in flight, per log mode.
                points.push(Point {
                    mode,
                    txlog,
                    clients: 10,
                    window: WINDOW,
                });
            }
        }
        Settings {
            points,
            orders_per_client: per_client,
            kills,
            kill_orders: 20_000,
            kill_at_acked: 30,
            in_all,
        }
    }
}

/// Every cluster node of this experiment: the bench binary's hidden
/// subcommand, one thread each.
fn options(txlog: TxLog) -> Result<ClusterOptions, WorkloadError> {
    Ok(ClusterOptions {
        node_command: NodeCommand::this_binary(NODE_SUBCOMMAND).map_err(WorkloadError::new)?,
        clients: 10,
        orders: 0,
        window: 1,
        mode: AckMode::RequestReply,
        pattern: Pattern::Seed,
        txlog,
        log_dir: None,
        kill_at_acked: None,
        kill_after: None,
        pause_primary: None,
        partition_primary: None,
        kill_standby: false,
        kill_host: false,
        servers: 1,
        nats_server: Some(crate::nats::binary().map_err(WorkloadError::new)?),
        restart_killed: false,
        restart_all: false,
        broker_outage: None,
        dispatcher: NodeDispatcher::Shared,
        threads: 1,
        snapshot_every: trading::cluster::engine::SNAPSHOT_EVERY,
        retry: RetryPolicy {
            retry_after: Duration::from_millis(300),
            give_up_after: Duration::from_secs(30),
        },
        heartbeat: (Duration::from_millis(200), Duration::from_secs(1)),
        timeout: Duration::from_secs(600),
        settle_within: trading::cluster::launch::SETTLE_WITHIN,
    })
}

/// A failed check of a cluster run as the row's error.
fn verdict(outcome: &ClusterOutcome) -> Result<(), WorkloadError> {
    if outcome.verified() {
        Ok(())
    } else {
        Err(WorkloadError::new(outcome.problems.join("; ")))
    }
}

/// Every run's latency percentiles (µs: p50, p90, p99, p99.9, max) and
/// its messages per acknowledged order.
type Latencies = Rc<RefCell<Vec<([f64; 5], f64)>>>;

fn throughput(point: Point, settings: &Settings, latencies: Latencies) -> Workload {
    let scenario = Scenario::new(point.clients, point.clients * settings.orders_per_client)
        .expect("whole loops per client");
    let variant = point.variant();
    Workload::with_setup(variant, move || {
        let options = options(point.txlog)?;
        let mut cluster =
            Cluster::start(&options, &mut |_| {}).map_err(WorkloadError::new)?;
        // The engines count their messages since they started: a run's
        // share is the difference.
        let mut engine_messages = 0u64;
        Ok(move || {
            let clients = cluster
                .start_round(scenario, point.window, point.mode)
                .map_err(WorkloadError::new)?;
            let result = cluster
                .finish_round(clients)
                .map_err(WorkloadError::new)?
                .clone();
            if result.acked != scenario.orders() {
                return Err(WorkloadError::new(format!(
                    "{} of {} orders acknowledged ({} given up)",
                    result.acked,
                    scenario.orders(),
                    result.given_up.len()
                )));
            }
            let sample = Sample {
                msgs: result.acked,
                elapsed: Duration::from_secs_f64(result.seconds),
            };
            let outcome = cluster.verify().map_err(WorkloadError::new)?;
            verdict(&outcome)?;
            let now: u64 = outcome
                .engines
                .iter()
                .map(|e| e.report.messages.total())
                .sum();
            let messages = result.batches_sent + now.saturating_sub(engine_messages);
            engine_messages = now;
            latencies
                .borrow_mut()
                .push((result.latency_us, messages as f64 / result.acked.max(1) as f64));
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("variant", point.mode.name())
    .param("txlog", point.txlog.name())
    .param("clients", point.clients as u64)
    .param("window", point.window as u64)
    .param("orders", scenario.orders())
    .param("processes", 5u64)
    .param("threads", 1u64)
}

/// One kill: a fresh cluster, the primaries' process SIGKILLed mid-load,
/// a fresh standby joining; the failover time of every engine in use.
fn one_kill(settings: &Settings) -> Result<Vec<f64>, WorkloadError> {
    let mut options = options(TxLog::Buffered)?;
    options.orders = settings.kill_orders;
    options.kill_at_acked = Some(settings.kill_at_acked);
    options.restart_killed = true;
    let outcome = run_cluster(&options, &mut |_| {}).map_err(WorkloadError::new)?;
    verdict(&outcome)?;
    if outcome.failover_ms.is_empty() {
        // The kill came mid-load (run_cluster fails if the clients finish
        // first), so a standby must have taken over and served.
        return Err(WorkloadError::new(
            "no new primary accepted an order after the kill",
        ));
    }
    Ok(outcome.failover_ms)
}

fn failover_row(settings: &Settings) -> Result<Row, WorkloadError> {
    eprintln!("{EXPERIMENT}: failover, {} SIGKILLs", settings.kills);
    let mut per_kill = Vec::new();
    let mut all = Vec::new();
    for _ in 0..settings.kills {
        let times = one_kill(settings)?;
        let median = summarize(&times).expect("not empty").median;
        per_kill.push(Duration::from_secs_f64(median / 1e3));
        all.extend(times);
    }
    let (measurement, measured, summary) = crate::shared::per_fault(per_kill);
    let mut params = serde_json::Map::new();
    params.insert("runtime".into(), json!("troupe"));
    params.insert("variant".into(), json!("request-reply"));
    params.insert("txlog".into(), json!("buffered"));
    params.insert("clients".into(), json!(10));
    params.insert("window".into(), json!(1));
    params.insert("orders".into(), json!(settings.kill_orders));
    params.insert("processes".into(), json!(5));
    params.insert("threads".into(), json!(1));
    params.insert("kills".into(), json!(measured.len()));
    params.insert("failover_p50_ms".into(), json!(summary.median));
    params.insert("failover_max_ms".into(), json!(summary.max));
    params.insert("takeovers".into(), json!(all.len()));
    Ok(Row::new(EXPERIMENT, "failover", params, &measurement))
}

/// Runs the throughput rows and the failover row.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    if !crate::nats::for_experiment(EXPERIMENT, settings.in_all)? {
        return Ok(Vec::new());
    }
    let mut latencies = Vec::new();
    let mut workloads = Vec::new();
    for &point in &settings.points {
        let l = Latencies::default();
        workloads.push(throughput(point, settings, l.clone()));
        latencies.push((point.variant(), l));
    }
    let rows = run_experiment(EXPERIMENT, workloads, options);
    exit_if_interrupted();
    let mut rows = rows?;
    for row in &mut rows {
        let Some((_, l)) = latencies.iter().find(|(v, _)| *v == row.variant) else {
            continue;
        };
        let runs = l.borrow();
        // The measured runs are the last `repeats` (the warm-up came first).
        let measured = &runs[runs.len().saturating_sub(row.repeats)..];
        for (i, key) in ["p50_us", "p90_us", "p99_us", "p999_us", "max_us"]
            .iter()
            .enumerate()
        {
            let values: Vec<f64> = measured.iter().map(|p| p.0[i]).collect();
            if let Some(s) = summarize(&values) {
                row.params.insert((*key).into(), json!(s.median));
            }
        }
        let per_order: Vec<f64> = measured.iter().map(|p| p.1).collect();
        if let Some(s) = summarize(&per_order) {
            row.params.insert("msgs_per_order".into(), json!(s.median));
        }
    }
    let wanted = options
        .filter
        .as_deref()
        .is_none_or(|f| "failover".contains(f));
    if settings.kills >= 2 && wanted {
        let failover = failover_row(settings);
        exit_if_interrupted();
        rows.push(failover?);
    }
    Ok(rows)
}

/// A cluster replaces the default action of Ctrl-C and SIGTERM so that it
/// can stop its processes and remove its logs first (see
/// `trading::cluster::interrupt`); once it has, the bench stops as the
/// signal would have stopped it, instead of going on to the next rows.
fn exit_if_interrupted() {
    if trading::cluster::interrupt::interrupted() {
        eprintln!("{EXPERIMENT}: interrupted; the cluster's processes are stopped");
        std::process::exit(130);
    }
}

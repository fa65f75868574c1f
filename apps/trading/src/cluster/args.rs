//! The command-line arguments of a cluster node, shared by every binary
//! that can be one (`trading node`, and the benchmark's hidden node
//! command), so that a launcher starts any of them the same way.

use std::path::PathBuf;
use std::time::Duration;

use super::client::RetryPolicy;
use super::node::{NodeDispatcher, NodeOptions, NodeRole};
use super::wire::AckMode;
use crate::topology::Pattern;
use crate::txlog::TxLog;

/// What a cluster runs: the scenario (clients' part) and the logs
/// (engines' part).
#[derive(clap::Args, Clone, Debug)]
pub struct ClusterWork {
    /// Concurrent clients.
    #[arg(long, default_value_t = 10)]
    pub clients: usize,
    /// Orders in total (split evenly over the clients).
    #[arg(long, default_value_t = 30_000)]
    pub orders: usize,
    /// seed or resting.
    #[arg(long, default_value = "seed")]
    pub scenario: Pattern,
    /// request-reply (the primary acknowledges once its standby answered)
    /// or one-way (primary and standby each tell the client).
    #[arg(long, value_enum, default_value_t = AckMode::RequestReply)]
    pub variant: AckMode,
    /// Orders each client keeps in flight.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub window: u64,
    /// off, buffered or group-commit.
    #[arg(long, default_value = "buffered")]
    pub txlog: TxLog,
    /// Where the engines' logs go (`DIR/<node>`, one journal a node; for `cluster`,
    /// a temporary directory removed afterwards if not given).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
}

/// Settings every node of a cluster shares.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct NodeTuning {
    /// Where each node's actors run: `shared` (as tasks on the node's
    /// tokio runtime, beside its NATS connection) or `pool` (threads of
    /// their own).
    #[arg(long, value_enum, default_value_t = NodeDispatcher::Shared)]
    pub dispatcher: NodeDispatcher,
    /// Threads per node for its actors (with `shared`, the runtime's
    /// workers).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// A client resends an order not acknowledged for this long.
    #[arg(long, default_value_t = 1000)]
    pub retry_ms: u64,
    /// A client gives an order up after this long.
    #[arg(long, default_value_t = 30_000)]
    pub give_up_ms: u64,
    /// Node heartbeat interval.
    #[arg(long, default_value_t = 200)]
    pub heartbeat_ms: u64,
    /// A node silent this long is declared down.
    #[arg(long, default_value_t = 1000)]
    pub heartbeat_timeout_ms: u64,
    /// Each engine saves a snapshot of its state every this many logged
    /// events (0: never); a restart reads the latest and the log after it.
    #[arg(long, default_value_t = super::engine::SNAPSHOT_EVERY)]
    pub snapshot_every: u64,
    /// Copies of the lease bucket, made by whichever node creates it: the
    /// NATS servers it can lose and still hand leases over is
    /// (copies - 1) / 2 (3 on a three-server cluster; at most 5).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=5))]
    pub lease_replicas: u64,
}

impl NodeTuning {
    /// The clients' retry policy.
    pub fn retry(self) -> RetryPolicy {
        RetryPolicy {
            retry_after: Duration::from_millis(self.retry_ms),
            give_up_after: Duration::from_millis(self.give_up_ms),
        }
    }

    /// Heartbeat interval and timeout.
    pub fn heartbeat(self) -> (Duration, Duration) {
        (
            Duration::from_millis(self.heartbeat_ms),
            Duration::from_millis(self.heartbeat_timeout_ms),
        )
    }
}

/// One node process's arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct NodeArgs {
    /// engines, receivers or clients.
    #[arg(long)]
    pub role: NodeRole,
    /// NATS server URL.
    #[arg(long)]
    pub nats: String,
    /// This node's name, unique in the cluster.
    #[arg(long)]
    pub name: String,
    /// The first client's id (clients role): every round of clients on
    /// one cluster takes ids of its own, so its order ids are new.
    #[arg(long, default_value_t = 0)]
    pub client_base: usize,
    /// What the cluster runs (a node uses its role's part).
    #[command(flatten)]
    pub work: ClusterWork,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub tuning: NodeTuning,
}

impl NodeArgs {
    /// The node's settings.
    pub fn options(self) -> NodeOptions {
        let (heartbeat, heartbeat_timeout) = self.tuning.heartbeat();
        NodeOptions {
            nats: self.nats,
            name: self.name,
            cluster: "trading".into(),
            role: self.role,
            dispatcher: self.tuning.dispatcher,
            threads: self.tuning.threads,
            txlog: self.work.txlog,
            log_dir: self.work.log_dir,
            snapshot_every: self.tuning.snapshot_every,
            clients: self.work.clients,
            client_base: self.client_base,
            orders: self.work.orders,
            window: self.work.window as usize,
            mode: self.work.variant,
            pattern: self.work.scenario,
            retry: self.tuning.retry(),
            heartbeat,
            heartbeat_timeout,
            lease_replicas: self.tuning.lease_replicas as usize,
        }
    }

    /// Runs the node on a runtime of its own until it is done.
    pub fn run(self) -> Result<(), Box<dyn std::error::Error>> {
        let workers = match self.tuning.dispatcher {
            NodeDispatcher::Shared => self.tuning.threads.max(1),
            NodeDispatcher::Pool => 1,
        };
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()?
            .block_on(super::node::run_node(self.options()))
    }
}

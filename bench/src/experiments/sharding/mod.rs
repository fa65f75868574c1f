//! Cluster sharding (troupe-cluster's `sharding`): three nodes in this
//! process, each its own actor system and troupe-remote node, on a
//! nats-server of the bench's own.
//!
//! - `activate-3-nodes`: every run starts a fresh entity type on the three
//!   nodes, then asks each of `entities` new entities once (64 asks in
//!   flight, sent through the three regions in turn): each ask allocates
//!   the entity's shard if it is the shard's first, routes to the owning
//!   node and starts the entity there. ns/msg is per entity started and
//!   answered. Checked: every entity answers once with a count of 1, the
//!   regions report `entities` running in all, and every node runs at
//!   least a fifth of them. `bytes_per_entity` is the process's resident
//!   memory growth over the run per entity (three nodes' worth of maps,
//!   mailboxes and actors).
//!
//! What a sharded message costs against a plain remote one is in the
//! remote experiment's `sharded-*` rows.

mod experiment;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
use troupe_remote::launcher::NatsServer;
use troupe_remote::{Node, RemoteConfig};

pub use experiment::Sharding;

use crate::report::Row;
use crate::runner::{expect_eq, RunOptions, Scale, Stopwatch, Workload, WorkloadError};
use crate::shared::run_experiment;

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "sharding";

const WAIT: Duration = Duration::from_secs(60);

/// Asks in flight at once.
const IN_FLIGHT: usize = 64;

/// Nodes of the cluster.
const NODES: usize = 3;

/// Sizes of the sharding benchmark.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Entities started per run.
    pub entities: u64,
    /// Shards of the entity type.
    pub shards: u32,
}

impl Settings {
    /// The sizes for a scale (the 100,000 entities by default).
    pub fn for_scale(scale: Scale) -> Self {
        Settings {
            entities: match scale {
                Scale::Quick => 10_000,
                Scale::Default | Scale::Full => 100_000,
            },
            shards: 100,
        }
    }
}

fn err(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::new(e.to_string())
}

/// What an entity is asked.
#[derive(serde::Serialize, serde::Deserialize)]
enum Hello {
    /// Answer how many hellos this activation has had.
    Ping(ReplyTo<u64>),
}

impl troupe_remote::RemoteMessage for Hello {
    const TAG: &'static str = "troupe-bench.sharding.Hello";
}

#[derive(Default)]
struct Greeter {
    count: u64,
}

impl Actor for Greeter {
    type Msg = Hello;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Hello::Ping(reply): Hello) {
        self.count += 1;
        reply.reply(self.count);
    }
}

/// One node of the bench's cluster.
struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    region: ShardRegion<Hello>,
}

async fn start_cluster(url: &str, type_name: &str, shards: u32) -> Result<Vec<Member>, WorkloadError> {
    let mut members = Vec::new();
    for i in 0..NODES {
        let system = ActorSystem::builder().threads(1).build().map_err(err)?;
        let node = Arc::new(
            Node::start(&system, RemoteConfig::new(url, format!("bench-shard-{i}")))
                .await
                .map_err(err)?,
        );
        let mut settings = ShardingSettings::new(type_name);
        settings.shards = shards;
        settings.passivate_after = None;
        settings.rebalance_interval = None;
        let region = ShardRegion::start(node.clone(), &system, settings, |_| {
            Props::new(Greeter::default)
        })
        .await
        .map_err(err)?;
        members.push(Member {
            system,
            node,
            region,
        });
    }
    // Every node hears the others before the clock starts, so shards are
    // spread over the three rather than kept by the first asker.
    let deadline = tokio::time::Instant::now() + WAIT;
    while members.iter().any(|m| m.node.members().len() < NODES) {
        if tokio::time::Instant::now() > deadline {
            return Err(err("the three nodes did not hear each other within 60 s"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(members)
}

async fn stop_cluster(members: Vec<Member>) {
    for m in members {
        m.region.leave().await;
        m.node.shutdown().await;
        m.system.shutdown();
        let _ = m.system.await_termination_timeout(WAIT);
    }
}

/// Asks each of `n` new entities once, through the regions in turn.
async fn activate(members: &[Member], n: u64) -> Result<(), WorkloadError> {
    let mut lanes = tokio::task::JoinSet::new();
    for lane in 0..IN_FLIGHT as u64 {
        let entries: Vec<_> = (lane..n)
            .step_by(IN_FLIGHT)
            .map(|i| members[(i % NODES as u64) as usize].region.entity_ref(format!("e-{i}")))
            .collect();
        lanes.spawn(async move {
            for entity in entries {
                let count = entity.ask(Hello::Ping, WAIT).await.map_err(|e| {
                    err(format!("entity {:?}: {e}", entity.name()))
                })?;
                expect_eq("an entity's count on its first message", 1, count)?;
            }
            Ok::<(), WorkloadError>(())
        });
    }
    while let Some(done) = lanes.join_next().await {
        done.map_err(|e| err(format!("a lane panicked: {e}")))??;
    }
    Ok(())
}

/// Resident memory growth per entity, per measured run.
type Footprints = Rc<RefCell<Vec<f64>>>;

/// Runs the row on a nats-server of its own.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let server = crate::nats::binary()
        .and_then(|b| NatsServer::launch(&b, &[]))
        .map_err(|why| WorkloadError::new(format!("no nats-server: {why}")))?;
    let url = server.url();
    let settings = *settings;
    let footprints = Footprints::default();
    let recorded = footprints.clone();
    let workload = Workload::with_setup("activate-3-nodes", move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(err)?;
        let mut run = 0u64;
        Ok(move || {
            run += 1;
            let type_name = format!("bench-{run}");
            runtime.block_on(async {
                let members = start_cluster(&url, &type_name, settings.shards).await?;
                let before = crate::rss::current_rss_bytes().unwrap_or(0);
                let clock = Stopwatch::start();
                let activated = activate(&members, settings.entities).await;
                let sample = clock.stop(settings.entities);
                let after = crate::rss::current_rss_bytes().unwrap_or(0);
                let checked = activated.and_then(|()| {
                    let stats: Vec<_> = members.iter().map(|m| m.region.stats()).collect();
                    expect_eq(
                        "entities running across the three nodes",
                        settings.entities,
                        stats.iter().map(|s| s.entities).sum(),
                    )?;
                    if let Some(s) = stats.iter().find(|s| s.entities < settings.entities / 5) {
                        return Err(err(format!(
                            "validation failed: a node runs {} of {} entities (less than a fifth): {stats:?}",
                            s.entities, settings.entities
                        )));
                    }
                    Ok(())
                });
                stop_cluster(members).await;
                checked?;
                recorded
                    .borrow_mut()
                    .push(after.saturating_sub(before) as f64 / settings.entities as f64);
                Ok(sample)
            })
        })
    })
    .param("runtime", "troupe")
    .param("entities", settings.entities)
    .param("shards", settings.shards as u64)
    .param("nodes", NODES as u64)
    .param("in_flight", IN_FLIGHT as u64)
    .param("threads", 2u64);
    let mut rows = run_experiment(EXPERIMENT, vec![workload], options)?;
    for row in &mut rows {
        let all = footprints.borrow();
        let measured = &all[all.len().saturating_sub(row.repeats)..];
        let mut sorted = measured.to_vec();
        sorted.sort_by(f64::total_cmp);
        if let Some(median) = sorted.get(sorted.len() / 2) {
            row.params.insert("bytes_per_entity".into(), json!(median.round()));
        }
    }
    drop(server);
    Ok(rows)
}

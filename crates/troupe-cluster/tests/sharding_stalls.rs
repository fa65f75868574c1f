//! A sharding node whose process stalls (SIGSTOP, then SIGCONT), across
//! real OS processes (`troupe-shard-node` with rebalancing every 500 ms)
//! on a nats-server of the test's own, reached from this process through
//! a proxy region:
//!
//! * stalled 2 s, under a heartbeat timeout of 3 s (past half of it, so
//!   it may not trust that it still owns anything, and not declared down
//!   by the others): it hands every shard to the other node for real,
//!   every entity answers, and it rejoins by itself: rebalancing gives it
//!   shards again, with no restart;
//! * stalled 2 s past a heartbeat timeout of 1 s (declared down by the
//!   others, who take its shards): it resumes as a new incarnation of its
//!   node (troupe-remote draws one after a stall the others may have taken
//!   for its death), which the others take as a new member, and it owns
//!   shards again later, with no restart.

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use troupe::ActorSystem;
use troupe_cluster::sharding::{shard_of, ShardRegion};
use troupe_cluster::testing::{probe_settings, Where};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

mod processes;

use processes::{signal, Lines, NodeProcess};

/// What the node processes said last: shards owned, ready or not.
#[derive(Default, Debug)]
struct Seen {
    ready: Vec<String>,
    shards: BTreeMap<String, u64>,
    /// The fewest shards each node owned since `reset_low`.
    low: BTreeMap<String, u64>,
}

impl Seen {
    fn note(&mut self, (node, line): (String, String)) {
        if line == "ready" {
            self.ready.push(node);
        } else if let Some(n) = line.strip_prefix("shards ") {
            let n: u64 = n.parse().unwrap();
            self.shards.insert(node.clone(), n);
            let low = self.low.entry(node).or_insert(n);
            *low = (*low).min(n);
        }
    }

    fn owned(&self, node: &str) -> u64 {
        self.shards.get(node).copied().unwrap_or(0)
    }

    fn reset_low(&mut self) {
        self.low = self.shards.clone();
    }

    fn until(&mut self, lines: &Lines, what: &str, done: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => self.note(line),
                Err(_) => panic!("{what}: not within 30 s; last seen {self:?}"),
            }
        }
    }
}

/// Two node processes with the given heartbeat and rebalancing every
/// 500 ms, and a client node with a proxy region.
struct Cluster {
    _server: NatsServer,
    nodes: Vec<NodeProcess>,
    lines: Lines,
    seen: Seen,
    runtime: tokio::runtime::Runtime,
    system: ActorSystem,
    node: Arc<Node>,
    region: Option<ShardRegion<Where>>,
}

impl Cluster {
    fn start(beat: Duration, timeout: Duration) -> Cluster {
        let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
        let url = server.url();
        let (tx, lines) = mpsc::channel();
        let args = [
            beat.as_millis().to_string(),
            timeout.as_millis().to_string(),
            "500".to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let nodes = ["node-a", "node-b"]
            .iter()
            .map(|n| {
                processes::spawn_with(env!("CARGO_BIN_EXE_troupe-shard-node"), &url, n, &args, &tx)
            })
            .collect();
        let mut seen = Seen::default();
        seen.until(&lines, "two nodes ready", |s| s.ready.len() == 2);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let (node, region) = runtime.block_on(async {
            let mut config = RemoteConfig::new(&url, "client");
            config.heartbeat_interval = beat;
            config.heartbeat_timeout = timeout;
            let node = Arc::new(Node::start(&system, config).await.unwrap());
            let deadline = Instant::now() + Duration::from_secs(30);
            while node.members().len() < 3 {
                assert!(
                    Instant::now() < deadline,
                    "the client did not hear the nodes"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let region = ShardRegion::<Where>::start_proxy(node.clone(), &system, probe_settings())
                .await
                .unwrap();
            (node, region)
        });
        Cluster {
            _server: server,
            nodes,
            lines,
            seen,
            runtime,
            system,
            node,
            region: Some(region),
        }
    }

    /// Asks every entity until each answers; returns where each runs.
    fn ask_all(&self, entities: &[String]) -> BTreeMap<String, String> {
        let region = self.region.as_ref().unwrap();
        self.runtime.block_on(async {
            let mut home = BTreeMap::new();
            for id in entities {
                let deadline = Instant::now() + Duration::from_secs(30);
                let (node, _) = loop {
                    match region
                        .entity_ref(id.as_str())
                        .ask(Where::Ask, Duration::from_millis(500))
                        .await
                    {
                        Ok(answer) => break answer,
                        Err(e) => assert!(
                            Instant::now() < deadline,
                            "{id}: no answer within 30 s: {e:?}"
                        ),
                    }
                };
                home.insert(id.clone(), node);
            }
            home
        })
    }

    /// Stops `node` for `stall`, then lets it run again; returns when.
    fn stall(&self, node: &str, stall: Duration) -> Instant {
        let process = self.nodes.iter().find(|p| p.name == node).unwrap();
        signal(process, "-STOP");
        // The stall itself, not a wait for an outcome.
        std::thread::sleep(stall);
        signal(process, "-CONT");
        Instant::now()
    }

    /// Whether `node`'s process still runs (it was never restarted).
    fn still_running(&mut self, node: &str) -> bool {
        let process = self.nodes.iter_mut().find(|p| p.name == node).unwrap();
        process.child.try_wait().unwrap().is_none()
    }

    fn stop(mut self) {
        let region = self.region.take().unwrap();
        self.runtime.block_on(async {
            region.leave().await;
            self.node.shutdown().await;
        });
        self.system.shutdown();
        self.system.await_termination().unwrap();
        for p in &mut self.nodes {
            drop(p.child.stdin.take());
        }
        for p in &mut self.nodes {
            let _ = p.child.wait();
        }
    }
}

/// A test that failed leaves no node process behind (stopped ones
/// included: a stopped process cannot be ended by its stdin).
impl Drop for Cluster {
    fn drop(&mut self) {
        for p in &mut self.nodes {
            if p.child.try_wait().ok().flatten().is_none() {
                let pid = p.child.id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-CONT", &pid])
                    .status();
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

/// Three entity ids in each of the 12 shards.
fn entities() -> Vec<String> {
    let mut per_shard = BTreeMap::<u32, Vec<String>>::new();
    for i in 0.. {
        let id = format!("p-{i}");
        let ids = per_shard.entry(shard_of(&id, 12)).or_default();
        if ids.len() < 3 {
            ids.push(id);
        }
        if per_shard.len() == 12 && per_shard.values().all(|ids| ids.len() == 3) {
            break;
        }
    }
    per_shard.into_values().flatten().collect()
}

/// Both nodes own shards, evenly (rebalancing is on).
fn spread(cluster: &mut Cluster, entities: &[String]) {
    let home = cluster.ask_all(entities);
    assert!(home.values().all(|n| n == "node-a" || n == "node-b"));
    cluster
        .seen
        .until(&cluster.lines, "12 shards spread evenly", |s| {
            let (a, b) = (s.owned("node-a"), s.owned("node-b"));
            a + b == 12 && a.abs_diff(b) <= 1
        });
}

#[test]
#[ignore = "timing-sensitive under load (failed 2 of 14 runs on a loaded 2-core machine): CI runs it in its own step, tries counted and printed"]
fn a_node_stalled_past_half_the_heartbeat_timeout_hands_its_shards_over_and_rejoins() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let mut cluster = Cluster::start(Duration::from_millis(100), Duration::from_secs(3));
    let entities = entities();
    spread(&mut cluster, &entities);
    let had = cluster.seen.owned("node-a");

    cluster.seen.reset_low();
    let resumed = cluster.stall("node-a", Duration::from_secs(2));
    // It hands every shard over, for real: to node-b, not to itself.
    cluster.seen.until(
        &cluster.lines,
        &format!("node-a (owning {had} shards) hands its shards over after a 2 s stall"),
        |s| s.low.get("node-a") == Some(&0),
    );
    let handed = resumed.elapsed();
    let home = cluster.ask_all(&entities);
    println!(
        "after the stall: {} of {} entities answer from node-b",
        home.values().filter(|n| *n == "node-b").count(),
        entities.len()
    );
    // It was never declared down: it rejoins by itself, and rebalancing
    // gives it shards again.
    cluster.seen.until(
        &cluster.lines,
        "node-a owns shards again, by rebalancing",
        |s| s.owned("node-a") > 0,
    );
    // Figures, not assertions (rebalancing runs every 500 ms).
    println!(
        "node-a, stalled 2 s (heartbeat timeout 3 s): owned nothing {handed:?} after it \
         resumed, and shards again {:?} after",
        resumed.elapsed()
    );
    assert!(cluster.still_running("node-a"), "node-a was restarted");
    let home = cluster.ask_all(&entities);
    assert!(home.values().any(|n| n == "node-a"), "{home:?}");
    cluster.stop();
}

#[test]
#[ignore = "timing-sensitive under load (failed 2 of 14 runs on a loaded 2-core machine): CI runs it in its own step, tries counted and printed"]
fn a_node_stalled_past_the_heartbeat_timeout_owns_shards_again_without_a_restart() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let mut cluster = Cluster::start(Duration::from_millis(100), Duration::from_secs(1));
    let entities = entities();
    spread(&mut cluster, &entities);

    cluster.seen.reset_low();
    let resumed = cluster.stall("node-a", Duration::from_secs(2));
    // node-b declared it down and took its shards.
    cluster
        .seen
        .until(&cluster.lines, "node-a owns nothing", |s| {
            s.low.get("node-a") == Some(&0)
        });
    cluster.ask_all(&entities);
    cluster.seen.until(
        &cluster.lines,
        "node-a owns shards again after being declared down, by rebalancing",
        |s| s.owned("node-a") > 0,
    );
    // A figure, not an assertion (rebalancing runs every 500 ms).
    println!(
        "node-a, stalled 2 s (heartbeat timeout 1 s, declared down): owned shards again \
         {:?} after it resumed, as a new incarnation",
        resumed.elapsed()
    );
    assert!(cluster.still_running("node-a"), "node-a was restarted");
    let home = cluster.ask_all(&entities);
    assert!(home.values().any(|n| n == "node-a"), "{home:?}");
    cluster.stop();
}

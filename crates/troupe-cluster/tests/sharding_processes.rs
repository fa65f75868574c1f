//! Cluster sharding across real OS processes (`troupe-shard-node`,
//! heartbeat 100 ms, declared down after 1 s), on a nats-server of the
//! test's own, reached from this process through a proxy region:
//!
//! * a node is killed (SIGKILL): its shards move to the live nodes and its
//!   entities answer from there, each with a larger fencing token; the
//!   time from the kill to the first and to the last answer is printed (a
//!   figure, not a timed assertion; the target is the heartbeat timeout
//!   plus 2 s);
//! * a node is paused (SIGSTOP) past the heartbeat timeout: its shards
//!   move; resumed (SIGCONT), it sees the leases moved and stops every
//!   entity it ran.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use troupe::ActorSystem;
use troupe_cluster::sharding::ShardRegion;
use troupe_cluster::testing::{config, probe_settings, Where};
use troupe_remote::testing::NatsServer;
use troupe_remote::Node;

mod processes;

use processes::{signal, Lines, NodeProcess};

fn spawn(url: &str, name: &str, lines: &mpsc::Sender<(String, String)>) -> NodeProcess {
    processes::spawn(env!("CARGO_BIN_EXE_troupe-shard-node"), url, name, lines)
}

/// The entities each node process runs, from what they print.
#[derive(Default)]
struct Running {
    ready: BTreeSet<String>,
    entities: BTreeMap<String, BTreeSet<String>>,
    /// An entity that started on a node while running on another.
    doubled: Vec<String>,
    /// Entities each node started, in all.
    starts: BTreeMap<String, usize>,
}

impl Running {
    fn note(&mut self, (node, line): (String, String), ignore: &[&str]) {
        if line == "ready" {
            self.ready.insert(node);
        } else if let Some(rest) = line.strip_prefix("entity started ") {
            let id = rest.split(' ').next().unwrap().to_string();
            let elsewhere = self
                .entities
                .iter()
                .any(|(n, ids)| *n != node && !ignore.contains(&n.as_str()) && ids.contains(&id));
            if elsewhere {
                self.doubled.push(format!("{id} on {node}"));
            }
            *self.starts.entry(node.clone()).or_default() += 1;
            self.entities.entry(node).or_default().insert(id);
        } else if let Some(rest) = line.strip_prefix("entity stopped ") {
            let id = rest.split(' ').next().unwrap();
            self.entities.entry(node).or_default().remove(id);
        }
    }

    fn until(
        &mut self,
        lines: &Lines,
        ignore: &[&str],
        what: &str,
        done: impl Fn(&Running) -> bool,
    ) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => self.note(line, ignore),
                Err(_) => panic!("{what}: not within 30 s; running {:?}", self.entities),
            }
        }
    }

    fn drain(&mut self, lines: &Lines, ignore: &[&str]) {
        while let Ok(line) = lines.try_recv() {
            self.note(line, ignore);
        }
    }
}

/// Asks `entity` until a node answers (an ask sent to a node that just
/// died is lost: it times out and is sent again).
async fn ask(region: &ShardRegion<Where>, entity: &str) -> (String, u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match region
            .entity_ref(entity)
            .ask(Where::Ask, Duration::from_millis(500))
            .await
        {
            Ok(answer) => return answer,
            Err(e) => assert!(
                Instant::now() < deadline,
                "{entity}: no answer within 30 s: {e:?}"
            ),
        }
    }
}

#[test]
fn a_killed_node_s_entities_move_and_a_paused_node_stops_its_own_on_resume() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    let (tx, lines) = mpsc::channel();
    let mut nodes: Vec<NodeProcess> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|n| spawn(&url, n, &tx))
        .collect();
    let mut running = Running::default();
    running.until(&lines, &[], "three nodes ready", |r| r.ready.len() == 3);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let (node, region) = runtime.block_on(async {
        let node = Arc::new(Node::start(&system, config(&url, "client")).await.unwrap());
        let deadline = Instant::now() + Duration::from_secs(30);
        while node.members().len() < 4 {
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
    let entities: Vec<String> = (0..60).map(|i| format!("p-{i}")).collect();
    let mut home = BTreeMap::new();
    runtime.block_on(async {
        for id in &entities {
            home.insert(id.clone(), ask(&region, id).await);
        }
    });
    let used: BTreeSet<&String> = home.values().map(|(n, _)| n).collect();
    assert_eq!(
        used.len(),
        3,
        "shards spread over the three nodes: {home:?}"
    );

    // SIGKILL the node with the most entities.
    let victim = ["node-a", "node-b", "node-c"]
        .into_iter()
        .max_by_key(|n| home.values().filter(|(h, _)| h == n).count())
        .unwrap();
    let index = nodes.iter().position(|p| p.name == victim).unwrap();
    let mut killed = nodes.remove(index);
    signal(&killed, "-KILL");
    let kill = Instant::now();
    let _ = killed.child.wait();
    let moved: Vec<&String> = home
        .iter()
        .filter(|(_, (n, _))| n == victim)
        .map(|(id, _)| id)
        .collect();
    let (mut first, mut last) = (None, Duration::ZERO);
    runtime.block_on(async {
        for id in &moved {
            let (now, token) = ask(&region, id).await;
            let old = home[*id].1;
            assert_ne!(now, victim, "{id}");
            assert!(token > old, "{id}: token {token} after {old}");
            first.get_or_insert(kill.elapsed());
            last = kill.elapsed();
        }
    });
    println!(
        "sharding: {} entities of the killed {victim} answered from live nodes, the first {:?} and the last {:?} after the kill (heartbeat timeout 1 s)",
        moved.len(),
        first.unwrap(),
        last
    );
    running.drain(&lines, &[victim]);
    assert!(running.doubled.is_empty(), "{:?}", running.doubled);

    // SIGSTOP the live node with the most entities, past the timeout.
    let pausing = nodes
        .iter()
        .max_by_key(|p| running.entities.get(&p.name).map_or(0, BTreeSet::len))
        .unwrap();
    let paused_name = pausing.name.clone();
    let had: BTreeSet<String> = running.entities[&paused_name].clone();
    assert!(!had.is_empty());
    signal(pausing, "-STOP");
    // The paused node's activations linger, frozen, while the live nodes
    // start new ones (what fencing tokens are for): it is left out of the
    // overlap check from now on, and must start nothing once resumed.
    let ignore = [victim, paused_name.as_str()];
    runtime.block_on(async {
        for id in &had {
            let (now, _) = ask(&region, id).await;
            assert_ne!(now, paused_name, "{id} answered from the paused node");
        }
    });
    running.drain(&lines, &ignore);
    let started_before = running.starts.get(&paused_name).copied();
    signal(pausing, "-CONT");
    // Resumed, it sees its shards' leases moved and stops their entities.
    running.until(
        &lines,
        &ignore,
        "the resumed node stops its entities",
        |r| r.entities.get(&paused_name).is_none_or(BTreeSet::is_empty),
    );
    // Every entity answers from the node that runs it now.
    runtime.block_on(async {
        for id in &entities {
            let (now, _) = ask(&region, id).await;
            assert_ne!(now, victim, "{id}");
            assert_ne!(now, paused_name, "{id}: the resumed node owns no shard");
        }
    });
    running.drain(&lines, &ignore);
    assert!(running.doubled.is_empty(), "{:?}", running.doubled);
    assert_eq!(
        running.starts.get(&paused_name).copied(),
        started_before,
        "the resumed node started entities"
    );

    runtime.block_on(async {
        region.leave().await;
        node.shutdown().await;
    });
    system.shutdown();
    system.await_termination().unwrap();
    for p in &mut nodes {
        drop(p.child.stdin.take());
    }
    for p in &mut nodes {
        let _ = p.child.wait();
    }
}

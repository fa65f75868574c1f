//! Cluster sharding across three nodes in this process, on a nats-server
//! of the test's own: entities start where their shard is owned and are
//! reached from every node; shards spread over the nodes, move when a
//! node leaves or is lost and when a new node joins (rebalance); idle
//! entities are passivated and start again on their next message; and no
//! entity ever has two activations at once.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
use troupe_cluster::sharding::{RegionStats, ShardRegion, ShardingSettings};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

const WAIT: Duration = Duration::from_secs(10);

/// What an entity answers: the node it runs on, its count of messages in
/// this activation, and its shard's fencing token.
type Answer = (String, u64, u64);

#[derive(serde::Serialize, serde::Deserialize)]
enum TallyMsg {
    Add(ReplyTo<Answer>),
}

impl troupe_remote::RemoteMessage for TallyMsg {
    const TAG: &'static str = "troupe-cluster.test.Tally";
}

/// Activations alive per entity now, and the most ever alive at once (all
/// nodes are in this process, so one map sees them all).
#[derive(Default)]
struct Life {
    alive: Mutex<HashMap<String, (u32, u32)>>,
}

impl Life {
    fn most(&self) -> u32 {
        let alive = self.alive.lock().unwrap();
        alive.values().map(|(_, most)| *most).max().unwrap_or(0)
    }
}

struct Tally {
    id: String,
    node: String,
    token: u64,
    count: u64,
    life: Arc<Life>,
}

impl Actor for Tally {
    type Msg = TallyMsg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        let mut alive = self.life.alive.lock().unwrap();
        let entry = alive.entry(self.id.clone()).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(entry.0);
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, TallyMsg::Add(reply): TallyMsg) {
        self.count += 1;
        reply.reply((self.node.clone(), self.count, self.token));
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        let mut alive = self.life.alive.lock().unwrap();
        alive.get_mut(&self.id).unwrap().0 -= 1;
    }
}

struct Member {
    name: String,
    system: ActorSystem,
    node: Arc<Node>,
    region: ShardRegion<TallyMsg>,
}

impl Member {
    async fn start(
        server: &NatsServer,
        name: &str,
        life: &Arc<Life>,
        tune: impl FnOnce(&mut ShardingSettings),
    ) -> Member {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let mut config = RemoteConfig::new(server.url(), name);
        config.heartbeat_interval = Duration::from_millis(200);
        config.heartbeat_timeout = Duration::from_secs(5);
        let node = Arc::new(Node::start(&system, config).await.unwrap());
        let mut settings = ShardingSettings::new("tally");
        settings.shards = 30;
        // Rebalancing only where a test turns it on.
        settings.rebalance_interval = None;
        tune(&mut settings);
        let (here, life) = (name.to_string(), life.clone());
        let region = ShardRegion::start(node.clone(), &system, settings, move |entity| {
            let (id, node, token, life) =
                (entity.id.clone(), here.clone(), entity.token, life.clone());
            Props::new(move || Tally {
                id: id.clone(),
                node: node.clone(),
                token,
                count: 0,
                life: life.clone(),
            })
        })
        .await
        .unwrap();
        Member {
            name: name.to_string(),
            system,
            node,
            region,
        }
    }

    async fn add(&self, entity: &str) -> Answer {
        self.region
            .entity_ref(entity)
            .ask(TallyMsg::Add, WAIT)
            .await
            .unwrap_or_else(|e| panic!("{entity} via {}: {e:?}", self.name))
    }

    async fn stop(self) {
        self.region.leave().await;
        self.node.shutdown().await;
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

fn entity(i: usize) -> String {
    format!("e-{i}")
}

/// Waits (up to 30 s) until every member hears every other.
async fn hear_each_other(members: &[&Member]) {
    let nodes: Vec<&Node> = members.iter().map(|m| &*m.node).collect();
    common::hear_each_other(&nodes).await;
}

/// Waits (up to 30 s) until `done` holds for the members' stats.
async fn until(members: &[&Member], what: &str, done: impl Fn(&[RegionStats]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stats: Vec<RegionStats> = members.iter().map(|m| m.region.stats()).collect();
        if done(&stats) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within 30 s: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_run_where_their_shard_is_owned_and_move_when_a_node_leaves() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let mut members = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        members.push(Member::start(&server, name, &life, |_| {}).await);
    }
    hear_each_other(&members.iter().collect::<Vec<_>>()).await;
    // 200 entities, each asked once from every node: one activation per
    // entity counts 1, 2, 3 on one node, whichever node asks.
    let mut home = HashMap::new();
    for i in 0..200 {
        let id = entity(i);
        for (k, m) in members.iter().enumerate() {
            let (node, count, _) = m.add(&id).await;
            assert_eq!(count, k as u64 + 1, "{id} via {}", m.name);
            assert_eq!(
                *home.entry(id.clone()).or_insert(node.clone()),
                node,
                "{id}"
            );
        }
    }
    // Shards went to the node that asked first when loads were equal, so
    // each node owns some; 200 entities over 30 shards use every shard.
    let stats: Vec<RegionStats> = members.iter().map(|m| m.region.stats()).collect();
    assert_eq!(stats.iter().map(|s| s.shards).sum::<u64>(), 30, "{stats:?}");
    assert!(
        stats.iter().all(|s| s.shards >= 9),
        "least-shards allocation: {stats:?}"
    );
    assert_eq!(stats.iter().map(|s| s.entities).sum::<u64>(), 200);
    assert_eq!(stats.iter().map(|s| s.dropped).sum::<u64>(), 0);

    // node-b leaves: its shards are handed to the others (its entities
    // stopped first), and its entities answer from their new homes.
    let leaving = members.remove(1);
    let moved: Vec<String> = home
        .iter()
        .filter(|(_, n)| **n == leaving.name)
        .map(|(id, _)| id.clone())
        .collect();
    assert!(!moved.is_empty());
    leaving.stop().await;
    for id in &moved {
        let (node, count, _) = members[0].add(id).await;
        assert_ne!(node, "node-b", "{id}");
        assert_eq!(count, 1, "{id}: a fresh activation on its new node");
    }
    let stats: Vec<RegionStats> = members.iter().map(|m| m.region.stats()).collect();
    assert_eq!(stats.iter().map(|s| s.shards).sum::<u64>(), 30, "{stats:?}");
    assert_eq!(life.most(), 1, "an entity had two activations at once");
    for m in members {
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_node_s_shards_move_and_its_entities_answer_within_the_heartbeat_timeout() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let a = Member::start(&server, "node-a", &life, |_| {}).await;
    let b = Member::start(&server, "node-b", &life, |_| {}).await;
    hear_each_other(&[&a, &b]).await;
    let mut on_b = Vec::new();
    for i in 0..100 {
        let id = entity(i);
        if b.add(&id).await.0 == "node-b" {
            on_b.push(id);
        }
    }
    assert!(!on_b.is_empty());
    // node-b's process is lost: its actors end with its system, then its
    // node says it left (a node killed outright is declared down after
    // the heartbeat timeout instead: `sharding_processes.rs`). Its region
    // never hands its shards over; node-a takes them.
    b.system.shutdown();
    b.system.await_termination().unwrap();
    b.node.shutdown().await;
    let lost = Instant::now();
    for id in &on_b {
        let (node, count, _) = a.add(id).await;
        assert_eq!((node.as_str(), count), ("node-a", 1), "{id}");
    }
    let took = lost.elapsed();
    // Bound: the heartbeat timeout (5 s) + 2 s; a node that leaves says
    // so, so this is usually far less.
    assert!(took < Duration::from_secs(7), "{took:?}");
    drop(b.region);
    assert_eq!(life.most(), 1);
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_nodes_get_shards_by_rebalancing_and_idle_entities_are_passivated() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let tune = |s: &mut ShardingSettings| {
        s.rebalance_interval = Some(Duration::from_millis(300));
        s.rebalance_limit = 3;
        s.passivate_after = Some(Duration::from_millis(500));
    };
    let a = Member::start(&server, "node-a", &life, tune).await;
    for i in 0..100 {
        assert_eq!(a.add(&entity(i)).await.0, "node-a");
    }
    let used = (0..100)
        .map(|i| a.region.shard_of(&entity(i)))
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    assert_eq!(a.region.stats().shards, used);
    let b = Member::start(&server, "node-b", &life, tune).await;
    let c = Member::start(&server, "node-c", &life, tune).await;
    hear_each_other(&[&a, &b, &c]).await;
    until(&[&a, &b, &c], "shards spread evenly", |s| {
        let (most, least) = (
            s.iter().map(|s| s.shards).max().unwrap(),
            s.iter().map(|s| s.shards).min().unwrap(),
        );
        most - least <= 1 && s.iter().map(|s| s.shards).sum::<u64>() == used
    })
    .await;
    // Every entity is reachable from every node, on the new owners.
    let mut nodes = HashMap::new();
    for i in 0..100 {
        for m in [&a, &b, &c] {
            let (node, _, _) = m.add(&entity(i)).await;
            *nodes.entry(node).or_insert(0) += 1;
        }
    }
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    // Idle for 0.5 s, every entity is passivated...
    until(&[&a, &b, &c], "every entity passivated", |s| {
        s.iter().all(|s| s.entities == 0) && s.iter().map(|s| s.passivated).sum::<u64>() >= 100
    })
    .await;
    // ...and a message starts it again.
    let (_, count, _) = b.add(&entity(7)).await;
    assert_eq!(count, 1);
    assert_eq!(life.most(), 1, "an entity had two activations at once");
    for m in [a, b, c] {
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembered_entities_start_on_their_shard_s_new_node_without_a_message() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let tune = |s: &mut ShardingSettings| s.remember_entities = true;
    let a = Member::start(&server, "node-a", &life, tune).await;
    let b = Member::start(&server, "node-b", &life, tune).await;
    // node-b hands its shards over only to a node it has heard.
    hear_each_other(&[&a, &b]).await;
    let mut on_b = 0;
    for i in 0..40 {
        if a.add(&entity(i)).await.0 == "node-b" {
            on_b += 1;
        }
    }
    assert!(on_b > 0);
    until(&[&a, &b], "40 entities running", |s| {
        s.iter().map(|s| s.entities).sum::<u64>() == 40
    })
    .await;
    // node-b leaves: its shards go to node-a, which starts their
    // remembered entities with no message sent to them.
    b.stop().await;
    // node-a started its own 40 - on_b, and now node-b's on_b.
    until(&[&a], "node-b's entities started again on node-a", |s| {
        s[0].entities == 40 && s[0].started == 40
    })
    .await;
    assert_eq!(
        a.region.stats().forwarded,
        on_b,
        "no message went to them since"
    );
    assert_eq!(life.most(), 1, "an entity had two activations at once");
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_dropped_without_leaving_hands_its_shards_over_on_its_own() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let a = Member::start(&server, "node-a", &life, |_| {}).await;
    let b = Member::start(&server, "node-b", &life, |_| {}).await;
    hear_each_other(&[&a, &b]).await;
    for i in 0..40 {
        a.add(&entity(i)).await;
    }
    let used = (0..40)
        .map(|i| a.region.shard_of(&entity(i)))
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    assert!(b.region.stats().shards > 0);
    let Member {
        system,
        node,
        region,
        ..
    } = b;
    drop(region);
    until(&[&a], "node-a owns every used shard", |s| {
        s[0].shards == used
    })
    .await;
    node.shutdown().await;
    system.shutdown();
    system.await_termination().unwrap();
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_left_by_a_cluster_that_stopped_as_a_whole_are_taken_over() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let a = Member::start(&server, "node-a", &life, |_| {}).await;
    for i in 0..20 {
        assert_eq!(a.add(&entity(i)).await.0, "node-a");
    }
    // The whole cluster (node-a) stops without handing anything over:
    // its leases stay in the bucket under its name.
    let Member {
        system,
        node,
        region,
        ..
    } = a;
    system.shutdown();
    system.await_termination().unwrap();
    node.shutdown().await;
    drop(region);
    // A new node never hears node-a: after its heartbeat timeout it takes
    // the shards over, and the held messages reach fresh activations.
    let b = Member::start(&server, "node-b", &life, |_| {}).await;
    for i in 0..20 {
        let (node, count, _) = b.add(&entity(i)).await;
        assert_eq!((node.as_str(), count), ("node-b", 1), "{}", entity(i));
    }
    b.stop().await;
}

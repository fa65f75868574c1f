//! Per-sender order across a shard's move: three nodes in this process, on
//! a nats-server of the test's own. A sender on one node streams numbered
//! messages to entities whose shards another node owns, and that node
//! hands its shards over (it leaves, or rebalancing moves them) while the
//! stream runs. Each entity must see the numbers in increasing order:
//! a message may be lost in the move (delivery across nodes is
//! at-most-once), never overtaken by a later one of the same sender.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

const WAIT: Duration = Duration::from_secs(10);

#[derive(serde::Serialize, serde::Deserialize)]
enum SeqMsg {
    /// The sender's next number.
    Next(u64),
    /// Answers the node the entity runs on.
    Where(ReplyTo<String>),
}

impl troupe_remote::RemoteMessage for SeqMsg {
    const TAG: &'static str = "troupe-cluster.test.Seq";
}

/// Every number each entity was given, in the order its activations
/// handled them (all nodes are in this process, so one map sees them all).
type Seen = Arc<Mutex<HashMap<String, Vec<u64>>>>;

struct Recorder {
    id: String,
    node: String,
    seen: Seen,
}

impl Actor for Recorder {
    type Msg = SeqMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: SeqMsg) {
        match msg {
            SeqMsg::Next(n) => {
                let mut seen = self.seen.lock().unwrap();
                seen.entry(self.id.clone()).or_default().push(n);
            }
            SeqMsg::Where(reply) => {
                reply.reply(self.node.clone());
            }
        }
    }
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    region: ShardRegion<SeqMsg>,
}

impl Member {
    async fn start(server: &NatsServer, name: &str, seen: &Seen, rebalance: bool) -> Member {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let mut config = RemoteConfig::new(server.url(), name);
        config.heartbeat_interval = Duration::from_millis(200);
        config.heartbeat_timeout = Duration::from_secs(5);
        let node = Arc::new(Node::start(&system, config).await.unwrap());
        let mut settings = ShardingSettings::new("seq");
        settings.shards = 12;
        settings.rebalance_interval = rebalance.then_some(Duration::from_millis(300));
        settings.rebalance_limit = 12;
        let (here, seen) = (name.to_string(), seen.clone());
        let region = ShardRegion::start(node.clone(), &system, settings, move |entity| {
            let (id, node, seen) = (entity.id.clone(), here.clone(), seen.clone());
            Props::new(move || Recorder {
                id: id.clone(),
                node: node.clone(),
                seen: seen.clone(),
            })
        })
        .await
        .unwrap();
        Member {
            system,
            node,
            region,
        }
    }

    async fn home(&self, entity: &str) -> String {
        self.region
            .entity_ref(entity)
            .ask(SeqMsg::Where, WAIT)
            .await
            .unwrap_or_else(|e| panic!("{entity}: {e:?}"))
    }

    async fn stop(self) {
        self.region.leave().await;
        self.node.shutdown().await;
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

/// Waits (up to 30 s) until every member hears every other.
async fn hear_each_other(members: &[&Member]) {
    let nodes: Vec<&Node> = members.iter().map(|m| &*m.node).collect();
    common::hear_each_other(&nodes).await;
}

/// Streams numbers from `sender` to each of `ids` (one number to each id
/// in turn) until `stop` is set; returns how many each was sent.
fn stream(
    sender: &Member,
    ids: Vec<String>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<u64> {
    let refs: Vec<_> = ids.iter().map(|id| sender.region.entity_ref(id)).collect();
    tokio::spawn(async move {
        let mut n = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            for r in &refs {
                r.tell(SeqMsg::Next(n));
            }
            n += 1;
            // A steady stream, not a flood: the region's buffer (10,000)
            // must hold what waits during the move.
            if n % 8 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        n
    })
}

/// Every entity's numbers are increasing, and most of them arrived.
fn check_order(seen: &Seen, ids: &[String], sent: u64) {
    let seen = seen.lock().unwrap();
    for id in ids {
        let got = seen.get(id).map(Vec::as_slice).unwrap_or(&[]);
        if let Some(i) = got.windows(2).position(|w| w[0] >= w[1]) {
            let around = &got[i.saturating_sub(3)..(i + 5).min(got.len())];
            panic!(
                "{id}: {} came after {} (of {} received, {sent} sent); around it: {around:?}",
                got[i + 1],
                got[i],
                got.len()
            );
        }
        assert!(
            got.len() as u64 * 2 > sent,
            "{id}: only {} of {sent} arrived",
            got.len()
        );
    }
}

/// Ids whose shards `owner` runs now, asked from `via`.
async fn homed_on(via: &Member, owner: &str, want: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0.. {
        let id = format!("s-{i}");
        if via.home(&id).await == owner {
            ids.push(id);
            if ids.len() == want {
                return ids;
            }
        }
        assert!(i < 2_000, "no shard of {owner} found");
    }
    unreachable!()
}

/// Waits until every entity has handled its sender's last number.
async fn drained(via: &Member, ids: &[String], seen: &Seen, sent: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // An ask behind the stream: once answered, everything the sender
        // sent before it on this route was handled (or lost).
        for id in ids {
            via.home(id).await;
        }
        let last_seen = {
            let seen = seen.lock().unwrap();
            ids.iter()
                .all(|id| seen.get(id).and_then(|v| v.last()) == Some(&(sent - 1)))
        };
        if last_seen || Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_s_messages_keep_their_order_while_the_owner_leaves() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let seen: Seen = Arc::default();
    let a = Member::start(&server, "node-a", &seen, false).await;
    let b = Member::start(&server, "node-b", &seen, false).await;
    let c = Member::start(&server, "node-c", &seen, false).await;
    hear_each_other(&[&a, &b, &c]).await;
    // Shards go to the asking node when loads are equal: ask from b first.
    let ids = homed_on(&b, "node-b", 6).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream(&a, ids.clone(), stop.clone());
    // Let the stream run through b, then b hands everything over (to a
    // and to c: the entities move both to the sender's node and to a
    // third one).
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.stop().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = sender.await.unwrap();
    drained(&a, &ids, &seen, sent).await;
    check_order(&seen, &ids, sent);
    for id in &ids {
        assert_ne!(a.home(id).await, "node-b");
    }
    // The order held because the sender's region drained its route to b.
    let stats = a.region.stats();
    assert!(stats.drains > 0, "{stats:?}");
    assert_eq!(stats.drain_timeouts, 0, "{stats:?}");
    a.stop().await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_s_messages_keep_their_order_while_rebalancing_moves_their_shard() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let seen: Seen = Arc::default();
    // b owns every shard first; then a and c join and rebalancing moves
    // most of them away from b while a streams to b's entities.
    let b = Member::start(&server, "node-b", &seen, true).await;
    let ids = homed_on(&b, "node-b", 6).await;
    for i in 0.. {
        if b.region.stats().shards == 12 {
            break;
        }
        b.home(&format!("t-{i}")).await;
    }
    let a = Member::start(&server, "node-a", &seen, true).await;
    hear_each_other(&[&a, &b]).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream(&a, ids.clone(), stop.clone());
    let c = Member::start(&server, "node-c", &seen, true).await;
    hear_each_other(&[&a, &b, &c]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while ![&a, &c].iter().all(|m| m.region.stats().shards >= 3) {
        assert!(Instant::now() < deadline, "rebalancing did not move shards");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = sender.await.unwrap();
    drained(&a, &ids, &seen, sent).await;
    check_order(&seen, &ids, sent);
    let stats = a.region.stats();
    assert!(stats.drains > 0, "{stats:?}");
    assert_eq!(stats.drain_timeouts, 0, "{stats:?}");
    for m in [a, b, c] {
        m.stop().await;
    }
}

//! Sharded persistent entities through `ShardRegion::start_persistent`, on
//! a nats-server of the test's own:
//!
//! * on a node-local journal (`LocalJournal`) the region refuses to start,
//!   with an error that names the fix, and nothing of it runs;
//! * on the JetStream journal an entity keeps its state when its shard
//!   moves to another node (its node leaves), and writes there with the
//!   new shard's token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, ReplyTo};
use troupe_cluster::persistence::{
    Effect, JetStreamJournal, Journal, JournalScope, LocalJournal, PersistentActor,
    PersistentContext, PersistentSettings,
};
use troupe_cluster::sharding::{ShardRegion, ShardingError, ShardingSettings};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

const WAIT: Duration = Duration::from_secs(10);

#[derive(Serialize, Deserialize)]
enum Seats {
    /// Books a seat: `false` if it was sold already.
    Book(u32, ReplyTo<bool>),
    /// The seats sold, and the token of the activation that answers.
    Sold(ReplyTo<(Vec<u32>, u64)>),
}

impl RemoteMessage for Seats {
    const TAG: &'static str = "troupe-cluster.test.Seats";
}

struct Show {
    id: String,
    token: u64,
}

impl PersistentActor for Show {
    type Command = Seats;
    type Event = u32;
    type State = Vec<u32>;

    fn persistence_id(&self) -> String {
        format!("show-{}", self.id)
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        sold: &Vec<u32>,
        cmd: Seats,
    ) -> Effect<Self> {
        match cmd {
            Seats::Book(seat, reply) if sold.contains(&seat) => Effect::reply(reply, false),
            Seats::Book(seat, reply) => Effect::persist(seat).then_reply(reply, |_| true),
            Seats::Sold(reply) => Effect::reply(reply, (sold.clone(), self.token)),
        }
    }

    fn apply(sold: &mut Vec<u32>, seat: &u32) {
        sold.push(*seat);
    }
}

async fn node(server: &NatsServer, name: &str) -> (ActorSystem, Arc<Node>) {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let mut config = RemoteConfig::new(server.url(), name);
    config.heartbeat_interval = Duration::from_millis(200);
    config.heartbeat_timeout = Duration::from_secs(5);
    let node = Arc::new(Node::start(&system, config).await.unwrap());
    (system, node)
}

fn settings() -> ShardingSettings {
    let mut settings = ShardingSettings::new("show");
    settings.shards = 10;
    settings.rebalance_interval = None;
    settings
}

async fn start(
    node: &Arc<Node>,
    system: &ActorSystem,
    journal: Arc<dyn Journal>,
) -> Result<ShardRegion<Seats>, ShardingError> {
    ShardRegion::start_persistent(
        node.clone(),
        system,
        settings(),
        journal,
        PersistentSettings::default(),
        |entity| Show {
            id: entity.id.clone(),
            token: entity.token,
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_entities_on_a_node_local_journal_are_refused_at_region_start() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let (system, node) = node(&server, "node-a").await;
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Journal> = Arc::new(LocalJournal::open(dir.path()).unwrap());
    match start(&node, &system, local).await {
        Err(ShardingError::JournalNotShared { type_name, scope }) => {
            assert_eq!(type_name, "show");
            assert!(matches!(scope, JournalScope::Node(_)), "{scope:?}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(region) => panic!(
            "a region of persistent entities started on a node-local journal: {:?}",
            region.stats()
        ),
    }
    // The message says what to do instead.
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Journal> = Arc::new(LocalJournal::open(dir.path()).unwrap());
    let error = start(&node, &system, local)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("JetStreamJournal") && error.contains("JournalScope::Shared"),
        "{error}"
    );
    // Nothing was published: a region of the type starts on a shared
    // journal on the same node.
    let shared: Arc<dyn Journal> = Arc::new(
        JetStreamJournal::open(node.nats_client(), "show", 1)
            .await
            .unwrap(),
    );
    let region = start(&node, &system, shared).await.unwrap();
    region.leave().await;
    node.shutdown().await;
    system.shutdown();
    system.await_termination().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_entity_keeps_its_state_when_its_shard_moves() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let (system_a, a) = node(&server, "node-a").await;
    let journal_a: Arc<dyn Journal> = Arc::new(
        JetStreamJournal::open(a.nats_client(), "show", 1)
            .await
            .unwrap(),
    );
    // Node a alone: every shard is a's.
    let region_a = start(&a, &system_a, journal_a).await.unwrap();
    let shows: Vec<String> = (0..6).map(|i| format!("s{i}")).collect();
    for (i, show) in shows.iter().enumerate() {
        for seat in 0..=i as u32 {
            let booked = region_a
                .entity_ref(show.as_str())
                .ask(|r| Seats::Book(seat, r), WAIT)
                .await;
            assert_eq!(booked, Ok(true), "{show} seat {seat}");
        }
    }
    let before: Vec<(Vec<u32>, u64)> = {
        let mut all = Vec::new();
        for show in &shows {
            all.push(
                region_a
                    .entity_ref(show.as_str())
                    .ask(Seats::Sold, WAIT)
                    .await
                    .unwrap(),
            );
        }
        all
    };
    let (system_b, b) = node(&server, "node-b").await;
    let journal_b: Arc<dyn Journal> = Arc::new(
        JetStreamJournal::open(b.nats_client(), "show", 1)
            .await
            .unwrap(),
    );
    let region_b = start(&b, &system_b, journal_b).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while a.members().len() < 2 || b.members().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the nodes did not hear each other"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // a leaves: its shards go to b, where the shows recover.
    region_a.leave().await;
    for (show, (sold, token)) in shows.iter().zip(&before) {
        let (now, new_token) = region_b
            .entity_ref(show.as_str())
            .ask(Seats::Sold, WAIT)
            .await
            .unwrap();
        assert_eq!(&now, sold, "{show} recovered on node-b");
        assert!(
            new_token > *token,
            "{show}: token {new_token} after {token}"
        );
        // A seat sold on a is still sold; a new one is written with b's token.
        let again = region_b
            .entity_ref(show.as_str())
            .ask(|r| Seats::Book(0, r), WAIT)
            .await;
        assert_eq!(again, Ok(false), "{show}: seat 0 sold twice");
        let new = region_b
            .entity_ref(show.as_str())
            .ask(|r| Seats::Book(100, r), WAIT)
            .await;
        assert_eq!(new, Ok(true));
    }
    assert_eq!(region_b.stats().refused, 0);
    region_b.leave().await;
    for (node, system) in [(a, system_a), (b, system_b)] {
        node.shutdown().await;
        system.shutdown();
        system.await_termination().unwrap();
    }
}

//! Entity ids a sharded region refuses, on a nats-server of the test's own
//! at its default limits, with persistent entities on the JetStream
//! journal (whose subject carries the id):
//!
//! * ids over `MAX_ID_BYTES` (4,097 and 256 bytes) are refused where they
//!   enter, an ask with an answer, counted, and never sent on: the nodes'
//!   connections stay up and the other entities answer;
//! * ids the type's validator refuses (100 junk ids) are answered with
//!   the refusal and leave nothing in the journal's stream, and a sender
//!   without the validator is refused by the owner before activation.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, AskError, Props, ReplyTo};
use troupe_cluster::persistence::{
    Effect, JetStreamJournal, Journal, Persistent, PersistentActor, PersistentContext,
    PersistentSettings,
};
use troupe_cluster::sharding::{RegionStats, ShardRegion, ShardingSettings};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

const WAIT: Duration = Duration::from_secs(10);

#[derive(Serialize, Deserialize)]
enum Booking {
    /// Books a seat; answers how many are booked.
    Book(u32, ReplyTo<usize>),
}

impl RemoteMessage for Booking {
    const TAG: &'static str = "troupe-cluster.test.Booking";
}

/// A show: its persistence id is its entity id, as a user would write it.
struct Show {
    id: String,
}

impl PersistentActor for Show {
    type Command = Booking;
    type Event = u32;
    type State = Vec<u32>;

    fn persistence_id(&self) -> String {
        self.id.clone()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        _seats: &Vec<u32>,
        Booking::Book(seat, reply): Booking,
    ) -> Effect<Self> {
        Effect::persist(seat).then_reply(reply, Vec::len)
    }

    fn apply(seats: &mut Vec<u32>, seat: &u32) {
        seats.push(*seat);
    }
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    region: ShardRegion<Booking>,
}

impl Member {
    async fn node(server: &NatsServer, name: &str) -> (ActorSystem, Arc<Node>) {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let mut config = RemoteConfig::new(server.url(), name);
        config.heartbeat_interval = Duration::from_millis(200);
        config.heartbeat_timeout = Duration::from_secs(5);
        let node = Arc::new(Node::start(&system, config).await.unwrap());
        (system, node)
    }

    /// A node whose region runs shows through the plain `start`, the way
    /// persistent entities were sharded before `start_persistent`.
    async fn plain(server: &NatsServer, name: &str, type_name: &str) -> Member {
        let (system, node) = Self::node(server, name).await;
        let journal: Arc<dyn Journal> = Arc::new(
            JetStreamJournal::open(node.nats_client(), type_name, 1)
                .await
                .unwrap(),
        );
        let region =
            ShardRegion::start(node.clone(), &system, settings(type_name), move |entity| {
                let (id, journal, token) = (entity.id.clone(), journal.clone(), entity.token);
                Props::new(move || {
                    Persistent::new(Show { id: id.clone() }, journal.clone()).fencing_token(token)
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

    /// A node whose region runs shows with `start_persistent`.
    async fn persistent(server: &NatsServer, name: &str, settings: ShardingSettings) -> Member {
        let (system, node) = Self::node(server, name).await;
        let journal: Arc<dyn Journal> = Arc::new(
            JetStreamJournal::open(node.nats_client(), &settings.type_name, 1)
                .await
                .unwrap(),
        );
        let region = ShardRegion::start_persistent(
            node.clone(),
            &system,
            settings,
            journal,
            PersistentSettings::default(),
            |entity| Show {
                id: entity.id.clone(),
            },
        )
        .await
        .unwrap();
        Member {
            system,
            node,
            region,
        }
    }

    async fn book(&self, id: &str, seat: u32) -> Result<usize, AskError> {
        self.region
            .entity_ref(id)
            .ask(|r| Booking::Book(seat, r), WAIT)
            .await
    }

    /// Times the node's NATS connection was made: 1 unless it was dropped.
    fn connects(&self) -> u64 {
        self.node
            .nats_client()
            .statistics()
            .connects
            .load(Ordering::Relaxed)
    }

    async fn stop(self) {
        self.region.leave().await;
        self.node.shutdown().await;
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

fn settings(type_name: &str) -> ShardingSettings {
    let mut settings = ShardingSettings::new(type_name);
    settings.shards = 10;
    settings.rebalance_interval = None;
    settings
}

async fn hear_each_other(members: &[&Member]) {
    let nodes: Vec<&Node> = members.iter().map(|m| &*m.node).collect();
    common::hear_each_other(&nodes).await;
}

/// How many records the journal stream of `type_name` holds, in all.
async fn records(node: &Node, type_name: &str) -> u64 {
    let js = async_nats::jetstream::new(node.nats_client());
    let mut stream = js
        .get_stream(format!("troupe-journal-{type_name}"))
        .await
        .unwrap();
    stream.info().await.unwrap().state.messages
}

fn stats(m: &Member) -> RegionStats {
    m.region.stats()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_over_the_limit_are_refused_where_they_enter_and_no_connection_drops() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let a = Member::plain(&server, "node-a", "long").await;
    let b = Member::plain(&server, "node-b", "long").await;
    hear_each_other(&[&a, &b]).await;
    // Entities on both nodes, through both.
    for i in 0..10 {
        assert_eq!(a.book(&format!("show-{i}"), 1).await, Ok(1));
    }

    for bytes in [4_097, 256] {
        let id = "x".repeat(bytes);
        let sent = Instant::now();
        let answer = a.book(&id, 1).await;
        match &answer {
            Err(AskError::Refused { reason, .. }) => assert!(
                reason.contains(&format!("{bytes} bytes")) && reason.contains("255"),
                "{reason}"
            ),
            other => panic!(
                "an id of {bytes} bytes: expected the refusal, got {other:?} after {:?} \
                 (node-a's connection made {} times, node-b's {})",
                sent.elapsed(),
                a.connects(),
                b.connects()
            ),
        }
        // A tell is refused the same way (and counted), a reply handle in
        // it answered.
        let (reply, answer) = ReplyTo::pair(&a.system, a.region.entity_ref(&id).id(), WAIT);
        a.region.tell(id.clone(), Booking::Book(2, reply));
        assert!(
            matches!(answer.await, Err(AskError::Refused { .. })),
            "a tell to an id of {bytes} bytes"
        );
    }
    assert_eq!(stats(&a).refused, 4, "{:?}", stats(&a));
    // Nothing of them reached an owner: no activation anywhere.
    assert_eq!(stats(&a).started + stats(&b).started, 10);
    // Both connections are the first ones, and every other entity answers.
    assert_eq!((a.connects(), b.connects()), (1, 1));
    for i in 0..10 {
        assert_eq!(b.book(&format!("show-{i}"), 2).await, Ok(2));
    }
    assert_eq!(
        records(&a.node, "long").await,
        30,
        "10 fences and 20 events"
    );
    b.stop().await;
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_ids_are_refused_with_an_answer_and_never_reach_the_journal() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let shows_only = settings("shows").validate(|id| match id.strip_prefix("show-") {
        Some(n) if n.parse::<u32>().is_ok() => Ok(()),
        _ => Err(format!("{id:?} is not show-<number>")),
    });
    let a = Member::persistent(&server, "node-a", shows_only.clone()).await;
    let b = Member::persistent(&server, "node-b", shows_only).await;
    hear_each_other(&[&a, &b]).await;

    let (all, mut slowest) = (Instant::now(), Duration::ZERO);
    for i in 0..100 {
        let junk = format!("junk-{i}");
        let sent = Instant::now();
        match a.book(&junk, 1).await {
            Err(AskError::Refused { reason, .. }) => {
                assert!(reason.contains("is not show-<number>"), "{reason}")
            }
            other => panic!("{junk}: got {other:?} after {:?}", sent.elapsed()),
        }
        slowest = slowest.max(sent.elapsed());
    }
    // A figure, not an assertion.
    println!(
        "100 junk ids refused in {:?}, the slowest answer after {slowest:?}",
        all.elapsed()
    );
    assert_eq!(stats(&a).refused, 100);
    assert_eq!(stats(&a).started + stats(&b).started, 0);
    // Not one fence record, not one event: the stream is empty.
    assert_eq!(records(&a.node, "shows").await, 0);

    // A sender that checks nothing (a proxy without the validator, an
    // older version): the owner refuses before starting anything, and the
    // ask, which crossed the network, is answered at once.
    let (system, node) = Member::node(&server, "client").await;
    let proxy = ShardRegion::<Booking>::start_proxy(node.clone(), &system, settings("shows"))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while node.members().len() < 3 {
        assert!(
            Instant::now() < deadline,
            "the client did not hear the nodes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..10 {
        let junk = format!("junk-{i}");
        let answer = proxy
            .entity_ref(junk.as_str())
            .ask(|r| Booking::Book(1, r), WAIT)
            .await;
        assert!(
            matches!(
                answer,
                Err(AskError::NoReply { .. } | AskError::Refused { .. })
            ),
            "{junk} through a proxy without the validator: {answer:?}"
        );
    }
    assert_eq!(proxy.stats().refused, 0);
    assert_eq!(stats(&a).refused + stats(&b).refused, 110);
    assert_eq!(stats(&a).started + stats(&b).started, 0);
    assert_eq!(records(&a.node, "shows").await, 0);

    // A good id is served, from either sender, and journalled.
    assert_eq!(a.book("show-1", 7).await, Ok(1));
    let answer = proxy
        .entity_ref("show-1")
        .ask(|r| Booking::Book(8, r), WAIT)
        .await;
    assert_eq!(answer, Ok(2));
    assert_eq!(records(&a.node, "shows").await, 3, "a fence and two events");

    proxy.leave().await;
    node.shutdown().await;
    system.shutdown();
    system.await_termination().unwrap();
    b.stop().await;
    a.stop().await;
}

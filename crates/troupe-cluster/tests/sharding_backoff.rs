//! A sharded persistent entity whose recovery keeps failing, on a
//! nats-server of the test's own at its default limits and the JetStream
//! journal: its id's subject holds a record whose event cannot be decoded,
//! so every activation writes its fence, fails its replay and stops.
//!
//! Under a stream of asks the shard restarts it after a backoff (not on
//! each message), so the fence records it writes stay within the attempts
//! `EntityBackoff::max_failures` allows; once it has failed that often
//! its asks are answered with `AskError::Refused` and the decode failure;
//! the other entities of the region answer throughout. An entity that
//! stops on purpose (its own stop effect, passivation) is started again
//! at once, with no backoff.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, AskError, ReplyTo};
use troupe_cluster::persistence::{
    Effect, JetStreamJournal, Journal, PersistentActor, PersistentContext, PersistentSettings,
};
use troupe_cluster::sharding::{EntityBackoff, ShardRegion, ShardingSettings};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

const WAIT: Duration = Duration::from_secs(10);

#[derive(Serialize, Deserialize)]
enum Booking {
    /// Books a seat; answers how many are booked.
    Book(u32, ReplyTo<usize>),
    /// Answers, then stops the entity (on purpose).
    Close(ReplyTo<usize>),
}

impl RemoteMessage for Booking {
    const TAG: &'static str = "troupe-cluster.test.BackoffBooking";
}

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
        seats: &Vec<u32>,
        command: Booking,
    ) -> Effect<Self> {
        match command {
            Booking::Book(seat, reply) => Effect::persist(seat).then_reply(reply, Vec::len),
            Booking::Close(reply) => Effect::reply(reply, seats.len()).and_stop(),
        }
    }

    fn apply(seats: &mut Vec<u32>, seat: &u32) {
        seats.push(*seat);
    }
}

/// The journal's record layout (`persistence/jetstream/write.rs`): the
/// writer's token, the id's last sequence number after it, the events.
#[derive(Serialize)]
struct Record {
    token: u64,
    last_seq_nr: u64,
    events: Vec<Vec<u8>>,
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    region: ShardRegion<Booking>,
}

impl Member {
    async fn start(server: &NatsServer, settings: ShardingSettings) -> Member {
        let system = ActorSystem::builder().threads(2).build().unwrap();
        let config = RemoteConfig::new(server.url(), "node-a");
        let node = Arc::new(Node::start(&system, config).await.unwrap());
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

    async fn stop(self) {
        self.region.leave().await;
        self.node.shutdown().await;
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

/// Stores, as if an earlier writer had, a record for `id` of `type_name`
/// whose one event is not a `u32` (a varint that never ends).
async fn damage(node: &Node, type_name: &str, id: &str) {
    let record = Record {
        token: 0,
        last_seq_nr: 1,
        events: vec![vec![0xFF; 11]],
    };
    let js = async_nats::jetstream::new(node.nats_client());
    js.publish(
        format!("troupe.journal.{type_name}.{id}"),
        postcard::to_allocvec(&record).unwrap().into(),
    )
    .await
    .unwrap()
    .await
    .unwrap();
}

/// How many records the journal of `type_name` holds for `id`.
async fn records_of(node: &Node, type_name: &str, id: &str) -> usize {
    let js = async_nats::jetstream::new(node.nats_client());
    let stream = js
        .get_stream(format!("troupe-journal-{type_name}"))
        .await
        .unwrap();
    let subject = format!("troupe.journal.{type_name}.{id}");
    let mut subjects = stream.info_with_subjects(&subject).await.unwrap();
    let mut n = 0;
    while let Some(entry) = subjects.next().await {
        let (s, count) = entry.unwrap();
        if s == subject {
            n += count;
        }
    }
    n
}

fn settings(type_name: &str, max_failures: u32) -> ShardingSettings {
    let mut settings = ShardingSettings::new(type_name);
    settings.shards = 10;
    settings.rebalance_interval = None;
    settings.entity_backoff = EntityBackoff {
        min: Duration::from_millis(20),
        // Long enough that no attempt follows the refusal during the test.
        max: Duration::from_secs(60),
        max_failures,
        max_held: 1_000,
    };
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_whose_recovery_keeps_failing_is_backed_off_and_its_asks_refused() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    const MAX_FAILURES: u32 = 3;
    let a = Member::start(&server, settings("shows", MAX_FAILURES)).await;
    damage(&a.node, "shows", "show-broken").await;
    for i in 0..5 {
        assert_eq!(a.book(&format!("show-{i}"), 1).await, Ok(1));
    }

    // A stream of asks, one after the other (each awaited), with a
    // healthy entity asked after every fifth.
    let started = Instant::now();
    let mut answers = Vec::new();
    for n in 0..300u32 {
        answers.push(a.book("show-broken", n).await);
        if n % 5 == 4 {
            let round = n / 5;
            let healthy = format!("show-{}", round % 5);
            assert_eq!(
                a.book(&healthy, round + 2).await,
                Ok(round as usize / 5 + 2),
                "{healthy}, round {round}"
            );
        }
    }
    let took = started.elapsed();

    let fences = records_of(&a.node, "shows", "show-broken").await - 1;
    let stats = a.region.stats();
    println!(
        "300 asks to an entity whose recovery fails, in {took:?}: {fences} fence records, \
         {stats:?}"
    );
    assert!(
        fences <= MAX_FAILURES as usize + 1,
        "{fences} fence records for one entity whose recovery kept failing \
         (at most {} attempts allowed); {stats:?}",
        MAX_FAILURES + 1
    );
    assert!(answers.iter().all(Result::is_err), "{answers:?}");
    let refused: Vec<&String> = answers
        .iter()
        .filter_map(|a| match a {
            Err(AskError::Refused { reason, .. }) => Some(reason),
            _ => None,
        })
        .collect();
    // All but those handed to the failing attempts.
    assert!(
        refused.len() >= 300 - MAX_FAILURES as usize,
        "{} refused: {answers:?}",
        refused.len()
    );
    for reason in &refused {
        assert!(
            reason.contains("show-broken")
                && reason.contains(&format!("last {MAX_FAILURES} activations failed"))
                && reason.contains("could not be decoded"),
            "{reason}"
        );
    }
    assert_eq!(stats.failed_activations, MAX_FAILURES as u64, "{stats:?}");
    assert_eq!(stats.refused, refused.len() as u64, "{stats:?}");
    // The other entities kept their state and their single activation.
    for i in 0..5 {
        assert_eq!(a.book(&format!("show-{i}"), 99).await, Ok(14));
        assert_eq!(records_of(&a.node, "shows", &format!("show-{i}")).await, 15);
    }
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_that_stops_on_purpose_starts_again_at_once() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    // One failure would refuse: any counted here fails the test.
    let mut settings = settings("closing", 1);
    settings.passivate_after = Some(Duration::from_millis(100));
    let a = Member::start(&server, settings).await;
    for n in 1..=5usize {
        assert_eq!(a.book("show-1", n as u32).await, Ok(n));
        let closed = a
            .region
            .entity_ref("show-1")
            .ask(Booking::Close, WAIT)
            .await;
        assert_eq!(closed, Ok(n));
        // A message that reaches an entity between its stop and its end
        // is lost (as for any actor that stops): wait for its end.
        let deadline = Instant::now() + WAIT;
        while a.region.stats().entities > 0 {
            assert!(Instant::now() < deadline, "{:?}", a.region.stats());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    // Passivated while idle, then asked again.
    let deadline = Instant::now() + WAIT;
    assert_eq!(a.book("show-2", 1).await, Ok(1));
    while a.region.stats().passivated == 0 {
        assert!(Instant::now() < deadline, "{:?}", a.region.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(a.book("show-2", 2).await, Ok(2));
    let stats = a.region.stats();
    assert_eq!(stats.failed_activations, 0, "{stats:?}");
    assert_eq!(stats.refused, 0, "{stats:?}");
    a.stop().await;
}

//! The blocks together: a cluster singleton whose instance is a persistent
//! actor on the JetStream journal, fenced by the lease revision, started
//! with `Singleton::start_converting` (the persistent actor's own message
//! type, which carries the journal's acknowledgements, converts from the
//! command type, which is what crosses nodes). Two nodes
//! in this process, each with its own journal instance on one stream (as
//! two processes would have). The holder counts; it leaves; the successor
//! recovers the count from JetStream and goes on from it; and the first
//! node's journal, still open, can no longer append with the old token.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, Props, ReplyTo};
use troupe_cluster::persistence::{
    Effect, JetStreamJournal, Journal, PersistenceError, Persistent, PersistentActor,
    PersistentContext,
};
use troupe_cluster::singleton::{Singleton, SingletonSettings, SingletonStatus};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

const WAIT: Duration = Duration::from_secs(10);

/// What the singleton takes: add to the count, answer the new total and
/// the token of the instance that answered.
#[derive(Serialize, Deserialize)]
enum CounterMsg {
    Add(u64, ReplyTo<(u64, u64)>),
}

impl troupe_remote::RemoteMessage for CounterMsg {
    const TAG: &'static str = "troupe-cluster.test.Counter";
}

/// The persistent part: its state is the total.
struct Counter {
    token: u64,
}

#[derive(Serialize, Deserialize)]
struct Added(u64);

impl PersistentActor for Counter {
    type Command = CounterMsg;
    type Event = Added;
    type State = u64;

    fn persistence_id(&self) -> String {
        "the-counter".into()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        _state: &u64,
        CounterMsg::Add(n, reply): CounterMsg,
    ) -> Effect<Self> {
        let token = self.token;
        Effect::persist(Added(n)).then_reply(reply, move |total| (*total, token))
    }

    fn apply(total: &mut u64, Added(n): &Added) {
        *total += n;
    }
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    journal: Arc<dyn Journal>,
    singleton: Singleton<CounterMsg>,
}

async fn member(server: &NatsServer, name: &str) -> Member {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let mut config = RemoteConfig::new(server.url(), name);
    // Handovers here are graceful (leave, then release): no test step
    // waits on the timeout, so a generous one keeps a busy test machine
    // from declaring a live holder down.
    config.heartbeat_interval = Duration::from_millis(200);
    config.heartbeat_timeout = Duration::from_secs(5);
    let node = Arc::new(Node::start(&system, config).await.unwrap());
    let journal: Arc<dyn Journal> = Arc::new(
        JetStreamJournal::open(node.nats_client(), "counters", 1)
            .await
            .unwrap(),
    );
    let shared = journal.clone();
    let singleton = Singleton::start_converting(
        node.clone(),
        &system,
        SingletonSettings::new("counter"),
        move |token| {
            let journal = shared.clone();
            // The lease revision is the fencing token: an instance of a
            // former holder cannot append once this one has.
            Props::new(move || {
                Persistent::new(Counter { token }, journal.clone()).fencing_token(token)
            })
        },
    )
    .await
    .unwrap();
    Member {
        system,
        node,
        journal,
        singleton,
    }
}

async fn add(m: &Member, n: u64) -> (u64, u64) {
    m.singleton
        .proxy()
        .ask(|r| CounterMsg::Add(n, r), WAIT)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_singleton_moves_with_its_state_and_fences_its_past() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let a = member(&server, "counter-a").await;
    let mut holding = a.singleton.status_changes();
    holding
        .wait_for(|s| matches!(s, SingletonStatus::Holding { .. }))
        .await
        .unwrap();
    let b = member(&server, "counter-b").await;
    let mut following = b.singleton.status_changes();
    following
        .wait_for(|s| matches!(s, SingletonStatus::Following { .. }))
        .await
        .unwrap();

    // Through either node's proxy, one count.
    let mut total = 0;
    for n in 1..=5 {
        total += n;
        let via = if n % 2 == 0 { &a } else { &b };
        let (now, _) = add(via, n).await;
        assert_eq!(now, total);
    }
    let (_, first_token) = add(&a, 0).await;

    // The holder leaves; the other node takes over and recovers the count
    // from the journal, with a larger token.
    let (a_journal, a_system, a_node) = (a.journal.clone(), a.system.clone(), a.node.clone());
    a.singleton.leave().await;
    let mut taken = b.singleton.status_changes();
    taken
        .wait_for(|s| matches!(s, SingletonStatus::Holding { .. }))
        .await
        .unwrap();
    let (now, second_token) = add(&b, 10).await;
    assert_eq!(now, total + 10, "the successor recovered the count");
    assert!(
        second_token > first_token,
        "{second_token} after {first_token}"
    );

    // The first node's journal is still open: an append with the old
    // token is refused by the server (the successor's fence is newer).
    let (tx, rx) = std::sync::mpsc::channel();
    a_journal.append(
        "the-counter",
        first_token,
        7,
        vec![postcard::to_allocvec(&Added(1000)).unwrap()],
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    match rx.recv_timeout(WAIT).unwrap() {
        Err(PersistenceError::Fenced { .. }) => {}
        other => panic!("expected Fenced, got {other:?}"),
    }
    let (now, _) = add(&b, 0).await;
    assert_eq!(now, total + 10, "nothing of the refused append counts");

    b.singleton.leave().await;
    for (node, system) in [(a_node, a_system), (b.node, b.system)] {
        node.shutdown().await;
        system.shutdown();
        system.await_termination().unwrap();
    }
}

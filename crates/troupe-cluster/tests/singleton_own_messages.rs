//! A singleton whose instance has messages of its own: its timer's tick is
//! a variant of the instance's message type, not of the remote protocol,
//! has no serde and no tag, and never crosses nodes
//! (`Singleton::start_converting`). Two nodes in this process on a
//! nats-server of the test's own: the instance ticks on its timer, both
//! proxies ask it how often across nodes, and after the holder leaves
//! the successor's instance ticks on its own timer.

use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
use troupe_cluster::singleton::{Singleton, SingletonSettings, SingletonStatus};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

/// The protocol other nodes send: how many ticks, and the answering
/// instance's token.
#[derive(serde::Serialize, serde::Deserialize)]
enum Beats {
    Count(ReplyTo<(u64, u64)>),
}

impl troupe_remote::RemoteMessage for Beats {
    const TAG: &'static str = "troupe-cluster.test.Beats";
}

/// What the instance handles. `Tick` is its own: no serde, no tag.
enum BeaterMsg {
    Remote(Beats),
    Tick,
}

impl From<Beats> for BeaterMsg {
    fn from(m: Beats) -> Self {
        BeaterMsg::Remote(m)
    }
}

const EVERY: Duration = Duration::from_millis(10);

struct Beater {
    token: u64,
    ticks: u64,
}

impl Actor for Beater {
    type Msg = BeaterMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.timers().start_single("beat", EVERY, BeaterMsg::Tick);
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: BeaterMsg) {
        match msg {
            BeaterMsg::Tick => {
                self.ticks += 1;
                ctx.timers().start_single("beat", EVERY, BeaterMsg::Tick);
            }
            BeaterMsg::Remote(Beats::Count(reply)) => {
                reply.reply((self.ticks, self.token));
            }
        }
    }
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    singleton: Singleton<Beats>,
}

async fn member(server: &NatsServer, name: &str) -> Member {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let mut config = RemoteConfig::new(server.url(), name);
    // Handovers here are graceful (leave, then release): a generous
    // timeout keeps a busy test machine from declaring a live holder down.
    config.heartbeat_interval = Duration::from_millis(200);
    config.heartbeat_timeout = Duration::from_secs(5);
    let node = Arc::new(Node::start(&system, config).await.unwrap());
    let singleton = Singleton::start_converting(
        node.clone(),
        &system,
        SingletonSettings::new("beater"),
        |token| Props::new(move || Beater { token, ticks: 0 }),
    )
    .await
    .unwrap();
    Member {
        system,
        node,
        singleton,
    }
}

async fn wait_for(m: &Member, wanted: impl Fn(&SingletonStatus) -> bool) -> SingletonStatus {
    let mut changes = m.singleton.status_changes();
    let status = tokio::time::timeout(Duration::from_secs(30), changes.wait_for(wanted))
        .await
        .expect("the status within 30 s")
        .unwrap()
        .clone();
    status
}

/// Asks through `m`'s proxy until the instance has ticked at least
/// `ticks` times (its timer runs on its own; each ask is a round trip
/// across nodes when `m` follows); returns its count and token.
async fn ticked(m: &Member, ticks: u64) -> (u64, u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (n, token) = m
            .singleton
            .proxy()
            .ask(Beats::Count, Duration::from_secs(10))
            .await
            .unwrap();
        if n >= ticks {
            return (n, token);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} ticks after 30 s, want {ticks}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_ticks_on_a_timer_of_its_own_that_never_crosses_nodes() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let a = member(&server, "beat-a").await;
    let SingletonStatus::Holding { token: first } =
        wait_for(&a, |s| matches!(s, SingletonStatus::Holding { .. })).await
    else {
        unreachable!()
    };
    let b = member(&server, "beat-b").await;
    wait_for(&b, |s| matches!(s, SingletonStatus::Following { .. })).await;

    // The timer runs in the instance on a; both proxies reach it.
    let (on_a, token) = ticked(&a, 3).await;
    assert_eq!(token, first);
    let (on_b, token) = ticked(&b, on_a + 1).await;
    assert_eq!(token, first, "b's proxy reached the same instance");
    assert!(on_b > on_a);

    // The holder leaves (its instance and the front before it stop, then
    // the lease is released): b's instance starts with its own timer.
    let (a_system, a_node) = (a.system.clone(), a.node.clone());
    a.singleton.leave().await;
    let SingletonStatus::Holding { token: second } =
        wait_for(&b, |s| matches!(s, SingletonStatus::Holding { .. })).await
    else {
        unreachable!()
    };
    assert!(second > first, "{second} after {first}");
    let (_, token) = ticked(&b, 3).await;
    assert_eq!(token, second);

    b.singleton.leave().await;
    for (node, system) in [(a_node, a_system), (b.node, b.system)] {
        node.shutdown().await;
        system.shutdown();
        system.await_termination().unwrap();
    }
}

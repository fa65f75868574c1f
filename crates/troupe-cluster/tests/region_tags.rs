//! A proxy region started with another message type than the regions
//! that host the entities (`ShardRegion::<Other>::start_proxy` where the
//! hosts run `ShardRegion::<M>::start` under the same type name): the
//! hosting region's node refuses every message of the wrong tag back to
//! the proxy's node, which counts it as a dead letter and fails an ask in
//! it at once with an error naming both tags, instead of letting the ask
//! wait for its timeout.

use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, AskError, Context, Props, ReplyTo};
use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
use troupe_remote::testing::NatsServer;
use troupe_remote::{DeadLetterReason, Node, RemoteConfig, RemoteMessage};

/// Long enough that an ask which fails by timing out is told apart from
/// one refused at once (the test looks at the error, never the clock).
const ASK: Duration = Duration::from_secs(20);

/// What the hosting regions' entities take.
#[derive(serde::Serialize, serde::Deserialize)]
enum Tally {
    Add(ReplyTo<u64>),
}

impl RemoteMessage for Tally {
    const TAG: &'static str = "troupe-cluster.test.region-tags.Tally";
}

/// What the misconfigured proxy sends.
#[derive(serde::Serialize, serde::Deserialize)]
enum Other {
    Add(ReplyTo<u64>),
}

impl RemoteMessage for Other {
    const TAG: &'static str = "troupe-cluster.test.region-tags.Other";
}

struct Counter(u64);

impl Actor for Counter {
    type Msg = Tally;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Tally::Add(reply): Tally) {
        self.0 += 1;
        reply.reply(self.0);
    }
}

fn settings() -> ShardingSettings {
    let mut settings = ShardingSettings::new("tally");
    settings.shards = 4;
    settings.rebalance_interval = None;
    settings
}

async fn start_node(server: &NatsServer, name: &str) -> (ActorSystem, Arc<Node>) {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let node = Node::start(&system, RemoteConfig::new(server.url(), name))
        .await
        .unwrap();
    (system, Arc::new(node))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_region_of_another_message_type_is_refused_at_once() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let (host_system, host_node) = start_node(&server, "host").await;
    let host = ShardRegion::<Tally>::start(host_node.clone(), &host_system, settings(), |_| {
        Props::new(|| Counter(0))
    })
    .await
    .unwrap();
    // The host owns the entity's shard and answers.
    assert_eq!(host.entity_ref("e-1").ask(Tally::Add, ASK).await, Ok(1));

    let (proxy_system, proxy_node) = start_node(&server, "proxy").await;
    let letters = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = letters.clone();
    proxy_node.on_dead_letter(move |letter| seen.lock().unwrap().push(letter.reason));
    let proxy = ShardRegion::<Other>::start_proxy(proxy_node.clone(), &proxy_system, settings())
        .await
        .unwrap();

    let answer = proxy.entity_ref("e-1").ask(Other::Add, ASK).await;
    match answer {
        Err(AskError::Refused { reason, .. }) => {
            for word in ["tag", Tally::TAG, Other::TAG] {
                assert!(reason.contains(word), "{word:?} not in {reason:?}");
            }
        }
        other => panic!("not refused at once: {other:?}"),
    }
    assert!(
        letters
            .lock()
            .unwrap()
            .contains(&DeadLetterReason::UnknownTag),
        "the proxy's node counted no dead letter: {:?}",
        letters.lock().unwrap()
    );
    assert!(host_node.dead_letter_count(DeadLetterReason::UnknownTag) >= 1);
    // The entity never saw it.
    assert_eq!(host.entity_ref("e-1").ask(Tally::Add, ASK).await, Ok(2));

    proxy.leave().await;
    host.leave().await;
    proxy_node.shutdown().await;
    host_node.shutdown().await;
    for system in [proxy_system, host_system] {
        system.shutdown();
        system.await_termination().unwrap();
    }
}

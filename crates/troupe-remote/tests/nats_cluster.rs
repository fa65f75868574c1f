//! Three nats-servers joined as one NATS cluster on loopback (routes,
//! clustered JetStream), three nodes each attached to a different server
//! (given that server's URL only: the others are learned from it): two in
//! this process, one in a node process of its own that publishes the echo
//! actor. Lookup, tell, ask and membership work across servers; then that
//! process's server is killed: it fails over to another server by itself,
//! and lookup, messaging and membership work again. What was lost
//! meanwhile is at-most-once and counted where the nodes here could see it
//! (printed).

mod support;

use std::future::Future;
use std::time::{Duration, Instant};

use troupe_remote::testing::echo::EchoMsg;
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

use support::{finish, spawn_echo, stop, system};

const DEADLINE: Duration = Duration::from_secs(30);

/// Retries `attempt` (each one bounded by its own timeouts) until it gives
/// `Some`, or fails after the deadline.
async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut attempt: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(value) = attempt().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {DEADLINE:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until each node here sees all three nodes.
async fn all_see_each_other(nodes: &[Node]) {
    for node in nodes {
        eventually("membership", || async {
            (node.members().len() == 3).then_some(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_on_different_servers_survive_the_loss_of_one_server() {
    let mut servers = NatsServer::start_cluster(3).unwrap_or_else(|e| panic!("{e}"));
    let systems = [system(), system()];
    let mut nodes = Vec::new();
    for (i, sys) in systems.iter().enumerate() {
        let config = RemoteConfig::new(servers[i].url(), format!("node-{i}"));
        nodes.push(Node::start(sys, config).await.unwrap());
    }
    // Node 2, in its own process on server 2, publishes the echo actor;
    // nodes 0 and 1 (on the other servers) find it and talk.
    let child = spawn_echo(&servers[2].url(), "node-2", "echo");
    all_see_each_other(&nodes).await;
    for (i, node) in nodes.iter().enumerate() {
        let remote = eventually("lookup across servers", || async {
            node.lookup::<EchoMsg>("echo").await.ok()
        })
        .await;
        remote.tell(EchoMsg::Say(format!("from node-{i}")));
        let answer = remote
            .ask(
                |r| EchoMsg::Echo(format!("node-{i}"), r),
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(answer, format!("node-{i}"));
    }
    let remote = nodes[0].lookup::<EchoMsg>("echo").await.unwrap();

    // Node 2's server dies under it.
    servers[2].stop();
    let killed = Instant::now();
    // Node 2 reconnects to another server and subscribes again: asks from
    // node 0 are answered again, lookups find it again.
    let answer = eventually("an answer after the failover", || async {
        remote
            .ask(
                |r| EchoMsg::Echo("again".into(), r),
                Duration::from_millis(500),
            )
            .await
            .ok()
    })
    .await;
    assert_eq!(answer, "again");
    let recovered = killed.elapsed();
    eventually("lookup after the failover", || async {
        nodes[1].lookup::<EchoMsg>("echo").await.ok()
    })
    .await;
    // Order holds again for what is sent afterwards.
    let after: Vec<String> = (0..20).map(|i| format!("after{i}")).collect();
    for text in &after {
        remote.tell(EchoMsg::Say(text.clone()));
    }
    let history = remote
        .ask(EchoMsg::History, Duration::from_secs(5))
        .await
        .unwrap();
    let tail: Vec<String> = history
        .iter()
        .filter(|s| s.starts_with("after"))
        .cloned()
        .collect();
    assert_eq!(tail, after);
    all_see_each_other(&nodes).await;
    println!(
        "answered again {recovered:?} after the server was killed; dead letters per node: {:?}",
        nodes
            .iter()
            .map(Node::dead_letters_total)
            .collect::<Vec<_>>()
    );

    finish(child);
    for node in &nodes {
        node.shutdown().await;
    }
    for sys in systems {
        stop(sys);
    }
}

//! Membership across an outage of the NATS server itself: killed with
//! SIGKILL and started again on the same port, longer than the heartbeat
//! timeout. Every node's own connection is down then, so the others'
//! silence says nothing about them: no node is declared down for it, the
//! refs between the nodes stay alive, and heartbeats and messages resume
//! once the clients reconnect. A node that really died during the outage
//! is still declared down once the others are back.

mod support;

use std::time::{Duration, Instant};

use troupe::{ActorSystem, Props};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::testing::NatsServer;
use troupe_remote::{DeadLetterReason, DownReason, MemberEvent, Node, RemoteConfig};

use support::{await_member_event, server, spawn_echo, stop, system};

/// Heartbeats every 100 ms, a node silent for 500 ms is down: the outages
/// below are three times that.
async fn quick_node(system: &ActorSystem, server: &NatsServer, name: &str) -> Node {
    let mut config = RemoteConfig::new(server.url(), name);
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_millis(500);
    Node::start(system, config)
        .await
        .unwrap_or_else(|e| panic!("node {name}: {e}"))
}

/// Waits until `node` has every one of `names` as a member.
async fn until_members(node: &Node, names: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !names
        .iter()
        .all(|n| node.members().contains(&n.to_string()))
    {
        assert!(
            Instant::now() < deadline,
            "{} sees {:?}, not {names:?}",
            node.name(),
            node.members()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Asks `echo` with short asks (each waits on its own timeout) until one
/// is answered, within 30 s.
async fn until_answered(echo: &troupe::ActorRef<EchoMsg>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let probe = echo
            .ask(
                |r| EchoMsg::Echo("back?".into(), r),
                Duration::from_millis(500),
            )
            .await;
        match probe {
            Ok(answer) => return assert_eq!(answer, "back?"),
            Err(e) => assert!(
                Instant::now() < deadline,
                "messaging did not resume within 30 s of the server's restart: {e:?} \
                 (ref terminated: {})",
                echo.is_terminated()
            ),
        }
    }
}

/// Every `Down` among the events received so far.
fn downs(events: &mut tokio::sync::broadcast::Receiver<MemberEvent>) -> Vec<MemberEvent> {
    std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(e, MemberEvent::Down { .. }))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_outage_is_not_the_other_nodes_silence() {
    let mut server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = quick_node(&sys_a, &server, "a").await;
    let b = quick_node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    until_members(&a, &["a", "b"]).await;
    until_members(&b, &["a", "b"]).await;
    let (mut a_events, mut b_events) = (a.member_events(), b.member_events());

    server.stop();
    // The fault's own length: three heartbeat timeouts without a server.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.restart().unwrap_or_else(|e| panic!("{e}"));

    until_answered(&remote).await;
    assert!(!remote.is_terminated());
    // Heartbeats resume: over three more timeouts, nobody goes down.
    let quiet = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < quiet {
        assert_eq!(downs(&mut a_events), [], "a's view");
        assert_eq!(downs(&mut b_events), [], "b's view");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.members(), ["a", "b"]);
    assert_eq!(b.members(), ["a", "b"]);
    assert_eq!(b.dead_letter_count(DeadLetterReason::NodeDown), 0);
    until_answered(&remote).await;

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_dies_during_an_outage_is_still_declared_down() {
    let mut server = server();
    let sys_a = system();
    // The echo process beats every 500 ms (the defaults): a hears it
    // within a 2 s timeout.
    let mut config = RemoteConfig::new(server.url(), "a");
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_secs(2);
    let a = Node::start(&sys_a, config).await.unwrap();
    let mut c = spawn_echo(&server.url(), "c", "echo-c");
    until_members(&a, &["a", "c"]).await;
    let mut events = a.member_events();

    server.stop();
    c.kill().unwrap();
    c.wait().unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    server.restart().unwrap_or_else(|e| panic!("{e}"));

    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "c".into(),
            reason: DownReason::Silent,
        },
    )
    .await;
    assert_eq!(a.members(), ["a"]);
    a.shutdown().await;
    stop(sys_a);
}

/// A node whose server is gone for good (a Ctrl-C that reached the server
/// first, a host going down) leaves within its `shutdown_timeout`: one
/// deadline for the whole shutdown, not one per step and per published
/// name (five names once took tens of seconds, each waiting for the
/// server to confirm its unsubscribe and answer a probe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_server_is_gone_leaves_within_its_shutdown_timeout() {
    let mut server = server();
    let system = system();
    let mut config = RemoteConfig::new(server.url(), "a");
    config.shutdown_timeout = Duration::from_millis(500);
    let node = Node::start(&system, config).await.unwrap();
    for i in 0..5 {
        let echo = system.spawn(Props::new(Echo::default)).unwrap();
        node.publish(&format!("echo-{i}"), &echo).await.unwrap();
    }

    server.stop();
    let started = Instant::now();
    node.shutdown().await;
    // The deadline, and slack for a loaded machine: the steps each waiting
    // their own timeout would take at least ten times it.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "shutdown took {took:?}");
    // A second call does nothing, and the node refuses to publish.
    node.shutdown().await;
    let echo = system.spawn(Props::new(Echo::default)).unwrap();
    assert!(node.publish("late", &echo).await.is_err());
    stop(system);
}

//! Membership from heartbeats: nodes see each other come up, and see a
//! node that shuts down leave (in-process; a SIGKILLed node process going
//! silent is in `processes.rs`).

mod support;

use troupe_remote::{DownReason, MemberEvent};

use support::{await_member_event, node, server, stop, system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_see_each_other_up_and_see_one_leave() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let mut a_events = a.member_events();
    assert_eq!(a.members(), vec!["a".to_string()]);

    let b = node(&sys_b, &server, "b").await;
    let mut b_events = b.member_events();
    // b beats at once: a hears it.
    await_member_event(&mut a_events, MemberEvent::Up("b".into())).await;
    // b hears a at a's next beat, unless it already has.
    if !b.members().contains(&"a".to_string()) {
        await_member_event(&mut b_events, MemberEvent::Up("a".into())).await;
    }
    assert_eq!(a.members(), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(b.members(), vec!["a".to_string(), "b".to_string()]);

    b.shutdown().await;
    await_member_event(
        &mut a_events,
        MemberEvent::Down {
            node: "b".into(),
            reason: DownReason::Left,
        },
    )
    .await;
    assert_eq!(a.members(), vec!["a".to_string()]);
    a.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

/// A node found by a lookup before any of its heartbeats reached this one
/// is a member from then on, so its silence declares it down: a standby
/// that looked its primary up and waits for it to go down must not wait
/// for ever because the primary stopped before its first heartbeat here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_found_by_lookup_is_a_member_and_its_silence_declares_it_down() {
    use std::time::Duration;
    use troupe::Props;
    use troupe_remote::testing::echo::{Echo, EchoMsg};
    use troupe_remote::{Node, RemoteConfig};

    let server = server();
    let (sys_a, sys_b) = (system(), system());
    // a beats once as it starts, then not for a minute: b, started after,
    // hears none of its heartbeats within the test.
    let mut quiet = RemoteConfig::new(server.url(), "a");
    quiet.heartbeat_interval = Duration::from_secs(60);
    quiet.heartbeat_timeout = Duration::from_secs(600);
    let a = Node::start(&sys_a, quiet).await.unwrap();
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();

    let mut config = RemoteConfig::new(server.url(), "b");
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_millis(500);
    let b = Node::start(&sys_b, config).await.unwrap();
    let mut events = b.member_events();
    assert_eq!(b.members(), vec!["b".to_string()], "a's beat came before b");
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    assert_eq!(b.members(), vec!["a".to_string(), "b".to_string()]);
    await_member_event(&mut events, MemberEvent::Up("a".into())).await;
    // No heartbeat of a for 500 ms: down, and the ref with it.
    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "a".into(),
            reason: DownReason::Silent,
        },
    )
    .await;
    assert!(remote.is_terminated());
    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

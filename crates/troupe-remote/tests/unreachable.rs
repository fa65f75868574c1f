//! NATS goes away under a node: sends do not block; once the bounded
//! outbound buffer is full they are `Unreachable` dead letters, counted;
//! shutdown gives up after its deadline and counts what was still buffered.

mod support;

use std::time::Duration;

use troupe::Props;
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{DeadLetterReason, Node, RemoteConfig};

use support::{dead_letter_probe, server, stop, system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_without_a_server_become_unreachable_dead_letters() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let mut config = RemoteConfig::new(server.url(), "a");
    config.shutdown_timeout = Duration::from_millis(200);
    config.lookup_timeout = Duration::from_millis(200);
    let a = Node::start(&sys_a, config.clone()).await.unwrap();
    config.node_name = "b".into();
    config.outbound_buffer = 16;
    let b = Node::start(&sys_b, config).await.unwrap();
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    let probe = dead_letter_probe(&b);

    // Killed and reaped: its sockets are closed. The client stops taking
    // publishes while it reconnects; the writer task then waits, the buffer
    // fills, and sends fail fast. Each tell returns at once (it never
    // blocks), so this loop ends. (A send that fills the buffer before the
    // client has noticed the loss is `OutboundFull`: allowed, and counted.)
    drop(server);
    let mut sent = 0u64;
    while b.dead_letter_count(DeadLetterReason::Unreachable) == 0 {
        remote.tell(EchoMsg::Say("while down".into()));
        sent += 1;
        assert!(sent < 10_000_000, "no Unreachable after {sent} sends");
        if sent.is_multiple_of(1024) {
            tokio::task::yield_now().await;
        }
    }
    let reasons: Vec<DeadLetterReason> = std::iter::from_fn(|| probe.try_recv().ok()).collect();
    assert!(
        reasons.iter().all(|r| matches!(
            r,
            DeadLetterReason::Unreachable | DeadLetterReason::OutboundFull
        )),
        "{reasons:?}"
    );
    assert!(reasons.contains(&DeadLetterReason::Unreachable));
    // The client itself queues up to its capacity (2,048 commands) while
    // it reconnects; past that its publish waits and so does the writer.
    // Keep sending well past it, letting the writer run now and then.
    for i in 0..10_000u32 {
        remote.tell(EchoMsg::Say("still down".into()));
        if i.is_multiple_of(256) {
            tokio::task::yield_now().await;
        }
    }
    let unreachable = b.dead_letter_count(DeadLetterReason::Unreachable);
    assert!(unreachable > 10_000 - 2_048 - 16, "{unreachable}");

    // Shutdown gives up waiting for the server after its deadline; what was
    // still buffered is counted as NodeStopped, not dropped silently.
    let buffered = b.dead_letter_count(DeadLetterReason::NodeStopped);
    assert_eq!(buffered, 0);
    b.shutdown().await;
    let left = b.dead_letter_count(DeadLetterReason::NodeStopped);
    assert!((1..=17).contains(&left), "{left} frames left at shutdown");
    a.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

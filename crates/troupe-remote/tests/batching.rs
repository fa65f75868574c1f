//! The writer's batching, seen from outside: a burst of tells goes in a
//! few NATS messages, in order, and the batch statistics count what went
//! out; with lingering off, one-at-a-time asks go one frame a message.

mod support;

use std::time::Duration;

use troupe::Props;
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{Node, RemoteConfig};

use support::{node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

// One runtime thread: the burst is queued before the writer first runs,
// so how it is packed does not depend on thread timing.
#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_tells_goes_in_few_messages_in_order() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();

    let before = b.batch_stats();
    let sent: Vec<String> = (0..500).map(|i| format!("m{i}")).collect();
    for text in &sent {
        remote.tell(EchoMsg::Say(text.clone()));
    }
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, sent);
    let burst = b.batch_stats().since(&before);
    // 500 tells and the ask: about 20 bytes each, all in one 32 KiB
    // batch but for the first frame, which the writer may take alone.
    assert_eq!(burst.frames, 501, "{burst:?}");
    assert!(burst.messages() <= 2, "{burst:?}");
    assert_eq!(a.dead_letters_total() + b.dead_letters_total(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lingering_off_one_at_a_time_asks_go_alone() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let mut config = RemoteConfig::new(server.url(), "b");
    config.batch_linger = Duration::ZERO;
    let b = Node::start(&sys_b, config).await.unwrap();
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();

    let (asker, answerer) = (b.batch_stats(), a.batch_stats());
    for i in 0..50 {
        let text = format!("q{i}");
        let answer = remote
            .ask(|r| EchoMsg::Echo(text.clone(), r), ASK)
            .await
            .unwrap();
        assert_eq!(answer, text);
    }
    let (asks, answers) = (
        b.batch_stats().since(&asker),
        a.batch_stats().since(&answerer),
    );
    assert_eq!((asks.frames, asks.messages()), (50, 50), "{asks:?}");
    assert_eq!(answers.frames, 50, "{answers:?}");
    assert_eq!(asks.percentile(1.0), 1);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

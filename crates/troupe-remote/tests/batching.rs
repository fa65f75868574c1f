//! The writer's batching, seen from outside: a burst of tells goes in a
//! few NATS messages, in order, and the batch statistics count what went
//! out; one-at-a-time asks go one frame a message; and a frame held for
//! company gets the frames sent while it waits.

mod support;

use std::time::Duration;

use troupe::ActorRef;
use troupe::Props;
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{BatchStats, Node};

use support::{node, node_lingering, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

// One runtime thread: the burst is queued before the writer first runs,
// so how it is packed does not depend on thread timing. (Enough here:
// nothing in these tests blocks the runtime's thread.)
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
    // 500 tells and the ask: about 47 bytes each (23.5 KB), all in one
    // 32 KiB batch but for the first frame, which the writer may take
    // alone.
    assert_eq!(burst.frames, 501, "{burst:?}");
    assert!(burst.messages() <= 2, "{burst:?}");
    assert_eq!(a.dead_letters_total() + b.dead_letters_total(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_at_a_time_asks_are_counted_one_frame_a_message() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node_lingering(&sys_b, &server, "b", Duration::ZERO).await;
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

/// Yields until `node` has sent `frames` frames (10 s at most).
async fn until_sent(node: &Node, frames: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while node.batch_stats().frames < frames {
        assert!(std::time::Instant::now() < deadline, "not sent");
        tokio::task::yield_now().await;
    }
}

/// Through `node`: `a`, then `b`, and from another task once the writer
/// has taken `b`, `c` and `d`; returns how `b`, `c` and `d` went out.
async fn burst_behind(node: &Node, remote: &ActorRef<EchoMsg>) -> BatchStats {
    remote.tell(EchoMsg::Say("a".into()));
    until_sent(node, 1).await;
    let before = node.batch_stats();
    remote.tell(EchoMsg::Say("b".into()));
    let later = remote.clone();
    let others = tokio::spawn(async move {
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        later.tell(EchoMsg::Say("c".into()));
        later.tell(EchoMsg::Say("d".into()));
    });
    others.await.unwrap();
    until_sent(node, before.frames + 3).await;
    let burst = node.batch_stats().since(&before);
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, ["a", "b", "c", "d"]);
    burst
}

// One runtime thread, so the other task runs only while the writer, which
// took `b` first, lingers (or has already sent `b`).
#[tokio::test(flavor = "current_thread")]
async fn a_frame_held_for_company_takes_the_frames_sent_while_it_waits() {
    let server = server();
    let systems = [system(), system(), system()];
    let a = node(&systems[0], &server, "a").await;
    // Long enough that the other task always comes within it.
    let linger = Duration::from_millis(200);
    let lingering = node_lingering(&systems[1], &server, "lingering", linger).await;
    let eager = node_lingering(&systems[2], &server, "eager", Duration::ZERO).await;
    for (name, node) in [("echo-1", &lingering), ("echo-2", &eager)] {
        let echo = systems[0].spawn(Props::new(Echo::default)).unwrap();
        a.publish(name, &echo).await.unwrap();
        let remote = node.lookup::<EchoMsg>(name).await.unwrap();
        let burst = burst_behind(node, &remote).await;
        assert_eq!(burst.frames, 3, "{name}: {burst:?}");
        if name == "echo-1" {
            // `b` waited, and `c` and `d` joined it.
            assert_eq!(burst.messages(), 1, "{burst:?}");
        } else {
            // `b` went at once; `c` and `d`, queued together, went together.
            assert_eq!(burst.buckets[..2], [1, 1], "{burst:?}");
        }
    }

    for node in [a, lingering, eager] {
        node.shutdown().await;
    }
    for system in systems {
        stop(system);
    }
}

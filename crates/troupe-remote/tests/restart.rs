//! nats-server killed and restarted under two nodes: both clients reconnect
//! on their own, their subscriptions come back, messaging resumes, and
//! order holds again for what is sent afterwards. What was sent while the
//! server was down waits in the node's outbound buffer (the writer hands
//! nothing to the client while it is disconnected) and is delivered once
//! after the reconnect; the contract promises at most once, since a frame
//! handed to the client just before it noticed the loss can be lost.

mod support;

use std::time::{Duration, Instant};

use troupe::Props;
use troupe_remote::testing::echo::{Echo, EchoMsg};

use support::{node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messaging_resumes_after_a_server_restart() {
    let mut server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    remote.tell(EchoMsg::Say("before".into()));
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, vec!["before".to_string()]);

    server.stop();
    remote.tell(EchoMsg::Say("while down".into()));
    server.restart().unwrap_or_else(|e| panic!("{e}"));

    // The clients reconnect with their backoff and subscribe again; probe
    // with short asks until one is answered (each waits on its own
    // timeout, no sleeping), within a deadline.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut probes = 0;
    loop {
        probes += 1;
        let probe = remote
            .ask(
                |r| EchoMsg::Echo("back?".into(), r),
                Duration::from_millis(500),
            )
            .await;
        match probe {
            Ok(answer) => {
                assert_eq!(answer, "back?");
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "messaging did not resume: {e}"),
        }
    }

    let after: Vec<String> = (0..20).map(|i| format!("after{i}")).collect();
    for text in &after {
        remote.tell(EchoMsg::Say(text.clone()));
    }
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history.first().map(String::as_str), Some("before"));
    let tail: Vec<String> = history
        .iter()
        .filter(|s| s.starts_with("after"))
        .cloned()
        .collect();
    assert_eq!(tail, after);
    let while_down = history.iter().filter(|s| *s == "while down").count();
    assert!(while_down <= 1, "delivered {while_down} times");
    println!(
        "resumed after {probes} probe(s); the message sent while down was delivered \
         {while_down} time(s); dead letters on b: {}",
        b.dead_letters_total()
    );

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

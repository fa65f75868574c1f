//! Real OS processes: the example node process `troupe-remote-echo`
//! publishes an echo actor; this test process looks it up, tells and asks,
//! then closes the child's stdin and checks that it left cleanly. Another
//! child is killed with SIGKILL: its node is declared down (silent) within
//! the heartbeat timeout plus one second.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use troupe_remote::testing::echo::EchoMsg;
use troupe_remote::{DownReason, MemberEvent, Node, RemoteConfig};

use support::{await_member_event, node, server, stop, system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tell_and_ask_an_actor_in_another_process() {
    let server = server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe-remote-echo"))
        .args([server.url().as_str(), "proc-a", "echo-proc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the echo node process");
    // Its "ready" line says the name is published.
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let line = BufReader::new(stdout).lines().next();
        let _ = ready_tx.send(line.and_then(Result::ok));
    });
    let ready = ready_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the echo node did not report ready");
    assert_eq!(ready.as_deref(), Some("ready"));

    let sys = system();
    let here = node(&sys, &server, "test-process").await;
    let remote = here.lookup::<EchoMsg>("echo-proc").await.unwrap();
    for i in 0..50 {
        remote.tell(EchoMsg::Say(format!("p{i}")));
    }
    let history = remote
        .ask(EchoMsg::History, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        history,
        (0..50).map(|i| format!("p{i}")).collect::<Vec<_>>()
    );
    let answer = remote
        .ask(
            |r| EchoMsg::Echo("across processes".into(), r),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(answer, "across processes");
    assert_eq!(here.dead_letters_total(), 0);

    // Closing its stdin asks the child to leave; it must exit cleanly.
    drop(child.stdin.take());
    let (exit_tx, exit_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });
    let status = exit_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the echo node did not exit")
        .unwrap();
    assert!(status.success(), "{status}");

    here.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_node_process_is_declared_down() {
    let server = server();
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "watcher");
    config.heartbeat_timeout = Duration::from_millis(1500);
    let here = Node::start(&sys, config.clone()).await.unwrap();
    let mut events = here.member_events();

    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe-remote-echo"))
        .args([server.url().as_str(), "doomed", "echo-doomed"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the echo node process");
    if !here.members().contains(&"doomed".to_string()) {
        await_member_event(&mut events, MemberEvent::Up("doomed".into())).await;
    }

    child.kill().unwrap(); // SIGKILL: no leave message, the beats stop
    let killed = Instant::now();
    child.wait().unwrap();
    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "doomed".into(),
            reason: DownReason::Silent,
        },
    )
    .await;
    let detected = killed.elapsed();
    println!(
        "SIGKILL to Down: {detected:?} (heartbeat timeout {:?})",
        config.heartbeat_timeout
    );
    // The contract: within the heartbeat timeout plus one second.
    assert!(
        detected <= config.heartbeat_timeout + Duration::from_secs(1),
        "detected after {detected:?}"
    );
    assert_eq!(here.members(), vec!["watcher".to_string()]);

    here.shutdown().await;
    stop(sys);
}

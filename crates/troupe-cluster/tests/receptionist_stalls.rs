//! A node process that shares a receptionist key stalls (SIGSTOP, then
//! SIGCONT) past the heartbeat timeout: the other node declares it down
//! and deletes its entries, and it comes back by itself as a new
//! incarnation. Its registered actor must be listed on the other node
//! again, under the new incarnation, without registering again or a
//! restart.

mod processes;

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use troupe::{ActorSystem, ServiceKey};
use troupe_cluster::receptionist::ClusterReceptionist;
use troupe_remote::testing::NatsServer;
use troupe_remote::{DownReason, MemberEvent, Node, RemoteConfig, RemoteMessage};

use processes::{signal, NodeProcess};

const WAIT: Duration = Duration::from_secs(15);

/// The node process's worker message (same tag and shape).
#[derive(serde::Serialize, serde::Deserialize)]
struct Work(String);

impl RemoteMessage for Work {
    const TAG: &'static str = "troupe-cluster.test.Work";
}

/// Ends the node process, even a stopped one, when the test ends.
struct Guard(NodeProcess);

impl Drop for Guard {
    fn drop(&mut self) {
        let child = &mut self.0.child;
        if child.try_wait().ok().flatten().is_none() {
            let pid = child.id().to_string();
            let _ = std::process::Command::new("kill")
                .args(["-CONT", &pid])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The remote refs on this node's listing of `workers`, as (live, dead)
/// counts.
async fn remote(system: &ActorSystem, workers: &ServiceKey<Work>) -> (usize, usize) {
    let listing = system
        .receptionist()
        .find(workers, Duration::from_secs(5))
        .await
        .unwrap();
    let external: Vec<_> = listing.refs().iter().filter(|r| r.is_external()).collect();
    let dead = external.iter().filter(|r| r.is_terminated()).count();
    (external.len() - dead, dead)
}

/// Polls the listing until it has exactly one live remote ref and no
/// dead one, or the deadline passes; the last counts seen either way.
async fn await_one_live(system: &ActorSystem, workers: &ServiceKey<Work>) -> (usize, usize) {
    let deadline = Instant::now() + WAIT;
    loop {
        let counts = remote(system, workers).await;
        if counts == (1, 0) || Instant::now() > deadline {
            return counts;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn await_event(
    events: &mut tokio::sync::broadcast::Receiver<MemberEvent>,
    want: MemberEvent,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(event)) if event == want => return,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => panic!("member events: {e}"),
            Err(_) => panic!("no {want:?} within {WAIT:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_node_s_actors_are_listed_again_on_the_other_nodes() {
    let server = NatsServer::start().unwrap();
    let system = ActorSystem::builder().threads(1).build().unwrap();
    // The node process's heartbeat: every 100 ms, down after 1 s.
    let mut config = RemoteConfig::new(server.url(), "here");
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_secs(1);
    let timeout = config.heartbeat_timeout;
    let node = Arc::new(Node::start(&system, config).await.unwrap());
    let mut events = node.member_events();
    let receptionist = ClusterReceptionist::start(node.clone(), &system)
        .await
        .unwrap();
    let workers = ServiceKey::<Work>::new("workers");
    receptionist.share(&workers).await.unwrap();

    let (tx, lines) = mpsc::channel();
    let url = server.url();
    let stalled = Guard(processes::spawn(
        env!("CARGO_BIN_EXE_troupe-receptionist-node"),
        &url,
        "stalled",
        &tx,
    ));
    let (name, line) = lines.recv_timeout(WAIT).expect("the node process starts");
    assert_eq!((name.as_str(), line.as_str()), ("stalled", "ready"));
    assert_eq!(
        await_one_live(&system, &workers).await,
        (1, 0),
        "the node process's worker is listed here"
    );

    // The stall itself (not a wait for an outcome): a second past the
    // timeout.
    signal(&stalled.0, "-STOP");
    std::thread::sleep(timeout + Duration::from_secs(1));
    let resumed = Instant::now();
    signal(&stalled.0, "-CONT");
    await_event(
        &mut events,
        MemberEvent::Down {
            node: "stalled".into(),
            reason: DownReason::Silent,
        },
    )
    .await;
    await_event(&mut events, MemberEvent::Up("stalled".into())).await;

    // Its worker, registered once before the stall, is listed here again
    // (the entry of the old incarnation was deleted when it went down).
    assert_eq!(
        await_one_live(&system, &workers).await,
        (1, 0),
        "the renewed node's worker is not listed here again (live, dead)"
    );
    println!(
        "listed again {:?} after the node resumed (heartbeat timeout {timeout:?})",
        resumed.elapsed()
    );

    drop(stalled);
    node.shutdown().await;
    system.shutdown();
}

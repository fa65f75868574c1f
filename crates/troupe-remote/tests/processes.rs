//! Real OS processes: two example node processes (`troupe-remote-echo`)
//! each publish an echo actor; this test process, the third node, looks
//! them up, tells and asks, sees both as members, then closes their stdin
//! and sees them leave and exit cleanly. Death watch crosses the process
//! boundary both ways (an actor here watching one there, and the reverse),
//! with refs inside messages. Another child is killed with SIGKILL: its
//! node is declared down (silent), and an actor watching its echo gets
//! `Terminated`, within the heartbeat timeout plus one second. A node
//! process SIGKILLed and started again under the same name is another
//! incarnation: refs to the old one are dead (watch fired as soon as the
//! new one is heard, sends counted, asks `Unreachable`) and never reach
//! the new process; a new lookup does.

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorId, ActorRef, AskError, Context, Props, Signal, TrySendError};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{DeadLetterReason, DownReason, MemberEvent, Node, RemoteConfig};

use support::{await_member_event, finish, node, server, spawn_echo, stop, system};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tell_and_ask_actors_in_two_other_processes() {
    let server = server();
    let url = server.url();
    let children = [
        spawn_echo(&url, "proc-a", "echo-a"),
        spawn_echo(&url, "proc-b", "echo-b"),
    ];

    let sys = system();
    let here = node(&sys, &server, "test-process").await;
    let mut events = here.member_events();
    for name in ["echo-a", "echo-b"] {
        let remote = here.lookup::<EchoMsg>(name).await.unwrap();
        for i in 0..50 {
            remote.tell(EchoMsg::Say(format!("{name}-{i}")));
        }
        let history = remote
            .ask(EchoMsg::History, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(
            history,
            (0..50).map(|i| format!("{name}-{i}")).collect::<Vec<_>>()
        );
        let answer = remote
            .ask(
                |r| EchoMsg::Echo(format!("to {name}"), r),
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(answer, format!("to {name}"));
    }
    assert_eq!(here.dead_letters_total(), 0);
    // Three nodes: this one hears both processes' heartbeats.
    for other in ["proc-a", "proc-b"] {
        if !here.members().contains(&other.to_string()) {
            await_member_event(&mut events, MemberEvent::Up(other.into())).await;
        }
    }
    let members = here.members();
    for node in ["proc-a", "proc-b", "test-process"] {
        assert!(members.contains(&node.to_string()), "{members:?}");
    }

    // Each leaves when its stdin closes, and says so.
    for child in children {
        finish(child);
    }
    for other in ["proc-a", "proc-b"] {
        if here.members().contains(&other.to_string()) {
            await_member_event(
                &mut events,
                MemberEvent::Down {
                    node: other.into(),
                    reason: DownReason::Left,
                },
            )
            .await;
        }
    }

    here.shutdown().await;
    stop(sys);
}

/// Watches the ref it is given; reports each `Terminated` and each `Say`.
struct Watching(mpsc::Sender<Result<ActorId, String>>);

impl Actor for Watching {
    type Msg = EchoMsg;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: EchoMsg) {
        match msg {
            EchoMsg::Watch(watched, _) => ctx.watch(&watched),
            EchoMsg::Say(text) => {
                let _ = self.0.send(Err(text));
            }
            _ => {}
        }
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            let _ = self.0.send(Ok(id));
        }
    }
}

fn watching(
    system: &troupe::ActorSystem,
) -> (ActorRef<EchoMsg>, mpsc::Receiver<Result<ActorId, String>>) {
    let (tx, rx) = mpsc::channel();
    let actor = system
        .spawn(Props::new(move || Watching(tx.clone())))
        .unwrap();
    (actor, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn death_watch_crosses_the_process_boundary_both_ways() {
    let server = server();
    let child = spawn_echo(&server.url(), "proc-w", "echo-w");
    let sys = system();
    let here = node(&sys, &server, "test-process").await;
    let there = here.lookup::<EchoMsg>("echo-w").await.unwrap();

    // The child's echo watches an actor of this process (sent as a ref, so
    // exported) and reports to another (also exported).
    let watched_here = sys.spawn(Props::new(Echo::default)).unwrap();
    let (report, reports) = watching(&sys);
    there.tell(EchoMsg::Watch(watched_here.clone(), report.clone()));
    // Once the child has answered this ask, its echo handled the Watch.
    there
        .ask(|r| EchoMsg::Echo("sync".into(), r), Duration::from_secs(5))
        .await
        .unwrap();
    sys.stop(&watched_here);
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(10)).unwrap(),
        Err("terminated".to_string())
    );

    // An actor here watches the child's echo, which then stops.
    report.tell(EchoMsg::Watch(there.clone(), report.clone()));
    there.tell(EchoMsg::Stop);
    assert_eq!(
        reports.recv_timeout(Duration::from_secs(10)).unwrap(),
        Ok(there.id())
    );

    finish(child);
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

    let mut child = spawn_echo(&server.url(), "doomed", "echo-doomed");
    if !here.members().contains(&"doomed".to_string()) {
        await_member_event(&mut events, MemberEvent::Up("doomed".into())).await;
    }
    let doomed = here.lookup::<EchoMsg>("echo-doomed").await.unwrap();
    let (watcher, terminated) = watching(&sys);
    watcher.tell(EchoMsg::Watch(doomed.clone(), watcher.clone()));

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
    assert_eq!(
        terminated.recv_timeout(Duration::from_secs(10)).unwrap(),
        Ok(doomed.id())
    );
    let watched = killed.elapsed();
    println!(
        "SIGKILL to Down: {detected:?}, to Terminated at a watcher: {watched:?} (heartbeat timeout {:?})",
        config.heartbeat_timeout
    );
    // The contract: within the heartbeat timeout plus one second.
    assert!(
        watched <= config.heartbeat_timeout + Duration::from_secs(1),
        "Terminated after {watched:?}"
    );
    assert_eq!(here.members(), vec!["watcher".to_string()]);

    here.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_process_is_a_new_incarnation_old_refs_never_reach_it() {
    let server = server();
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "watcher");
    // Far longer than the test: only the new incarnation's heartbeat can
    // tell this node that the first process is gone.
    config.heartbeat_timeout = Duration::from_secs(120);
    let here = Node::start(&sys, config).await.unwrap();
    let mut events = here.member_events();

    let mut first = spawn_echo(&server.url(), "inventory", "stock");
    let old = here.lookup::<EchoMsg>("stock").await.unwrap();
    old.tell(EchoMsg::Say("reservation 1".into()));
    assert_eq!(
        old.ask(EchoMsg::History, Duration::from_secs(5))
            .await
            .unwrap(),
        vec!["reservation 1".to_string()]
    );
    let (watcher, terminated) = watching(&sys);
    watcher.tell(EchoMsg::Watch(old.clone(), watcher.clone()));
    // Answered once the watch request has been answered by the first
    // process (it is sent before this ask, on the same connection).
    old.ask(|r| EchoMsg::Echo("sync".into(), r), Duration::from_secs(5))
        .await
        .unwrap();

    first.kill().unwrap(); // SIGKILL: no leave message
    first.wait().unwrap();
    let second = spawn_echo(&server.url(), "inventory", "stock");
    let restarted = Instant::now();
    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "inventory".into(),
            reason: DownReason::Restarted,
        },
    )
    .await;
    assert_eq!(
        terminated.recv_timeout(Duration::from_secs(10)).unwrap(),
        Ok(old.id())
    );
    println!(
        "second process ready to Terminated at the watcher: {:?}",
        restarted.elapsed()
    );

    // The old ref is dead: counted, refused, Unreachable.
    assert!(old.is_terminated());
    let before = here.dead_letter_count(DeadLetterReason::NodeDown);
    old.tell(EchoMsg::Say("stale reservation".into()));
    assert!(matches!(
        old.try_tell(EchoMsg::Say("stale".into())),
        Err(TrySendError::Closed(_))
    ));
    let answer = old
        .ask(
            |r| EchoMsg::Echo("stale?".into(), r),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(answer, Err(AskError::Unreachable { target: old.id() }));
    assert_eq!(
        here.dead_letter_count(DeadLetterReason::NodeDown),
        before + 2
    );

    // A new lookup reaches the new process, which got nothing of the old
    // ref's messages.
    let new = here.lookup::<EchoMsg>("stock").await.unwrap();
    assert!(!new.is_terminated());
    assert_eq!(
        new.ask(EchoMsg::History, Duration::from_secs(5))
            .await
            .unwrap(),
        Vec::<String>::new()
    );

    finish(second);
    here.shutdown().await;
    stop(sys);
}

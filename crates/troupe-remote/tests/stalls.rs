//! A node process that stalls (SIGSTOP, then SIGCONT) past the heartbeat
//! timeout: the other nodes declare it down, and it comes back by itself,
//! without a restart, as a new incarnation: the others see it up again,
//! the refs they held to its old incarnation stay dead, a fresh lookup
//! reaches its actors (still running, with their state), and the watches
//! it had made are registered again under the new incarnation.

mod support;

use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorId, Context, Props, Signal};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{DownReason, MemberEvent, Node, RemoteConfig};

use support::{await_member_event, finish, server, spawn_echo, stop, system};

const ASK: Duration = Duration::from_secs(5);

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

fn signal(pid: u32, which: &str) {
    let status = Command::new("kill")
        .args([which, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {which} {pid}: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stalled_past_the_heartbeat_timeout_comes_back_as_a_new_incarnation() {
    let server = server();
    let sys = system();
    // The echo process runs the default heartbeat (every 500 ms, declared
    // down after 3 s of silence), as this node does.
    let config = RemoteConfig::new(server.url(), "watcher");
    let timeout = config.heartbeat_timeout;
    let here = Node::start(&sys, config).await.unwrap();
    let mut events = here.member_events();

    let mut child = Guard(Some(spawn_echo(&server.url(), "inventory", "stock")));
    let pid = child.0.as_ref().unwrap().id();
    let old = here.lookup::<EchoMsg>("stock").await.unwrap();
    old.tell(EchoMsg::Say("reservation 1".into()));
    assert_eq!(
        old.ask(EchoMsg::History, ASK).await.unwrap(),
        vec!["reservation 1".to_string()]
    );
    // This node watches the echo actor; the echo actor watches `mine`,
    // an actor here, and reports its end to `report`.
    let (tx, seen) = mpsc::channel();
    let watcher = sys.spawn(Props::new(move || Watching(tx.clone()))).unwrap();
    watcher.tell(EchoMsg::Watch(old.clone(), watcher.clone()));
    let mine = sys.spawn(Props::new(Echo::default)).unwrap();
    old.tell(EchoMsg::Watch(mine.clone(), watcher.clone()));
    // Answered once both watches are registered (sent before, in order).
    old.ask(|r| EchoMsg::Echo("sync".into(), r), ASK)
        .await
        .unwrap();

    // The stall itself (not a wait for an outcome): a second past the
    // timeout.
    signal(pid, "-STOP");
    std::thread::sleep(timeout + Duration::from_secs(1));
    let resumed = Instant::now();
    signal(pid, "-CONT");

    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "inventory".into(),
            reason: DownReason::Silent,
        },
    )
    .await;
    // Back by itself, as a new incarnation: the old one stays down for
    // good, so nothing but a new one could be up again.
    await_member_event(&mut events, MemberEvent::Up("inventory".into())).await;
    println!(
        "inventory, stalled {:?} (heartbeat timeout {timeout:?}): up again {:?} after it resumed",
        timeout + Duration::from_secs(1),
        resumed.elapsed()
    );
    assert_eq!(
        here.members(),
        vec!["inventory".to_string(), "watcher".to_string()]
    );

    // The ref to the old incarnation is dead, and its watcher was told.
    assert!(old.is_terminated());
    assert_eq!(
        seen.recv_timeout(Duration::from_secs(10)).unwrap(),
        Ok(old.id())
    );
    // A fresh lookup reaches the same actor, still running, under the new
    // incarnation.
    let new = here.lookup::<EchoMsg>("stock").await.unwrap();
    assert!(!new.is_terminated());
    new.tell(EchoMsg::Say("reservation 2".into()));
    assert_eq!(
        new.ask(EchoMsg::History, ASK).await.unwrap(),
        vec!["reservation 1".to_string(), "reservation 2".to_string()]
    );
    // The watch the stalled node had made on `mine` was registered again
    // under its new incarnation (this node forgot the old one's when it
    // declared it down): `mine` stopping reaches it, and it reports.
    sys.stop(&mine);
    assert_eq!(
        seen.recv_timeout(Duration::from_secs(10)),
        Ok(Err("terminated".to_string())),
        "the stalled node's watch of an actor here was lost"
    );
    assert_eq!(
        here.members(),
        vec!["inventory".to_string(), "watcher".to_string()]
    );

    finish(child.0.take().unwrap());
    here.shutdown().await;
    stop(sys);
}

/// A failed test leaves no stopped process behind (a stopped process
/// cannot be ended by closing its stdin).
struct Guard(Option<std::process::Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

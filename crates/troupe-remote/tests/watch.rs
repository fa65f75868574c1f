//! Death watch across nodes, in one process on one real nats-server: an
//! actor watching a remote ref gets `Terminated` exactly once when the far
//! actor stops, is unpublished, or its node leaves; at once when it is
//! already gone; never after unwatching.

mod support;

use std::sync::mpsc;
use std::time::Duration;

use troupe::{Actor, ActorId, ActorRef, Context, Props, Signal};
use troupe_remote::testing::echo::{Echo, EchoMsg};

use support::{node, server, stop, system};

const WAIT: Duration = Duration::from_secs(10);

enum Cmd {
    Watch(ActorRef<EchoMsg>),
    Unwatch(ActorRef<EchoMsg>),
    /// Reported as `None`: everything sent to the watcher before it is
    /// handled (its system lane goes first).
    Fence,
}

/// Reports every `Terminated` (as `Some(id)`) and every fence (`None`).
struct Watching(mpsc::Sender<Option<ActorId>>);

impl Actor for Watching {
    type Msg = Cmd;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Cmd) {
        match msg {
            Cmd::Watch(other) => ctx.watch(&other),
            Cmd::Unwatch(other) => ctx.unwatch(&other),
            Cmd::Fence => {
                let _ = self.0.send(None);
            }
        }
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            let _ = self.0.send(Some(id));
        }
    }
}

fn watching(system: &troupe::ActorSystem) -> (ActorRef<Cmd>, mpsc::Receiver<Option<ActorId>>) {
    let (tx, rx) = mpsc::channel();
    let actor = system
        .spawn(Props::new(move || Watching(tx.clone())))
        .unwrap();
    (actor, rx)
}

/// Passes a fence through the watcher and checks nothing came before it.
fn nothing_more(watcher: &ActorRef<Cmd>, seen: &mpsc::Receiver<Option<ActorId>>) {
    watcher.tell(Cmd::Fence);
    assert_eq!(seen.recv_timeout(WAIT).unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_actor_that_stops_is_terminated_once() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    let (watcher, seen) = watching(&sys_b);

    watcher.tell(Cmd::Watch(remote.clone()));
    remote.tell(EchoMsg::Stop);
    assert_eq!(seen.recv_timeout(WAIT).unwrap(), Some(remote.id()));
    // Its node leaving afterwards does not deliver it again.
    a.shutdown().await;
    nothing_more(&watcher, &seen);
    assert_eq!(b.watched_remote_actors(), 0);

    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpublishing_or_leaving_ends_remote_watches() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    for name in ["one", "two"] {
        let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
        a.publish(name, &echo).await.unwrap();
    }
    let one = b.lookup::<EchoMsg>("one").await.unwrap();
    let two = b.lookup::<EchoMsg>("two").await.unwrap();
    let (watcher, seen) = watching(&sys_b);
    watcher.tell(Cmd::Watch(one.clone()));
    watcher.tell(Cmd::Watch(two.clone()));
    // Whether node a has heard of the watches before what follows or not,
    // each ends once: a watch that arrives late is answered "gone".
    wait_until_watched(&b, 2).await;

    assert!(a.unpublish("one").await);
    assert_eq!(seen.recv_timeout(WAIT).unwrap(), Some(one.id()));
    a.shutdown().await;
    assert_eq!(seen.recv_timeout(WAIT).unwrap(), Some(two.id()));
    nothing_more(&watcher, &seen);

    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_what_is_already_gone_ends_at_once() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    for name in ["unpublished", "on-a-gone-node"] {
        let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
        a.publish(name, &echo).await.unwrap();
    }
    let unpublished = b.lookup::<EchoMsg>("unpublished").await.unwrap();
    let on_gone_node = b.lookup::<EchoMsg>("on-a-gone-node").await.unwrap();
    let (watcher, seen) = watching(&sys_b);

    // Node a answers that it has no such actor.
    assert!(a.unpublish("unpublished").await);
    watcher.tell(Cmd::Watch(unpublished.clone()));
    assert_eq!(seen.recv_timeout(WAIT).unwrap(), Some(unpublished.id()));
    // Nobody answers for node a at all.
    a.shutdown().await;
    watcher.tell(Cmd::Watch(on_gone_node.clone()));
    assert_eq!(seen.recv_timeout(WAIT).unwrap(), Some(on_gone_node.id()));
    nothing_more(&watcher, &seen);

    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwatching_or_stopping_the_watcher_ends_the_watch() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();

    let (watcher, seen) = watching(&sys_b);
    watcher.tell(Cmd::Watch(remote.clone()));
    wait_until_watched(&b, 1).await;
    watcher.tell(Cmd::Unwatch(remote.clone()));
    nothing_more(&watcher, &seen);
    assert_eq!(b.watched_remote_actors(), 0);

    let (second, _seen_second) = watching(&sys_b);
    second.tell(Cmd::Watch(remote.clone()));
    wait_until_watched(&b, 1).await;
    sys_b.stop(&second);
    wait_until_watched(&b, 0).await;
    nothing_more(&watcher, &seen);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

/// Waits until `node` watches `n` remote actors (polling with a deadline:
/// the count changes on actor threads, which signal nothing else).
async fn wait_until_watched(node: &troupe_remote::Node, n: usize) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while node.watched_remote_actors() != n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "watched {} remote actors, expected {n}",
            node.watched_remote_actors()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

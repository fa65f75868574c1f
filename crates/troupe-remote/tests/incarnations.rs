//! Refs that outlive their actor: every node start is an incarnation, a
//! frame for another incarnation is refused where it lands, and once a
//! node knows a ref's actor is gone (its watch fired, its node left) the
//! ref is dead: `is_terminated()`, tells counted as dead letters with the
//! reason, `try_tell` refused, asks failing with `Unreachable`. The restart
//! of a node process itself is in `tests/processes.rs`.

mod support;

use std::sync::mpsc;
use std::time::Duration;

use futures_util::StreamExt;
use troupe::{Actor, ActorId, ActorRef, AskError, Context, Props, Signal, TrySendError};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{wire, DeadLetterReason, DownReason, MemberEvent};

use support::{await_member_event, dead_letter_probe, next_reason, node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

/// Watches the ref it is sent and reports `Terminated`.
struct Watcher(mpsc::Sender<ActorId>);

impl Actor for Watcher {
    type Msg = ActorRef<EchoMsg>;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, watched: ActorRef<EchoMsg>) {
        ctx.watch(&watched);
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            let _ = self.0.send(id);
        }
    }
}

/// What a dead ref does with every kind of send; `reason` is the dead
/// letter each counted send makes on `node`.
async fn assert_dead(
    remote: &ActorRef<EchoMsg>,
    node: &troupe_remote::Node,
    reason: DeadLetterReason,
) {
    let probe = dead_letter_probe(node);
    let before = node.dead_letter_count(reason);
    assert!(remote.is_terminated(), "the ref still looks alive");
    remote.tell(EchoMsg::Say("into the void".into()));
    assert_eq!(next_reason(&probe), reason);
    assert!(matches!(
        remote.try_tell(EchoMsg::Say("refused".into())),
        Err(TrySendError::Closed(_))
    ));
    let answer = remote
        .ask(
            |r| EchoMsg::Echo("anyone?".into(), r),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(
        answer,
        Err(AskError::Unreachable {
            target: remote.id()
        })
    );
    assert_eq!(next_reason(&probe), reason);
    assert_eq!(node.dead_letter_count(reason), before + 2);
    assert_eq!(node.pending_replies(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_actor_that_stops_makes_every_ref_to_it_dead() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    let second = b.lookup::<EchoMsg>("echo").await.unwrap();
    assert_eq!(
        remote.ask(|r| EchoMsg::Echo("hi".into(), r), ASK).await,
        Ok("hi".to_string())
    );
    assert!(!remote.is_terminated());

    let (tx, terminated) = mpsc::channel();
    let watcher = sys_b
        .spawn(Props::new(move || Watcher(tx.clone())))
        .unwrap();
    watcher.tell(remote.clone());
    // Once answered, the watch is registered on node a.
    remote
        .ask(|r| EchoMsg::Echo("sync".into(), r), ASK)
        .await
        .unwrap();
    sys_a.stop(&echo);
    assert_eq!(
        terminated.recv_timeout(Duration::from_secs(10)).unwrap(),
        remote.id()
    );
    // Both refs to the actor are dead, not only the watched one.
    assert_dead(&remote, &b, DeadLetterReason::Terminated).await;
    assert_dead(&second, &b, DeadLetterReason::Terminated).await;

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_to_a_node_that_left_are_dead() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let mut events = b.member_events();
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    if !b.members().contains(&"a".to_string()) {
        await_member_event(&mut events, MemberEvent::Up("a".into())).await;
    }

    a.shutdown().await;
    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "a".into(),
            reason: DownReason::Left,
        },
    )
    .await;
    // The event is announced after its consequences: the ref is dead now.
    assert_dead(&remote, &b, DeadLetterReason::NodeDown).await;

    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_for_a_past_incarnation_is_refused_counted_and_answered() {
    let server = server();
    let sys = system();
    let a = node(&sys, &server, "a").await;
    let echo = sys.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let probe = dead_letter_probe(&a);
    let client = async_nats::connect(server.url()).await.unwrap();
    // A node of the cluster's reply subject for a message carrying ask 1
    // in its frame 0 (a node refuses only to such subjects).
    let reply = "troupe.troupe.noreply.sender.1-0";
    let mut answers = client.subscribe(reply).await.unwrap();
    client.flush().await.unwrap();

    // A frame for another start of node a, with a reply subject (as when
    // it carries asks): not delivered, counted, and the sender is told.
    let past = a.incarnation().wrapping_add(1).max(1);
    let stale = wire::encode_tell(past, "echo", &EchoMsg::Say("stale".into())).unwrap();
    client
        .publish_with_reply("troupe.troupe.actor.echo", reply, stale.into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    assert_eq!(next_reason(&probe), DeadLetterReason::WrongIncarnation);
    let refusal = tokio::time::timeout(Duration::from_secs(10), answers.next())
        .await
        .expect("no refusal within 10 s")
        .unwrap();
    let mut expected = vec![b'R'];
    expected.extend_from_slice(&past.to_le_bytes());
    expected.extend_from_slice(b"a");
    assert_eq!(refusal.payload.as_ref(), expected.as_slice());

    // Frames for this incarnation, and for any (0), are delivered.
    for (incarnation, text) in [(a.incarnation(), "mine"), (0, "any")] {
        let frame = wire::encode_tell(incarnation, "echo", &EchoMsg::Say(text.into())).unwrap();
        client
            .publish("troupe.troupe.actor.echo", frame.into())
            .await
            .unwrap();
    }
    client.flush().await.unwrap();
    let local = a.lookup::<EchoMsg>("echo").await.unwrap();
    let history = local.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, vec!["mine".to_string(), "any".to_string()]);
    assert_eq!(a.dead_letter_count(DeadLetterReason::WrongIncarnation), 1);

    a.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_follows_the_name_to_another_node() {
    let server = server();
    let (sys_a, sys_b, sys_c) = (system(), system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let c = node(&sys_c, &server, "c").await;
    let first = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("engine", &first).await.unwrap();
    let pinned = c.lookup::<EchoMsg>("engine").await.unwrap();
    let selection = c.select::<EchoMsg>("engine").unwrap();
    selection.tell(EchoMsg::Say("to a".into()));
    assert_eq!(
        selection.ask(EchoMsg::History, ASK).await.unwrap(),
        vec!["to a".to_string()]
    );

    // The name moves to node b.
    assert!(a.unpublish("engine").await);
    let next = sys_b.spawn(Props::new(Echo::default)).unwrap();
    b.publish("engine", &next).await.unwrap();
    selection.tell(EchoMsg::Say("to b".into()));
    assert_eq!(
        selection.ask(EchoMsg::History, ASK).await.unwrap(),
        vec!["to b".to_string()]
    );
    assert!(!selection.is_terminated());
    // The looked-up ref stays with node a's actor: node b refuses its
    // frames as addressed to another node's incarnation.
    let answer = pinned.ask(EchoMsg::History, ASK).await;
    assert_eq!(
        answer,
        Err(AskError::Unreachable {
            target: pinned.id()
        })
    );
    assert_eq!(
        next.ask(EchoMsg::History, ASK).await.unwrap(),
        vec!["to b".to_string()]
    );

    for n in [a, b, c] {
        n.shutdown().await;
    }
    for s in [sys_a, sys_b, sys_c] {
        stop(s);
    }
}

//! A stranger on the NATS account, a plain client that publishes whatever
//! it likes on a cluster's subjects (the server here has no permissions,
//! docs/operations.md says how to keep such clients out), forges every
//! membership and liveness message a node acts on: a `Terminated` of a
//! live actor, a leave and a restart of a live node carrying the
//! incarnation its heartbeats show, heartbeats of nodes nobody runs,
//! watch requests from nodes nobody runs, and junk on the membership and
//! lookup subjects. Each test asserts the node's view (members, refs,
//! watches), its counters (every forged or junk message is a dead letter
//! with its reason) and the size of what it keeps (`Node::footprint`).

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use troupe::{Actor, ActorId, ActorRef, Context, Props, Signal};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{wire, DeadLetterReason, MemberEvent, Node};

use support::{await_member_event, node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

/// The control messages nodes exchange (`src/node/watch.rs`), as a
/// stranger would write them: the variants and fields in their order.
#[derive(Serialize)]
#[allow(dead_code)]
enum Kind {
    Published,
    Exported,
}

#[derive(Serialize)]
#[allow(dead_code)]
enum Control {
    Watch {
        incarnation: u64,
        kind: Kind,
        id: String,
        from: String,
        from_incarnation: u64,
    },
    Unwatch {
        kind: Kind,
        id: String,
        from: String,
        from_incarnation: u64,
    },
    Terminated {
        host: String,
        incarnation: u64,
        kind: Kind,
        id: String,
    },
    Probe {
        incarnation: u64,
        kind: Kind,
        id: String,
    },
}

/// Reports each `Terminated` it gets.
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

/// Polls `done` every 10 ms until it holds, or panics after 20 s.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "not within 20 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The incarnation `node`'s heartbeats carry, read as any client can.
async fn heartbeat_incarnation(stranger: &async_nats::Client, node: &str) -> u64 {
    let mut beats = stranger
        .subscribe(format!("troupe.troupe.members.beat.{node}"))
        .await
        .unwrap();
    let beat = tokio::time::timeout(Duration::from_secs(10), beats.next())
        .await
        .expect("no heartbeat within 10 s")
        .unwrap();
    u64::from_le_bytes(beat.payload.as_ref().try_into().unwrap())
}

/// Two nodes: `a` publishes an echo actor, `w` has looked it up and hears
/// `a` as a member.
struct Pair {
    sys_a: troupe::ActorSystem,
    sys_w: troupe::ActorSystem,
    a: Node,
    w: Node,
}

async fn pair(server: &troupe_remote::testing::NatsServer) -> Pair {
    let (sys_a, sys_w) = (system(), system());
    let a = node(&sys_a, server, "a").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let w = node(&sys_w, server, "w").await;
    let mut events = w.member_events();
    if !w.members().contains(&"a".to_string()) {
        await_member_event(&mut events, MemberEvent::Up("a".into())).await;
    }
    until("a hears w", || a.members().contains(&"w".to_string())).await;
    Pair { sys_a, sys_w, a, w }
}

impl Pair {
    async fn end(self) {
        self.a.shutdown().await;
        self.w.shutdown().await;
        stop(self.sys_a);
        stop(self.sys_w);
    }
}

/// `node`'s count of `reason`.
fn count(node: &Node, reason: DeadLetterReason) -> u64 {
    node.dead_letter_count(reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_terminated_kills_no_ref_to_a_live_actor() {
    let server = server();
    let p = pair(&server).await;
    let remote = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    let (tx, terminated) = mpsc::channel();
    let watcher = p
        .sys_w
        .spawn(Props::new(move || Watcher(tx.clone())))
        .unwrap();
    watcher.tell(remote.clone());
    until("w's watch registered at a", || {
        p.a.footprint().remote_watches == 1
    })
    .await;

    let stranger = async_nats::connect(server.url()).await.unwrap();
    let forged = |host: &str| Control::Terminated {
        host: host.into(),
        incarnation: p.a.incarnation(),
        kind: Kind::Published,
        id: "echo".into(),
    };
    // On every subject a node has taken control messages on: its own, and
    // its own followed by a sender's name. Once as the host itself, once
    // sent as another node (b) speaking for the host.
    for (subject, host) in [
        ("troupe.troupe.system.w", "a"),
        ("troupe.troupe.system.w.a", "a"),
        ("troupe.troupe.system.w.b", "a"),
    ] {
        let bytes = postcard::to_stdvec(&forged(host)).unwrap();
        stranger.publish(subject, bytes.into()).await.unwrap();
    }
    stranger.flush().await.unwrap();
    until("the forged Terminated handled", || {
        remote.is_terminated()
            || count(&p.w, DeadLetterReason::Unconfirmed)
                + count(&p.w, DeadLetterReason::WrongSender)
                >= 2
    })
    .await;

    // The ref, a fresh lookup and the watch live on.
    assert!(
        !remote.is_terminated(),
        "a forged Terminated killed the ref"
    );
    let again = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    assert!(!again.is_terminated());
    let answer = again
        .ask(|r| EchoMsg::Echo("alive".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "alive");
    assert!(terminated.try_recv().is_err(), "the watcher was told");
    assert_eq!(count(&p.w, DeadLetterReason::Unconfirmed), 1);
    assert_eq!(count(&p.w, DeadLetterReason::WrongSender), 1);
    assert_eq!(p.w.dead_letters_total(), 2);

    // The real one still comes through.
    remote.tell(EchoMsg::Stop);
    assert_eq!(terminated.recv_timeout(ASK).unwrap(), remote.id());
    until("the ref dead", || remote.is_terminated()).await;
    p.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_leave_or_restart_takes_no_live_node_down() {
    let server = server();
    let p = pair(&server).await;
    let remote = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    let mut events = p.w.member_events();
    let stranger = async_nats::connect(server.url()).await.unwrap();
    // What every heartbeat shows, a leave carries.
    let incarnation = heartbeat_incarnation(&stranger, "a").await;
    assert_eq!(incarnation, p.a.incarnation());
    stranger
        .publish(
            "troupe.troupe.members.leave.a",
            Bytes::copy_from_slice(&incarnation.to_le_bytes()),
        )
        .await
        .unwrap();
    // A heartbeat of another incarnation under a's name: a restart.
    stranger
        .publish(
            "troupe.troupe.members.beat.a",
            Bytes::copy_from_slice(&(incarnation ^ 1).to_le_bytes()),
        )
        .await
        .unwrap();
    stranger.flush().await.unwrap();
    until("the forged leave and restart handled", || {
        !p.w.members().contains(&"a".to_string()) || count(&p.w, DeadLetterReason::Unconfirmed) >= 2
    })
    .await;

    assert_eq!(p.w.members(), vec!["a".to_string(), "w".to_string()]);
    assert!(!remote.is_terminated(), "a forged leave killed the ref");
    let answer = remote
        .ask(|r| EchoMsg::Echo("alive".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "alive");
    assert!(events.try_recv().is_err(), "a member event was announced");
    assert_eq!(count(&p.w, DeadLetterReason::Unconfirmed), 2);
    assert_eq!(p.w.dead_letters_total(), 2);
    let footprint = p.w.footprint();
    assert_eq!((footprint.members, footprint.down_incarnations), (1, 0));

    // A real leave is still seen at once.
    p.a.shutdown().await;
    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "a".into(),
            reason: troupe_remote::DownReason::Left,
        },
    )
    .await;
    assert!(remote.is_terminated());
    p.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_of_nodes_nobody_runs_and_junk_on_members_add_nothing() {
    let server = server();
    let p = pair(&server).await;
    let mut events = p.w.member_events();
    let stranger = async_nats::connect(server.url()).await.unwrap();
    const PHANTOMS: u64 = 20_000;
    for i in 0..PHANTOMS {
        stranger
            .publish(
                format!("troupe.troupe.members.beat.phantom-{i}"),
                Bytes::copy_from_slice(&(i + 1).to_le_bytes()),
            )
            .await
            .unwrap();
    }
    // Junk: a payload that is no incarnation, a name that is no node
    // name, a kind of membership message there is not.
    let junk: [(&str, &[u8]); 4] = [
        ("troupe.troupe.members.beat.x", b"short"),
        ("troupe.troupe.members.leave.x", b""),
        ("troupe.troupe.members.beat.a+b", &[1, 0, 0, 0, 0, 0, 0, 0]),
        ("troupe.troupe.members.join.x", &[1, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for (subject, payload) in junk {
        stranger
            .publish(subject, Bytes::copy_from_slice(payload))
            .await
            .unwrap();
    }
    stranger.flush().await.unwrap();
    let counted = || {
        count(&p.w, DeadLetterReason::Unconfirmed)
            + count(&p.w, DeadLetterReason::OverCapacity)
            + count(&p.w, DeadLetterReason::Malformed)
    };
    until("every forged heartbeat and junk handled", || {
        counted() >= PHANTOMS + 4 || p.w.footprint().members as u64 >= PHANTOMS
    })
    .await;
    // Confirmations still under way end, and count.
    until("confirmations done", || p.w.footprint().confirming == 0).await;

    let footprint = p.w.footprint();
    assert_eq!(
        (footprint.members, footprint.down_incarnations),
        (1, 0),
        "{footprint:?}"
    );
    assert_eq!(p.w.members(), vec!["a".to_string(), "w".to_string()]);
    assert_eq!(count(&p.w, DeadLetterReason::Malformed), 4);
    assert_eq!(counted(), PHANTOMS + 4);
    assert_eq!(p.w.dead_letters_total(), PHANTOMS + 4);
    assert!(events.try_recv().is_err(), "a member event was announced");
    p.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_requests_of_nodes_nobody_runs_are_kept_nowhere() {
    let server = server();
    let p = pair(&server).await;
    let stranger = async_nats::connect(server.url()).await.unwrap();
    const FORGED: u64 = 10_000;
    for i in 0..FORGED {
        let from = format!("phantom-{i}");
        let watch = Control::Watch {
            incarnation: p.a.incarnation(),
            kind: Kind::Published,
            id: "echo".into(),
            from: from.clone(),
            from_incarnation: i + 1,
        };
        let bytes = postcard::to_stdvec(&watch).unwrap();
        // On the subject of control messages, with and without the
        // sender's name after it.
        for subject in [
            "troupe.troupe.system.a".to_string(),
            format!("troupe.troupe.system.a.{from}"),
        ] {
            stranger
                .publish(subject, bytes.clone().into())
                .await
                .unwrap();
        }
    }
    stranger.flush().await.unwrap();
    until("every forged watch handled", || {
        count(&p.a, DeadLetterReason::Unconfirmed) >= FORGED
            || p.a.footprint().remote_watches as u64 >= FORGED
    })
    .await;
    assert_eq!(p.a.footprint().remote_watches, 0, "{:?}", p.a.footprint());
    assert_eq!(count(&p.a, DeadLetterReason::Unconfirmed), FORGED);

    // A real watch is still kept, and told.
    let remote = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    let (tx, terminated) = mpsc::channel();
    let watcher = p
        .sys_w
        .spawn(Props::new(move || Watcher(tx.clone())))
        .unwrap();
    watcher.tell(remote.clone());
    until("w's watch registered at a", || {
        p.a.footprint().remote_watches == 1
    })
    .await;
    remote.tell(EchoMsg::Stop);
    assert_eq!(terminated.recv_timeout(ASK).unwrap(), remote.id());
    p.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_lookups_are_counted() {
    let server = server();
    let p = pair(&server).await;
    let stranger = async_nats::connect(server.url()).await.unwrap();
    // A lookup is a request: one without a reply subject is junk.
    for _ in 0..100 {
        stranger
            .publish("troupe.troupe.lookup.echo", Bytes::from_static(b"junk"))
            .await
            .unwrap();
    }
    stranger.flush().await.unwrap();
    until("the junk lookups counted", || {
        count(&p.a, DeadLetterReason::Malformed) >= 100
    })
    .await;
    assert_eq!(p.a.dead_letters_total(), 100);
    // Lookups still work.
    let remote = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    let answer = remote
        .ask(|r| EchoMsg::Echo("found".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "found");
    p.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_empty_or_tiny_entries_costs_a_dead_letter_per_message() {
    let server = server();
    let p = pair(&server).await;
    let stranger = async_nats::connect(server.url()).await.unwrap();
    // A batch header then as many entries as fit in a megabyte: empty
    // ones (a zero length each), then three-byte garbage ones.
    let batch = |entry: &[u8]| {
        let mut bytes = vec![wire::VERSION, 3];
        while bytes.len() + entry.len() <= 1_000_000 {
            bytes.extend_from_slice(entry);
        }
        bytes
    };
    let empty = batch(&[0]);
    let garbage = batch(&[3, wire::VERSION, 200, 1]);
    for bytes in [empty, garbage] {
        stranger
            .publish("troupe.troupe.actor.echo", bytes.into())
            .await
            .unwrap();
    }
    // Then a good frame on the same subject and connection: handled after
    // them.
    let marker = wire::encode_tell(0, "echo", &EchoMsg::Say("after".into())).unwrap();
    stranger
        .publish("troupe.troupe.actor.echo", marker.into())
        .await
        .unwrap();
    stranger.flush().await.unwrap();
    let remote = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
        if !history.is_empty() {
            assert_eq!(history, vec!["after".to_string()]);
            break;
        }
        assert!(Instant::now() < deadline, "the good frame never came");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let total = p.a.dead_letters_total();
    assert!(
        total <= 2 * 17,
        "two junk messages cost {total} dead letters"
    );
    assert!(total >= 2, "the junk went uncounted");
    p.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_refusal_or_unwatch_takes_nothing_away() {
    let server = server();
    let p = pair(&server).await;
    let remote = p.w.lookup::<EchoMsg>("echo").await.unwrap();
    let (tx, terminated) = mpsc::channel();
    let watcher = p
        .sys_w
        .spawn(Props::new(move || Watcher(tx.clone())))
        .unwrap();
    watcher.tell(remote.clone());
    until("w's watch registered at a", || {
        p.a.footprint().remote_watches == 1
    })
    .await;
    // An ask a never answers: pending at w under a small sequential id.
    let kept = remote.ask(EchoMsg::Keep, Duration::from_secs(60));
    let stranger = async_nats::connect(server.url()).await.unwrap();
    // "a refuses this as addressed to its past incarnation": what a node
    // answers on the reply subject of a message for an incarnation it no
    // longer is, here for every ask id up to 100.
    let mut refusal = vec![b'R'];
    refusal.extend_from_slice(&p.a.incarnation().to_le_bytes());
    refusal.extend_from_slice(b"a");
    let refusal = Bytes::from(refusal);
    for id in 0..100 {
        for subject in [
            format!("troupe.troupe.noreply.w.{id}"),
            format!("troupe.troupe.noreply.w.{id}-0"),
        ] {
            stranger.publish(subject, refusal.clone()).await.unwrap();
        }
    }
    // An unwatch of w's watch, sent as another node.
    let unwatch = Control::Unwatch {
        kind: Kind::Published,
        id: "echo".into(),
        from: "w".into(),
        from_incarnation: p.w.incarnation(),
    };
    let unwatch = Bytes::from(postcard::to_stdvec(&unwatch).unwrap());
    stranger
        .publish("troupe.troupe.system.a.x", unwatch)
        .await
        .unwrap();
    stranger.flush().await.unwrap();
    until("the forged refusal and unwatch handled", || {
        remote.is_terminated()
            || (count(&p.w, DeadLetterReason::Unconfirmed) >= 1
                && count(&p.a, DeadLetterReason::WrongSender) >= 1)
    })
    .await;

    assert!(!remote.is_terminated(), "a forged refusal killed the ref");
    assert_eq!(p.w.members(), vec!["a".to_string(), "w".to_string()]);
    assert_eq!(p.a.footprint().remote_watches, 1, "the watch was dropped");
    assert_eq!(count(&p.w, DeadLetterReason::Unconfirmed), 1);
    assert_eq!(count(&p.a, DeadLetterReason::WrongSender), 1);
    // The ask it named was failed: a forger that may publish on w's reply
    // subjects can fail w's asks (docs/operations.md: only permissions
    // stop that), but not take a or its actor away.
    assert!(kept.await.is_err());
    let answer = remote
        .ask(|r| EchoMsg::Echo("alive".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "alive");
    remote.tell(EchoMsg::Stop);
    assert_eq!(terminated.recv_timeout(ASK).unwrap(), remote.id());
    p.end().await;
}

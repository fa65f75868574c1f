//! Actor refs inside messages, in one process on one real nats-server: a
//! local ref sent to another node works there and reads back as the
//! original local ref at home; a remote ref passed on through a third node
//! still reaches its actor and can be watched there; a ref of the wrong
//! message type or a guessed token is refused; routers route over remote
//! refs.

mod support;

use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use troupe::{Actor, ActorRef, Context, Props, Router, Routing};
use troupe_remote::testing::echo::{Echo, EchoMsg, EchoRef};
use troupe_remote::{DeadLetterReason, RemoteMessage};

use support::{dead_letter_probe, next_reason, node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

/// Sends every `Say` it gets to a channel.
struct Collector(mpsc::Sender<String>);

impl Actor for Collector {
    type Msg = EchoMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: EchoMsg) {
        if let EchoMsg::Say(text) = msg {
            let _ = self.0.send(text);
        }
    }
}

fn collector(system: &troupe::ActorSystem) -> (ActorRef<EchoMsg>, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let actor = system
        .spawn(Props::new(move || Collector(tx.clone())))
        .unwrap();
    (actor, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_ref_sent_away_works_there_and_comes_home_local() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();

    // b's collector, never published, is reached through the ref in the
    // message: node b exported it when the message was sent.
    let (inbox, received) = collector(&sys_b);
    assert_eq!(b.reachable_actors(), 0);
    remote.tell(EchoMsg::Forward("via a".into(), inbox.clone()));
    assert_eq!(
        received.recv_timeout(ASK).unwrap(),
        "via a",
        "the forwarded message did not arrive"
    );
    assert_eq!(b.reachable_actors(), 1);
    // Sent again: the same export, not a second one.
    remote.tell(EchoMsg::Forward("again".into(), inbox.clone()));
    assert_eq!(received.recv_timeout(ASK).unwrap(), "again");
    assert_eq!(b.reachable_actors(), 1);

    // A ref in an answer: the echo's own ref, remote on b ...
    let EchoRef(there) = remote.ask(EchoMsg::Me, ASK).await.unwrap();
    assert!(there.is_external());
    there.tell(EchoMsg::Say("through the exported ref".into()));
    let history = there.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, vec!["through the exported ref".to_string()]);
    // ... and local again on a, where it came from.
    let from_a = a.lookup::<EchoMsg>("echo").await.unwrap();
    let EchoRef(home) = from_a.ask(EchoMsg::Me, ASK).await.unwrap();
    assert!(!home.is_external());
    assert_eq!(home.id(), echo.id());

    // The exported collector stops: its export goes with it.
    sys_b.stop(&inbox);
    let deadline = std::time::Instant::now() + ASK;
    while b.reachable_actors() != 0 {
        assert!(std::time::Instant::now() < deadline, "the export stayed");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(a.dead_letters_total() + b.dead_letters_total(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_ref_passed_on_reaches_its_actor_and_can_be_watched() {
    let server = server();
    let (sys_a, sys_b, sys_c) = (system(), system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let c = node(&sys_c, &server, "c").await;
    let echo_b = sys_b.spawn(Props::new(Echo::default)).unwrap();
    b.publish("echo-b", &echo_b).await.unwrap();
    let echo_c = sys_c.spawn(Props::new(Echo::default)).unwrap();
    c.publish("echo-c", &echo_c).await.unwrap();

    // a tells b's echo to watch c's echo (a ref a looked up, passed on as
    // it is) and to report to a's collector (exported by a).
    let (report, reports) = collector(&sys_a);
    let on_b = a.lookup::<EchoMsg>("echo-b").await.unwrap();
    let c_from_a = a.lookup::<EchoMsg>("echo-c").await.unwrap();
    on_b.tell(EchoMsg::Watch(c_from_a.clone(), report.clone()));
    // And to forward through c's echo, to show the passed ref works on b.
    on_b.tell(EchoMsg::Forward("from b".into(), c_from_a.clone()));
    // (b's send and a's asks take different paths: poll with a deadline.)
    let deadline = std::time::Instant::now() + ASK;
    loop {
        let history = c_from_a.ask(EchoMsg::History, ASK).await.unwrap();
        if !history.is_empty() {
            assert_eq!(history, vec!["from b".to_string()]);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "nothing came from b");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    c_from_a.tell(EchoMsg::Stop);
    assert_eq!(reports.recv_timeout(ASK).unwrap(), "terminated");

    for node in [&a, &b, &c] {
        node.shutdown().await;
    }
    for system in [sys_a, sys_b, sys_c] {
        stop(system);
    }
}

/// Another message type, whose refs must not pass for echo refs.
struct Other;

impl serde::Serialize for Other {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> serde::Deserialize<'de> for Other {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <()>::deserialize(d).map(|()| Other)
    }
}

impl RemoteMessage for Other {
    const TAG: &'static str = "tests.refs.other.v1";
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_of_another_type_and_guessed_tokens_are_refused() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    let probe = dead_letter_probe(&a);

    // A Forward whose ref carries Other's tag: refused as undecodable.
    let forged = forged_frame();
    let client = async_nats::connect(server.url()).await.unwrap();
    client
        .publish("troupe.troupe.actor.echo", forged.into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    assert_eq!(next_reason(&probe), DeadLetterReason::Undecodable);

    // A frame for a token nobody was given.
    let guessed = troupe_remote::wire::encode_tell(
        0,
        "0123456789abcdef0123456789abcdef",
        &EchoMsg::Say("guess".into()),
    )
    .unwrap();
    client
        .publish(
            "troupe.troupe.ref.a.0123456789abcdef0123456789abcdef",
            guessed.into(),
        )
        .await
        .unwrap();
    client.flush().await.unwrap();
    assert_eq!(next_reason(&probe), DeadLetterReason::UnknownName);
    // Still serving.
    let answer = remote
        .ask(|r| EchoMsg::Echo("still here".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "still here");

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

/// A tell frame for the echo, with the echo's tag, whose payload has the
/// shape of a `Forward` but a ref (host, incarnation, kind, token, tag) of
/// `Other`'s tag.
fn forged_frame() -> Vec<u8> {
    #[derive(Serialize)]
    enum Shape<'a> {
        _Say(String),
        _Echo,
        _History,
        _Drop,
        _Keep,
        Forward(String, (&'a str, u64, u32, &'a str, &'a str)),
    }
    let payload = Shape::Forward(
        "forged".into(),
        ("b", 7, 1, "0123456789abcdef0123456789abcdef", Other::TAG),
    );
    // A tell, to any incarnation, for a four-byte name.
    let mut frame = vec![troupe_remote::wire::VERSION, 0, 0, 4];
    frame.extend_from_slice(b"echo");
    frame.push(EchoMsg::TAG.len() as u8);
    frame.extend_from_slice(EchoMsg::TAG.as_bytes());
    frame.extend_from_slice(&postcard::to_stdvec(&payload).unwrap());
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_routes_over_remote_refs() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let mut routees = Vec::new();
    for name in ["r0", "r1", "r2"] {
        let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
        a.publish(name, &echo).await.unwrap();
        routees.push(b.lookup::<EchoMsg>(name).await.unwrap());
    }
    let router = Router::group(routees.clone(), Routing::RoundRobin);
    for i in 0..9 {
        router.tell(EchoMsg::Say(format!("m{i}")));
    }
    for (k, routee) in routees.iter().enumerate() {
        let history = routee.ask(EchoMsg::History, ASK).await.unwrap();
        let expected: Vec<String> = (0..9)
            .filter(|i| i % 3 == k)
            .map(|i| format!("m{i}"))
            .collect();
        assert_eq!(history, expected, "routee {k}");
    }

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_kept_as_bytes_reads_back_on_any_node() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let (inbox, received) = collector(&sys_a);

    let bytes = a.to_bytes(&inbox).unwrap();
    // On b: a remote ref that reaches a's collector.
    let there: ActorRef<EchoMsg> = b.from_bytes(&bytes).unwrap();
    assert!(there.is_external());
    there.tell(EchoMsg::Say("from the bytes".into()));
    assert_eq!(received.recv_timeout(ASK).unwrap(), "from the bytes");
    // On a: the local ref itself.
    let home: ActorRef<EchoMsg> = a.from_bytes(&bytes).unwrap();
    assert!(!home.is_external());
    assert_eq!(home.id(), inbox.id());

    // A ref of another message type, trailing bytes, and a ReplyTo are
    // refused with an encoding error, not read as something else.
    let wrong = b.from_bytes::<ActorRef<Other>>(&bytes).unwrap_err();
    assert!(
        matches!(wrong, troupe_remote::RemoteError::Encoding(_)),
        "{wrong}"
    );
    let mut longer = bytes.clone();
    longer.push(0);
    let trailing = b.from_bytes::<ActorRef<EchoMsg>>(&longer).unwrap_err();
    assert!(trailing.to_string().contains("left over"), "{trailing}");
    let (reply, _answer) = troupe::ReplyTo::<u32>::pair(&sys_a, inbox.id(), ASK);
    let refused = a.to_bytes(&reply).unwrap_err();
    assert!(
        matches!(refused, troupe_remote::RemoteError::Encoding(_)),
        "{refused}"
    );

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

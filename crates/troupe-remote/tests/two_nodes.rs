//! Two nodes in one process on one real nats-server: publish, lookup, tell
//! (order kept), ask (answer, no reply, timeout, from a plain thread),
//! unknown and taken names, shutdown, and authentication (user/password,
//! token), a stopped published actor, oversized messages, and a reply
//! handle and a ref that are plain fields (no `serde(with = ..)`).

mod support;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{AskError, Props, TrySendError};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Auth, DeadLetterReason, Node, RemoteConfig, RemoteError, RemoteMessage};

use support::{dead_letter_probe, next_reason, node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tell_keeps_order_and_ask_answers_across_nodes() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();

    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    assert_eq!(remote.name(), Some("echo"));
    let sent: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    for text in &sent {
        remote.tell(EchoMsg::Say(text.clone()));
    }
    remote.try_tell(EchoMsg::Say("last".into())).unwrap();
    // The ask travels behind the tells from the same node: it sees them all.
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    let mut expected = sent.clone();
    expected.push("last".into());
    assert_eq!(history, expected);
    let answer = remote
        .ask(|r| EchoMsg::Echo("hi".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "hi");
    // A lookup from the publishing node itself also goes through NATS.
    let local_view = a.lookup::<EchoMsg>("echo").await.unwrap();
    let answer = local_view
        .ask(|r| EchoMsg::Echo("self".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "self");
    assert_eq!(a.dead_letters_total() + b.dead_letters_total(), 0);
    assert_eq!(b.pending_replies(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_without_answer_fails_fast_or_times_out() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();

    // The far actor drops the handle: NoReply, long before the timeout.
    let started = std::time::Instant::now();
    let dropped = remote.ask(EchoMsg::Drop, Duration::from_secs(30)).await;
    assert!(
        matches!(dropped, Err(AskError::NoReply { .. })),
        "{dropped:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));

    // The far actor keeps the handle: the asker's own timeout.
    let kept = remote.ask(EchoMsg::Keep, Duration::from_millis(200)).await;
    assert!(matches!(kept, Err(AskError::Timeout { .. })), "{kept:?}");

    // `wait` from a plain thread works on a remote ref as on a local one.
    let blocking = remote.clone();
    let answer = tokio::task::spawn_blocking(move || {
        blocking
            .ask(|r| EchoMsg::Echo("wait".into(), r), ASK)
            .wait()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(answer, "wait");

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[derive(Serialize, Deserialize)]
struct Other(u32);

impl RemoteMessage for Other {
    const TAG: &'static str = "other.v1";
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_found_only_when_published_with_the_right_type() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;

    assert_eq!(
        b.lookup::<EchoMsg>("nobody").await.unwrap_err(),
        RemoteError::NotFound("nobody".into())
    );
    assert!(matches!(
        b.lookup::<EchoMsg>("no.dots").await,
        Err(RemoteError::InvalidName(_))
    ));

    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    match b.lookup::<Other>("echo").await {
        Err(RemoteError::TagMismatch { ours, theirs, .. }) => {
            assert_eq!(ours, Other::TAG);
            assert_eq!(theirs, EchoMsg::TAG);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let second = sys_b.spawn(Props::new(Echo::default)).unwrap();
    assert_eq!(
        b.publish("echo", &second).await.unwrap_err(),
        RemoteError::NameTaken("echo".into())
    );

    // Unpublished: the name is gone, and a ref made before sends into the
    // void (NATS drops a message nobody subscribes to: at-most-once); an
    // ask learns it from the server's "no responders" at once: the request
    // reached nobody, so it is Unreachable, not NoReply.
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    assert!(a.unpublish("echo").await);
    let gone = b.lookup::<EchoMsg>("echo").await;
    assert!(
        matches!(gone, Err(RemoteError::NotFound(_))),
        "{:?}",
        gone.map(|_| ())
    );
    let lost = remote
        .ask(|r| EchoMsg::Echo("x".into(), r), Duration::from_secs(30))
        .await;
    assert!(
        matches!(lost, Err(AskError::Unreachable { .. })),
        "{lost:?}"
    );
    assert_eq!(b.pending_replies(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_after_shutdown_are_dead_letters() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    let probe = dead_letter_probe(&b);

    b.shutdown().await;
    remote.tell(EchoMsg::Say("late".into()));
    assert_eq!(next_reason(&probe), DeadLetterReason::NodeStopped);
    assert!(matches!(
        remote.try_tell(EchoMsg::Say("late".into())),
        Err(TrySendError::Closed(_))
    ));
    // An ask through a stopped node fails at once, its handle released:
    // nothing was sent, so the far actor is Unreachable.
    let answer = remote.ask(|r| EchoMsg::Echo("x".into(), r), ASK).await;
    assert!(
        matches!(answer, Err(AskError::Unreachable { .. })),
        "{answer:?}"
    );
    assert_eq!(next_reason(&probe), DeadLetterReason::NodeStopped);
    assert_eq!(b.dead_letter_count(DeadLetterReason::NodeStopped), 2);
    assert_eq!(b.pending_replies(), 0);

    a.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_password_are_required_when_the_server_says_so() {
    let server = NatsServer::start_with(&["--user", "troupe", "--pass", "s3cret"])
        .unwrap_or_else(|e| panic!("{e}"));
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "anonymous");
    config.connect_timeout = Duration::from_secs(2);
    let refused = Node::start(&sys, config.clone()).await;
    assert!(
        matches!(refused, Err(RemoteError::Connect(_))),
        "{:?}",
        refused.err()
    );

    let config = config.auth(Auth::UserPassword {
        user: "troupe".into(),
        password: "s3cret".into(),
    });
    let node = Node::start(&sys, config).await.unwrap();
    let echo = sys.spawn(Props::new(Echo::default)).unwrap();
    node.publish("echo", &echo).await.unwrap();
    let remote = node.lookup::<EchoMsg>("echo").await.unwrap();
    let answer = remote
        .ask(|r| EchoMsg::Echo("auth".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "auth");
    node.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_when_the_server_says_so() {
    let server =
        NatsServer::start_with(&["--auth", "t0ken-for-tests"]).unwrap_or_else(|e| panic!("{e}"));
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "holder");
    config.connect_timeout = Duration::from_secs(2);
    let wrong = config.clone().auth(Auth::Token("guess".into()));
    let refused = Node::start(&sys, wrong).await;
    assert!(
        matches!(refused, Err(RemoteError::Connect(_))),
        "{:?}",
        refused.err()
    );

    let node = Node::start(&sys, config.auth(Auth::Token("t0ken-for-tests".into())))
        .await
        .unwrap();
    let echo = sys.spawn(Props::new(Echo::default)).unwrap();
    node.publish("echo", &echo).await.unwrap();
    let remote = node.lookup::<EchoMsg>("echo").await.unwrap();
    let answer = remote
        .ask(|r| EchoMsg::Echo("token".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "token");
    node.shutdown().await;
    stop(sys);
}

/// Reports on a channel when the watched actor has stopped.
struct Watcher {
    target: troupe::ActorRef<EchoMsg>,
    stopped: std::sync::mpsc::Sender<()>,
}

impl troupe::Actor for Watcher {
    type Msg = ();
    fn started(&mut self, ctx: &mut troupe::Context<'_, Self>) {
        ctx.watch(&self.target);
    }
    fn receive(&mut self, _ctx: &mut troupe::Context<'_, Self>, _msg: ()) {}
    fn signal(&mut self, _ctx: &mut troupe::Context<'_, Self>, signal: troupe::Signal) {
        if let troupe::Signal::Terminated(..) = signal {
            let _ = self.stopped.send(());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_to_a_stopped_published_actor_fails_at_once() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();

    let (stopped_tx, stopped) = std::sync::mpsc::channel();
    let target = echo.clone();
    sys_a
        .spawn(Props::new(move || Watcher {
            target: target.clone(),
            stopped: stopped_tx.clone(),
        }))
        .unwrap();
    sys_a.stop(&echo);
    stopped
        .recv_timeout(Duration::from_secs(10))
        .expect("the echo actor did not stop");

    // Stopped: node a unpublishes it, the frames' subscription before the
    // lookups'. Once b's lookup finds nobody, the server has both
    // unsubscribes, so b's ask through its old ref finds no responders and
    // fails at once, well before its timeout. (Asked while the
    // unsubscribe is on its way, the request may reach a's client just
    // after it forgot the subscription, and be lost: docs/semantics.md.)
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match b.lookup::<EchoMsg>("echo").await {
            Err(RemoteError::NotFound(_)) => break,
            // Found, or a lookup that crossed the unsubscribe (the same
            // loss as the ask's, for the lookup's own timeout): again.
            Ok(_) | Err(RemoteError::Timeout(_)) => {}
            Err(other) => panic!("lookup: {other}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node a did not unpublish the stopped actor"
        );
        tokio::task::yield_now().await;
    }
    let answer = remote
        .ask(
            |r| EchoMsg::Echo("anyone?".into(), r),
            Duration::from_secs(30),
        )
        .await;
    assert!(
        matches!(answer, Err(AskError::Unreachable { .. })),
        "{answer:?}"
    );

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_is_a_dead_letter_and_not_sent() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let mut config = RemoteConfig::new(server.url(), "b");
    config.max_frame_size = 256;
    let b = Node::start(&sys_b, config).await.unwrap();
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let remote = b.lookup::<EchoMsg>("echo").await.unwrap();
    let probe = dead_letter_probe(&b);

    remote.tell(EchoMsg::Say("x".repeat(1000)));
    assert_eq!(next_reason(&probe), DeadLetterReason::Oversized);
    let big = remote
        .ask(|r| EchoMsg::Echo("y".repeat(1000), r), ASK)
        .await;
    // Refused at once, naming the limit.
    match big {
        Err(AskError::Refused { reason, .. }) => {
            assert!(reason.contains("max_frame_size"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(next_reason(&probe), DeadLetterReason::Oversized);
    assert_eq!(b.pending_replies(), 0);
    // Small messages still go, and nothing oversized arrived.
    remote.tell(EchoMsg::Say("small".into()));
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, vec!["small".to_string()]);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

/// A message whose reply handle and ref are plain fields: `ReplyTo` and
/// `ActorRef` serialize themselves (troupe's feature `serde`), no
/// `serde(with = ..)` needed.
#[derive(Serialize, Deserialize)]
enum Plain {
    Double(u64, troupe::ReplyTo<u64>),
    /// Asks `via` to double instead.
    Via(troupe::ActorRef<Plain>, u64, troupe::ReplyTo<u64>),
}

impl RemoteMessage for Plain {
    const TAG: &'static str = "test.plain.v1";
}

struct Doubler;

impl troupe::Actor for Doubler {
    type Msg = Plain;
    fn receive(&mut self, _ctx: &mut troupe::Context<'_, Self>, msg: Plain) {
        match msg {
            Plain::Double(n, reply) => {
                reply.reply(2 * n);
            }
            Plain::Via(via, n, reply) => via.tell(Plain::Double(n, reply)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_reply_to_and_actor_ref_fields_cross_nodes() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let doubler = sys_a.spawn(Props::new(|| Doubler)).unwrap();
    a.publish("doubler", &doubler).await.unwrap();

    let remote = b.lookup::<Plain>("doubler").await.unwrap();
    let answer = remote.ask(|r| Plain::Double(21, r), ASK).await.unwrap();
    assert_eq!(answer, 42);
    // A ref of b's inside the message: a tells it, and it answers the ask.
    let helper = sys_b.spawn(Props::new(|| Doubler)).unwrap();
    let answer = remote
        .ask(|r| Plain::Via(helper.clone(), 5, r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, 10);
    assert_eq!(b.pending_replies(), 0);
    assert_eq!(a.dead_letters_total() + b.dead_letters_total(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

//! A published actor's mailbox is bounded for what other nodes send, by
//! default: while it holds `InboundLimit::messages` messages, or the
//! messages from other nodes that may still wait hold
//! `InboundLimit::bytes`, frames for it are `MailboxFull` dead letters
//! on the receiving node, refused back to the sending node (an ask in one
//! fails at once with `AskError::Refused` naming the bound), whatever
//! mailbox it was
//! spawned with. `inbound_limit = None` turns the bound off. (The memory a
//! flood costs a node process with the default bound: `tests/floods.rs`.)

mod support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use troupe::{Actor, AskError, Context, Props};
use troupe_remote::testing::echo::EchoMsg;
use troupe_remote::{DeadLetterReason, InboundLimit, Node, RemoteConfig};

use support::{node, server, stop, system};

const ASK: Duration = Duration::from_secs(5);

/// Holds its first message until `gate` opens, then remembers what it is
/// told; says when it has taken the first one.
struct Gated {
    started: mpsc::Sender<()>,
    gate: Arc<Mutex<mpsc::Receiver<()>>>,
    said: Vec<String>,
}

impl Actor for Gated {
    type Msg = EchoMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: EchoMsg) {
        if self.said.is_empty() {
            let _ = self.started.send(());
            let _ = self.gate.lock().unwrap().recv();
        }
        match msg {
            EchoMsg::Say(text) => self.said.push(text),
            EchoMsg::History(reply) => {
                reply.reply(self.said.clone());
            }
            _ => {}
        }
    }
}

/// Publishes a gated actor on a node with `limit`, looks it up from a
/// second node, and has the actor hold its first message. Returns the
/// nodes, the remote ref, the gate's opener, and the local ref.
async fn held(
    server: &troupe_remote::testing::NatsServer,
    limit: Option<InboundLimit>,
) -> (
    (troupe::ActorSystem, Node),
    (troupe::ActorSystem, Node),
    troupe::ActorRef<EchoMsg>,
    Opener,
) {
    let sys_a = system();
    let mut config = RemoteConfig::new(server.url(), "a");
    config.inbound_limit = limit;
    let a = Node::start(&sys_a, config).await.unwrap();
    let (started, is_started) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    let actor = sys_a
        .spawn(Props::new(move || Gated {
            started: started.clone(),
            gate: gate.clone(),
            said: Vec::new(),
        }))
        .unwrap();
    a.publish("gated", &actor).await.unwrap();
    let sys_w = system();
    let w = node(&sys_w, server, "w").await;
    let remote = w.lookup::<EchoMsg>("gated").await.unwrap();
    remote.tell(EchoMsg::Say("first".into()));
    is_started.recv_timeout(ASK).expect("the first message");
    ((sys_a, a), (sys_w, w), remote, Opener { open, actor })
}

/// Opens the gate of a held actor.
struct Opener {
    open: mpsc::Sender<()>,
    actor: troupe::ActorRef<EchoMsg>,
}

impl Opener {
    /// Opens the gate and waits (20 s at most) until the actor has taken
    /// every message waiting.
    async fn open(self) {
        self.open.send(()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.actor.queued() > 0 {
            assert!(Instant::now() < deadline, "the mailbox did not drain");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Polls until `node` counts `n` dead letters of `reason` (20 s at most).
async fn until_counted(node: &Node, reason: DeadLetterReason, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while node.dead_letter_count(reason) < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} {reason:?} dead letters within 20 s",
            node.dead_letter_count(reason)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_actor_takes_from_other_nodes_what_its_bound_allows() {
    let server = server();
    let limit = InboundLimit {
        messages: 10,
        bytes: 1 << 20,
    };
    let ((sys_a, a), (sys_w, w), remote, open) = held(&server, Some(limit)).await;
    for i in 0..100 {
        remote.tell(EchoMsg::Say(format!("m{i}")));
    }
    // Ten wait; the other ninety are refused, counted.
    until_counted(&a, DeadLetterReason::MailboxFull, 90).await;
    // An ask finds the mailbox full too: it fails at once.
    let refused = remote.ask(EchoMsg::History, ASK).await;
    assert!(
        matches!(&refused, Err(AskError::Refused { reason, .. }) if reason.contains("inbound_limit")),
        "{refused:?}"
    );
    assert_eq!(a.dead_letter_count(DeadLetterReason::MailboxFull), 91);
    open.open().await;
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    let want: Vec<String> = std::iter::once("first".to_string())
        .chain((0..10).map(|i| format!("m{i}")))
        .collect();
    assert_eq!(history, want);
    assert_eq!(a.dead_letters_total(), 91);

    // Bytes: with room for many messages but 2,000 bytes, four messages
    // of about 450 bytes wait and the rest are refused.
    drop(remote);
    a.shutdown().await;
    w.shutdown().await;
    stop(sys_a);
    stop(sys_w);
    let limit = InboundLimit {
        messages: 1000,
        bytes: 2000,
    };
    let ((sys_a, a), (sys_w, w), remote, open) = held(&server, Some(limit)).await;
    for i in 0..20 {
        remote.tell(EchoMsg::Say(format!("{i:0>450}")));
    }
    until_counted(&a, DeadLetterReason::MailboxFull, 16).await;
    open.open().await;
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history.len(), 1 + 4, "{} said", history.len());
    assert_eq!(a.dead_letter_count(DeadLetterReason::MailboxFull), 16);
    a.shutdown().await;
    w.shutdown().await;
    stop(sys_a);
    stop(sys_w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_bound_everything_waits() {
    let server = server();
    let ((sys_a, a), (sys_w, w), remote, open) = held(&server, None).await;
    for i in 0..100 {
        remote.tell(EchoMsg::Say(format!("m{i}")));
    }
    // The ask goes behind the hundred tells: once the gate opens, its
    // answer holds all of them.
    let history = remote.ask(EchoMsg::History, ASK);
    open.open.send(()).unwrap();
    let history = history.await.unwrap();
    assert_eq!(history.len(), 101);
    assert_eq!(a.dead_letters_total(), 0);
    a.shutdown().await;
    w.shutdown().await;
    stop(sys_a);
    stop(sys_w);
}

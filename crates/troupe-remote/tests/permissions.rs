//! The NATS permissions of docs/operations.md ("Who may talk to a node"),
//! read from that page, on a real nats-server: two nodes, each a user
//! with the page's permissions, work as usual (publish, lookup, tell, ask,
//! death watch with a real `Terminated`, membership, a leave), while the
//! server refuses a stranger's forged leave, heartbeat and `Terminated`
//! and its subscription to a node's control subject (it reports each as a
//! permissions violation, and the nodes see nothing of them), and refuses
//! a node that publishes a leave or a control message under another
//! node's name. What a node may still send as itself is checked by the
//! receiving node (a `Terminated` of another node's actor: `WrongSender`).

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use troupe::{Actor, ActorId, ActorRef, Context, Props, Signal};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Auth, DeadLetterReason, DownReason, MemberEvent, Node, RemoteConfig};

use support::{await_member_event, stop, system};

const ASK: Duration = Duration::from_secs(5);

/// The node user block of docs/operations.md, for `node` of `cluster`.
fn node_user(node: &str, cluster: &str, password: &str) -> String {
    let page = include_str!("../../../docs/operations.md");
    let marker = "<!-- node-permissions";
    let after = &page[page.find(marker).expect("the marker on the page")..];
    let block = &after[after.find("```text\n").expect("the block after the marker") + 8..];
    let block = &block[..block.find("```").expect("the block's end")];
    block
        .replace("<node>", node)
        .replace("<cluster>", cluster)
        .replace("<password>", password)
}

/// A server whose users are nodes `a` and `w` (the page's permissions)
/// and `stranger`, another application's user without troupe's subjects.
fn server_with_permissions(dir: &std::path::Path) -> NatsServer {
    let conf = format!(
        "authorization {{\n  users = [\n{}\n{}\n{{ user: \"stranger\", password: \"s\", \
         permissions: {{ publish: \"other.>\", subscribe: [\"other.>\", \"_INBOX.>\"] }} }}\n  ]\n}}\n",
        node_user("a", "troupe", "pa"),
        node_user("w", "troupe", "pw"),
    );
    let path = dir.join("permissions.conf");
    std::fs::write(&path, conf).unwrap();
    NatsServer::start_with(&["-c", path.to_str().unwrap()]).unwrap_or_else(|e| panic!("{e}"))
}

fn config(server: &NatsServer, node: &str, password: &str) -> RemoteConfig {
    RemoteConfig::new(server.url(), node).auth(Auth::UserPassword {
        user: node.into(),
        password: password.into(),
    })
}

#[derive(Serialize)]
#[allow(dead_code)]
enum Kind {
    Published,
    Exported,
}

/// `src/node/watch.rs`'s control messages, as a forger writes them (only
/// the variant needed, at its index).
#[derive(Serialize)]
#[allow(dead_code)]
enum Control {
    Watch,
    Unwatch,
    Terminated {
        host: String,
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

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "not within 20 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_permissions_keep_strangers_out_and_nodes_to_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_permissions(dir.path());
    let (sys_a, sys_w) = (system(), system());
    let a = Node::start(&sys_a, config(&server, "a", "pa"))
        .await
        .unwrap();
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let w = Node::start(&sys_w, config(&server, "w", "pw"))
        .await
        .unwrap();
    let mut events = w.member_events();

    // The nodes work as usual.
    let remote = w.lookup::<EchoMsg>("echo").await.unwrap();
    remote.tell(EchoMsg::Say("told".into()));
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, vec!["told".to_string()]);
    until("each hears the other", || {
        a.members().len() == 2 && w.members().len() == 2
    })
    .await;
    let (tx, terminated) = mpsc::channel();
    let watcher = sys_w
        .spawn(Props::new(move || Watcher(tx.clone())))
        .unwrap();
    watcher.tell(remote.clone());
    until("w's watch registered at a", || {
        a.footprint().remote_watches == 1
    })
    .await;

    // A stranger of the account: every forged message and its
    // subscription to a's control subject are refused by the server.
    let (violations_tx, violations) = mpsc::channel();
    let stranger =
        async_nats::ConnectOptions::with_user_and_password("stranger".into(), "s".into())
            .event_callback(move |event| {
                let violations_tx = violations_tx.clone();
                async move {
                    if event.to_string().contains("Permissions Violation") {
                        let _ = violations_tx.send(event.to_string());
                    }
                }
            })
            .connect(server.url())
            .await
            .unwrap();
    let incarnation = Bytes::copy_from_slice(&a.incarnation().to_le_bytes());
    let terminated_frame = Bytes::from(
        postcard::to_stdvec(&Control::Terminated {
            host: "a".into(),
            incarnation: a.incarnation(),
            kind: Kind::Published,
            id: "echo".into(),
        })
        .unwrap(),
    );
    let forged = [
        ("troupe.troupe.members.leave.a", incarnation.clone()),
        (
            "troupe.troupe.members.beat.a",
            Bytes::copy_from_slice(&(a.incarnation() ^ 1).to_le_bytes()),
        ),
        ("troupe.troupe.system.w.a", terminated_frame.clone()),
    ];
    for (subject, payload) in &forged {
        stranger.publish(*subject, payload.clone()).await.unwrap();
    }
    let _listening = stranger
        .subscribe("troupe.troupe.system.a.*")
        .await
        .unwrap();
    stranger.flush().await.unwrap();
    let mut refused = Vec::new();
    while refused.len() < forged.len() + 1 {
        refused.push(
            violations
                .recv_timeout(Duration::from_secs(10))
                .expect("the server reported no permissions violation"),
        );
    }
    println!("the server refused the stranger: {refused:#?}");

    // A node publishing as another: refused by the server too.
    let w_client = w.nats_client();
    w_client
        .publish("troupe.troupe.members.leave.a", incarnation)
        .await
        .unwrap();
    w_client
        .publish("troupe.troupe.system.w.a", terminated_frame.clone())
        .await
        .unwrap();
    // As itself, speaking for a: refused by the receiving node.
    w_client
        .publish("troupe.troupe.system.w.w", terminated_frame)
        .await
        .unwrap();
    w_client.flush().await.unwrap();
    until("w's own forgery refused", || {
        w.dead_letter_count(DeadLetterReason::WrongSender) == 1
    })
    .await;

    // Nothing of it reached the nodes' views.
    let ok = remote
        .ask(|r| EchoMsg::Echo("still".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(ok, "still");
    assert!(!remote.is_terminated());
    assert!(terminated.try_recv().is_err());
    assert_eq!(w.members(), vec!["a".to_string(), "w".to_string()]);
    assert_eq!(a.members(), vec!["a".to_string(), "w".to_string()]);
    assert_eq!(w.dead_letters_total(), 1, "only w's own forgery");
    assert_eq!(a.dead_letters_total(), 0);

    // A real Terminated and a real leave still work.
    remote.tell(EchoMsg::Stop);
    assert_eq!(terminated.recv_timeout(ASK).unwrap(), remote.id());
    a.shutdown().await;
    await_member_event(
        &mut events,
        MemberEvent::Down {
            node: "a".into(),
            reason: DownReason::Left,
        },
    )
    .await;

    // A client without credentials does not get in at all.
    assert!(async_nats::connect(server.url()).await.is_err());

    w.shutdown().await;
    stop(sys_a);
    stop(sys_w);
}

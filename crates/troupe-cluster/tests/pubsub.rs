//! Distributed pub-sub across three nodes in this process, on a
//! nats-server of the test's own: every subscriber gets every message,
//! in each publisher's order, whichever node publishes; a group gets each
//! message once in the whole cluster; a stopped or unsubscribed actor gets
//! nothing more; a message that cannot travel is refused at `publish`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props, ReplyTo};
use troupe_cluster::pubsub::{PubSubError, Topic};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

const WAIT: Duration = Duration::from_secs(15);

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Quote {
    from: String,
    seq: u32,
}

impl RemoteMessage for Quote {
    const TAG: &'static str = "troupe-cluster.test.Quote";
}

/// Sends (its name, the quote) for every quote.
struct Listener {
    name: String,
    got: mpsc::UnboundedSender<(String, Quote)>,
}

impl Actor for Listener {
    type Msg = Quote;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, quote: Quote) {
        let _ = self.got.send((self.name.clone(), quote));
    }
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    quotes: Topic<Quote>,
}

impl Member {
    async fn start(server: &NatsServer, name: &str) -> Member {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let node = Arc::new(
            Node::start(&system, RemoteConfig::new(server.url(), name))
                .await
                .unwrap(),
        );
        let quotes = Topic::new(node.clone(), "quotes");
        Member {
            system,
            node,
            quotes,
        }
    }

    fn listener(
        &self,
        name: &str,
        got: &mpsc::UnboundedSender<(String, Quote)>,
    ) -> ActorRef<Quote> {
        let (name, got) = (name.to_string(), got.clone());
        self.system
            .spawn(Props::new(move || Listener {
                name: name.clone(),
                got: got.clone(),
            }))
            .unwrap()
    }

    fn publish(&self, n: u32) {
        for seq in 0..n {
            self.quotes
                .publish(&Quote {
                    from: self.node.name().to_string(),
                    seq,
                })
                .unwrap();
        }
    }

    async fn stop(self) {
        self.node.shutdown().await;
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

/// Receives exactly `n` deliveries (and checks that no more come within a
/// flush of every publisher: see `settled`).
async fn receive(
    got: &mut mpsc::UnboundedReceiver<(String, Quote)>,
    n: usize,
) -> Vec<(String, Quote)> {
    let mut received = Vec::with_capacity(n);
    while received.len() < n {
        let next = tokio::time::timeout(WAIT, got.recv()).await.ok().flatten();
        let (listener, quote) = next.unwrap_or_else(|| {
            let mut by: Vec<&str> = received
                .iter()
                .map(|(l, _): &(String, Quote)| l.as_str())
                .collect();
            by.dedup();
            panic!("only {} of {n} deliveries, to {by:?}", received.len())
        });
        if quote.from != "marker" {
            received.push((listener, quote));
        }
    }
    received
}

/// Fails if anything but markers was delivered since.
fn nothing_more(got: &mut mpsc::UnboundedReceiver<(String, Quote)>, what: &str) {
    while let Ok((listener, quote)) = got.try_recv() {
        assert_eq!(
            quote.from, "marker",
            "{what}: {listener} got #{}",
            quote.seq
        );
    }
}

/// Publishes a marker from `from` to a listener of `to` and waits for it:
/// everything published before it by `from` has been delivered (one
/// connection, one delivering task: order per publisher).
async fn settled(from: &Member, to: &Member) {
    let (tx, mut marks) = mpsc::unbounded_channel();
    let marker = to.listener("marker", &tx);
    let topic = Topic::<Quote>::new(to.node.clone(), "quotes");
    topic.subscribe(&marker).await.unwrap();
    from.quotes
        .publish(&Quote {
            from: "marker".into(),
            seq: 0,
        })
        .unwrap();
    tokio::time::timeout(WAIT, marks.recv())
        .await
        .ok()
        .flatten()
        .expect("the marker did not arrive");
    topic.unsubscribe(&marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_gets_every_message_in_each_publishers_order() {
    let server = NatsServer::start().unwrap();
    let a = Member::start(&server, "a").await;
    let b = Member::start(&server, "b").await;
    let c = Member::start(&server, "c").await;
    let (tx, mut got) = mpsc::unbounded_channel();
    // Two listeners on a, one on b, none on c.
    let (a1, a2, b1) = (
        a.listener("a1", &tx),
        a.listener("a2", &tx),
        b.listener("b1", &tx),
    );
    a.quotes.subscribe(&a1).await.unwrap();
    a.quotes.subscribe(&a2).await.unwrap();
    a.quotes.subscribe(&a2).await.unwrap(); // twice is once
    b.quotes.subscribe(&b1).await.unwrap();
    assert_eq!(a.quotes.subscribers().await, 2);

    c.publish(100);
    a.publish(100);
    let deliveries = receive(&mut got, 3 * 200).await;
    for listener in ["a1", "a2", "b1"] {
        for publisher in ["a", "c"] {
            let seqs: Vec<u32> = deliveries
                .iter()
                .filter(|(l, q)| l == listener && q.from == publisher)
                .map(|(_, q)| q.seq)
                .collect();
            assert_eq!(
                seqs,
                (0..100).collect::<Vec<_>>(),
                "{listener} from {publisher}"
            );
        }
    }
    settled(&c, &a).await;
    settled(&c, &b).await;
    nothing_more(&mut got, "a message was delivered twice");
    assert_eq!(a.quotes.stats().undecodable, 0);
    assert_eq!(c.quotes.stats().published, 100 + 2); // two markers

    // a2 stops, b1 unsubscribes: only a1 gets the next ones.
    a.system.stop(&a2);
    b.quotes.unsubscribe(&b1).await;
    assert_eq!(b.quotes.subscribers().await, 0);
    c.publish(10);
    let after: Vec<String> = receive(&mut got, 10)
        .await
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert!(after.iter().all(|l| l == "a1"), "{after:?}");
    settled(&c, &a).await;
    settled(&c, &b).await;
    nothing_more(&mut got, "a stopped or unsubscribed actor got one");

    for m in [a, b, c] {
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_gets_each_message_once_in_the_cluster() {
    let server = NatsServer::start().unwrap();
    let a = Member::start(&server, "a").await;
    let b = Member::start(&server, "b").await;
    let (tx, mut got) = mpsc::unbounded_channel();
    // A group of three (two on a, one on b) beside a plain subscriber.
    for (m, name) in [(&a, "g-a1"), (&a, "g-a2"), (&b, "g-b1")] {
        let l = m.listener(name, &tx);
        m.quotes.subscribe_in_group("workers", &l).await.unwrap();
    }
    let all = b.listener("all", &tx);
    b.quotes.subscribe(&all).await.unwrap();

    a.publish(300);
    let deliveries = receive(&mut got, 600).await;
    let (group, plain): (Vec<_>, Vec<_>) = deliveries.iter().partition(|(l, _)| l != "all");
    let mut seqs: Vec<u32> = group.iter().map(|(_, q)| q.seq).collect();
    seqs.sort();
    assert_eq!(seqs, (0..300).collect::<Vec<_>>(), "each once to the group");
    assert_eq!(plain.len(), 300);
    // Spread over the group's members (NATS picks a node, then turns on it).
    for name in ["g-a1", "g-a2", "g-b1"] {
        assert!(
            group.iter().any(|(l, _)| l == name),
            "{name} got none of 300"
        );
    }
    settled(&a, &b).await;
    nothing_more(&mut got, "a group message was delivered twice");

    for m in [a, b] {
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_cannot_travel_is_refused_and_counts_nothing() {
    /// A message with a reply handle in it, which cannot be published.
    #[derive(serde::Serialize, serde::Deserialize)]
    enum WithReply {
        Ask(ReplyTo<u32>),
    }
    impl Clone for WithReply {
        fn clone(&self) -> Self {
            unreachable!("never cloned: refused before delivery")
        }
    }
    impl RemoteMessage for WithReply {
        const TAG: &'static str = "troupe-cluster.test.WithReply";
    }
    let server = NatsServer::start().unwrap();
    let a = Member::start(&server, "a").await;
    let topic = Topic::<WithReply>::new(a.node.clone(), "asks");
    let (tx, _got) = mpsc::unbounded_channel();
    let someone = a.listener("someone", &tx);
    let (reply, _answer) = ReplyTo::<u32>::pair(&a.system, someone.id(), WAIT);
    let refused = topic.publish(&WithReply::Ask(reply)).unwrap_err();
    assert!(matches!(refused, PubSubError::Encoding(_)), "{refused}");
    assert_eq!(topic.stats().published, 0);
    a.stop().await;
}

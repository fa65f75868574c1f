//! The cluster receptionist across three nodes in this process, on a
//! nats-server of the test's own: an actor registered under a shared key
//! on any node is listed on every node and reached through the listing;
//! one that stops, and the actors of a node that shuts down, leave every
//! listing; a restarted node's actors are listed again under its name and
//! its earlier incarnation's entry is gone.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use troupe::{Actor, ActorRef, ActorSystem, Context, Listing, Props, ServiceKey};
use troupe_cluster::receptionist::ClusterReceptionist;
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

const WAIT: Duration = Duration::from_secs(15);

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Work(String);

impl RemoteMessage for Work {
    const TAG: &'static str = "troupe-cluster.test.Work";
}

/// Sends the text of every `Work` it gets, after its own name.
struct Worker {
    name: String,
    done: mpsc::UnboundedSender<String>,
}

impl Actor for Worker {
    type Msg = Work;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Work(text): Work) {
        let _ = self.done.send(format!("{}: {text}", self.name));
    }
}

/// Sends (local, remote) counts of every listing it is told.
struct Watcher(mpsc::UnboundedSender<(usize, usize)>);

impl Actor for Watcher {
    type Msg = Listing<Work>;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, listing: Listing<Work>) {
        let remote = listing.refs().iter().filter(|r| r.is_external()).count();
        let _ = self.0.send((listing.len() - remote, remote));
    }
}

fn key() -> ServiceKey<Work> {
    ServiceKey::new("workers")
}

struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    receptionist: ClusterReceptionist,
    listings: mpsc::UnboundedReceiver<(usize, usize)>,
}

impl Member {
    async fn start(server: &NatsServer, name: &str) -> Member {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let mut config = RemoteConfig::new(server.url(), name);
        config.heartbeat_interval = Duration::from_millis(100);
        config.heartbeat_timeout = Duration::from_secs(2);
        let node = Arc::new(Node::start(&system, config).await.unwrap());
        let receptionist = ClusterReceptionist::start(node.clone(), &system)
            .await
            .unwrap();
        receptionist.share(&key()).await.unwrap();
        let (tx, listings) = mpsc::unbounded_channel();
        let watcher = system
            .spawn(Props::new(move || Watcher(tx.clone())))
            .unwrap();
        system.receptionist().subscribe(&key(), watcher);
        Member {
            system,
            node,
            receptionist,
            listings,
        }
    }

    fn worker(&self, name: &str, done: &mpsc::UnboundedSender<String>) -> ActorRef<Work> {
        let (name, done) = (name.to_string(), done.clone());
        let worker = self
            .system
            .spawn(Props::new(move || Worker {
                name: name.clone(),
                done: done.clone(),
            }))
            .unwrap();
        self.system.receptionist().register(&key(), worker.clone());
        worker
    }

    /// Waits for a listing of `local` local and `remote` remote actors.
    async fn until_listed(&mut self, local: usize, remote: usize, what: &str) {
        loop {
            match tokio::time::timeout(WAIT, self.listings.recv()).await {
                Ok(Some(counts)) if counts == (local, remote) => return,
                Ok(Some(_)) => {}
                _ => panic!(
                    "{} never listed {local} local + {remote} remote: {what}",
                    self.node.name()
                ),
            }
        }
    }

    async fn listing(&self) -> Vec<ActorRef<Work>> {
        self.system
            .receptionist()
            .find(&key(), WAIT)
            .await
            .unwrap()
            .into_refs()
    }

    async fn stop(self) {
        self.node.shutdown().await;
        drop(self.receptionist);
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

/// Waits until the receptionist's bucket holds exactly one entry for each
/// of `nodes` (by node name), through a watch of the bucket.
async fn until_entries(node: &Node, nodes: &[&str]) {
    use futures_util::StreamExt;
    let js = async_nats::jetstream::new(node.nats_client());
    let bucket = format!("troupe-receptionist-{}", node.config().cluster_name);
    let kv = js.get_key_value(bucket).await.unwrap();
    let mut watch = kv.watch_with_history(">").await.unwrap();
    let mut keys = std::collections::BTreeMap::new();
    let want: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    let deadline = tokio::time::Instant::now() + WAIT;
    // Judged only once the bucket's current entries are all read.
    let mut current = false;
    loop {
        let mut owners: Vec<String> = keys.values().cloned().collect();
        owners.sort();
        if current && owners == want {
            return;
        }
        let entry = tokio::time::timeout_at(deadline, watch.next())
            .await
            .unwrap_or_else(|_| panic!("the bucket holds entries of {owners:?}, not {want:?}"))
            .unwrap()
            .unwrap();
        // `<tag>.<key>.<node>.<incarnation>.<id>`
        let owner = entry.key.split('.').nth(2).unwrap().to_string();
        current |= entry.delta == 0;
        match entry.operation {
            async_nats::jetstream::kv::Operation::Put => keys.insert(entry.key, owner),
            _ => keys.remove(&entry.key),
        };
    }
}

/// Receives `n` texts, sorted.
async fn received(done: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut got = Vec::with_capacity(n);
    for i in 0..n {
        match tokio::time::timeout(WAIT, done.recv()).await {
            Ok(Some(text)) => got.push(text),
            _ => panic!("only {i} of {n} arrived"),
        }
    }
    got.sort();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_span_the_cluster_and_follow_stops_leaves_and_restarts() {
    let server = NatsServer::start().unwrap();
    let mut a = Member::start(&server, "a").await;
    let mut b = Member::start(&server, "b").await;
    let mut c = Member::start(&server, "c").await;
    let (done, mut texts) = mpsc::unbounded_channel();

    // One worker per node: every node lists its own and the two others.
    let _wa = a.worker("wa", &done);
    let wb = b.worker("wb", &done);
    let _wc = c.worker("wc", &done);
    for m in [&mut a, &mut b, &mut c] {
        m.until_listed(1, 2, "a worker on every node").await;
    }
    // Reached through a's listing: each worker once.
    for worker in a.listing().await {
        worker.tell(Work("from a".into()));
    }
    assert_eq!(
        received(&mut texts, 3).await,
        ["wa: from a", "wb: from a", "wc: from a"]
    );

    // b's worker stops: it leaves every listing (b's own included).
    b.system.stop(&wb);
    a.until_listed(1, 1, "wb stopped").await;
    c.until_listed(1, 1, "wb stopped").await;
    b.until_listed(0, 2, "wb stopped").await;

    // c shuts down without leaving the receptionist: its worker leaves
    // the others' listings when c is known to be gone.
    c.stop().await;
    a.until_listed(1, 0, "c gone").await;
    b.until_listed(0, 1, "c gone").await;

    // c again, a new incarnation with a new worker: listed everywhere,
    // and only it (the entry of c's first life was cleaned up).
    let mut c = Member::start(&server, "c").await;
    let _wc2 = c.worker("wc2", &done);
    c.until_listed(1, 1, "c restarted").await;
    a.until_listed(1, 1, "c restarted").await;
    until_entries(&a.node, &["a", "c"]).await;
    for worker in b.listing().await {
        worker.tell(Work("from b".into()));
    }
    assert_eq!(received(&mut texts, 2).await, ["wa: from b", "wc2: from b"]);

    // A node that leaves the receptionist takes its entries with it,
    // before its node is gone.
    a.receptionist.leave().await;
    b.until_listed(0, 1, "a left").await;
    c.until_listed(1, 0, "a left").await;
    until_entries(&b.node, &["c"]).await;

    for m in [a, b, c] {
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_of_a_node_nobody_hears_is_never_listed_and_is_deleted() {
    let server = NatsServer::start().unwrap();
    let mut a = Member::start(&server, "a").await;
    let (done, _texts) = mpsc::unbounded_channel();
    let wa = a.worker("wa", &done);
    a.until_listed(1, 0, "a's own worker").await;
    until_entries(&a.node, &["a"]).await;
    // An entry as a node "ghost" (stopped with the rest of an earlier
    // cluster) would have left it: a live ref, under a node nobody hears.
    let js = async_nats::jetstream::new(a.node.nats_client());
    let kv = js
        .get_key_value(format!(
            "troupe-receptionist-{}",
            a.node.config().cluster_name
        ))
        .await
        .unwrap();
    let own = kv.keys().await.unwrap();
    let own: Vec<String> = futures_util::TryStreamExt::try_collect(own).await.unwrap();
    let ghost = own[0].replace(".a.", ".ghost.");
    kv.put(ghost, a.node.to_bytes(&wa).unwrap().into())
        .await
        .unwrap();
    // b starts and shares the key: it lists a's worker only, and deletes
    // the ghost's entry a heartbeat timeout (2 s) after seeing it.
    let mut b = Member::start(&server, "b").await;
    b.until_listed(0, 1, "a's worker").await;
    until_entries(&a.node, &["a"]).await;
    assert!(
        b.listings.try_recv().is_err(),
        "the ghost's entry was listed"
    );
    for m in [a, b] {
        m.stop().await;
    }
}

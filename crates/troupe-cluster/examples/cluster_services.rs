//! Finding workers and announcing results across three nodes: each node
//! runs two workers and registers them under one service key with the
//! cluster receptionist, so every node lists all six; node-a hands out
//! jobs to whatever workers are listed; each worker publishes what it did
//! on a topic, and an auditor on node-c, subscribed to it, counts every
//! job once. Then node-b leaves: its workers drop off every listing, and
//! the next jobs go to the four that remain.
//!
//! The three nodes run in this process (each its own actor system and
//! troupe-remote node), so the example runs alone; in production each is
//! its own process or host, with the same code.
//!
//! Run: `cargo run -p troupe-cluster --example cluster_services [nats url]`.
//! Without a URL it starts a nats-server of its own (JetStream on): the
//! binary `NATS_SERVER` names, or the first on `PATH`; in this repository,
//! `NATS_SERVER=$(scripts/nats-server.sh)` gives it the pinned one.
//!
//! In a crate of your own (this file as `src/main.rs`) it needs
//! troupe-remote's feature `launcher`, for that server: guide page 15
//! (`docs/guide/`) gives the dependency lines.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};
use troupe::{Actor, ActorSystem, Context, Listing, Props, ServiceKey};
use troupe_cluster::pubsub::Topic;
use troupe_cluster::receptionist::ClusterReceptionist;
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

/// A job for a worker on any node.
#[derive(Serialize, Deserialize)]
struct Job(u32);

impl RemoteMessage for Job {
    const TAG: &'static str = "example.Job";
}

/// What a worker announces on the `jobs-done` topic.
#[derive(Clone, Serialize, Deserialize)]
struct Done {
    job: u32,
    worker: String,
}

impl RemoteMessage for Done {
    const TAG: &'static str = "example.Done";
}

fn workers() -> ServiceKey<Job> {
    ServiceKey::new("workers")
}

struct Worker {
    name: String,
    done: Topic<Done>,
}

impl Actor for Worker {
    type Msg = Job;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Job(job): Job) {
        // Publishing does not block the handler; it fails only if the
        // message cannot be encoded or 65,536 wait for NATS.
        self.done
            .publish(&Done {
                job,
                worker: self.name.clone(),
            })
            .expect("publish");
    }
}

/// Keeps the number of listed workers in a watch channel.
struct Counter(watch::Sender<usize>);

impl Actor for Counter {
    type Msg = Listing<Job>;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, listing: Listing<Job>) {
        let _ = self.0.send(listing.len());
    }
}

/// Hands every announcement to the main task.
struct Auditor(mpsc::UnboundedSender<Done>);

impl Actor for Auditor {
    type Msg = Done;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, done: Done) {
        let _ = self.0.send(done);
    }
}

/// One node: its actor system, NATS node, receptionist and topic.
struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    receptionist: ClusterReceptionist,
    done: Topic<Done>,
    listed: watch::Receiver<usize>,
}

async fn join(url: &str, name: &str) -> Result<Member, Box<dyn std::error::Error>> {
    let system = ActorSystem::builder().threads(1).build()?;
    let node = Arc::new(Node::start(&system, RemoteConfig::new(url, name)).await?);
    // Every node that wants the cluster's listing of a key shares it.
    let receptionist = ClusterReceptionist::start(node.clone(), &system).await?;
    receptionist.share(&workers()).await?;
    let done = Topic::<Done>::new(node.clone(), "jobs-done");
    for i in 0..2 {
        let (name, done) = (format!("{name}/w{i}"), done.clone());
        let worker = system.spawn(Props::new(move || Worker {
            name: name.clone(),
            done: done.clone(),
        }))?;
        system.receptionist().register(&workers(), worker);
    }
    let (count, listed) = watch::channel(0);
    let counter = system.spawn(Props::new(move || Counter(count.clone())))?;
    system.receptionist().subscribe(&workers(), counter);
    Ok(Member {
        system,
        node,
        receptionist,
        done,
        listed,
    })
}

/// Sends jobs `jobs` from `via` to its listed workers in turn.
async fn hand_out(
    via: &Member,
    jobs: std::ops::Range<u32>,
) -> Result<(), Box<dyn std::error::Error>> {
    let listing = via
        .system
        .receptionist()
        .find(&workers(), Duration::from_secs(5))
        .await?;
    for job in jobs {
        let worker = &listing.refs()[job as usize % listing.len()];
        worker.tell(Job(job));
    }
    Ok(())
}

/// Receives `n` announcements; returns how many jobs each node's workers did.
async fn audit(
    seen: &mut mpsc::UnboundedReceiver<Done>,
    n: usize,
    jobs: &mut BTreeMap<u32, String>,
) -> BTreeMap<String, usize> {
    let mut per_node = BTreeMap::new();
    for _ in 0..n {
        let done = tokio::time::timeout(Duration::from_secs(10), seen.recv())
            .await
            .expect("an announcement did not arrive")
            .expect("the auditor stopped");
        let node = done
            .worker
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        *per_node.entry(node).or_insert(0) += 1;
        let twice = jobs.insert(done.job, done.worker);
        assert!(twice.is_none(), "job {} announced twice", done.job);
    }
    per_node
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A NATS URL from the command line, or a server of our own.
    let (_server, url) = match std::env::args().nth(1) {
        Some(url) => (None, url),
        None => {
            let binary = troupe_remote::launcher::find_binary(None)?;
            let server = troupe_remote::launcher::NatsServer::launch(&binary, &[])?;
            let url = server.url();
            (Some(server), url)
        }
    };
    let mut members = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        members.push(join(&url, name).await?);
    }
    // The auditor on node-c; `subscribe` returns once the subscription
    // is in place, so nothing published after it is missed.
    let (tx, mut seen) = mpsc::unbounded_channel();
    let auditor = members[2]
        .system
        .spawn(Props::new(move || Auditor(tx.clone())))?;
    members[2].done.subscribe(&auditor).await?;
    // Every node lists all six workers.
    for m in &mut members {
        m.listed.wait_for(|n| *n == 6).await?;
    }
    println!("every node lists 6 workers");

    let mut jobs = BTreeMap::new();
    hand_out(&members[0], 0..60).await?;
    let per_node = audit(&mut seen, 60, &mut jobs).await;
    println!("60 jobs done, per node: {per_node:?}");
    assert_eq!(per_node.len(), 3, "workers of all three nodes did jobs");

    // node-b leaves: its entries go, and its workers leave every listing.
    let leaving = members.remove(1);
    leaving.receptionist.leave().await;
    leaving.node.shutdown().await;
    leaving.system.shutdown();
    leaving.system.await_termination()?;
    for m in &mut members {
        m.listed.wait_for(|n| *n == 4).await?;
    }
    println!("after node-b left, every node lists 4 workers");
    hand_out(&members[0], 60..100).await?;
    let per_node = audit(&mut seen, 40, &mut jobs).await;
    println!("40 more jobs done, per node: {per_node:?}");
    assert!(!per_node.contains_key("node-b"));
    assert_eq!(jobs.len(), 100, "every job announced once");
    println!("every job done once and announced once");

    for m in members {
        m.receptionist.leave().await;
        m.node.shutdown().await;
        m.system.shutdown();
        m.system.await_termination()?;
    }
    Ok(())
}

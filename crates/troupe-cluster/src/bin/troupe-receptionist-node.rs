//! A node process for the receptionist's cross-process tests: joins NATS
//! with a short heartbeat (100 ms, declared down after 1 s), shares the
//! key `workers` (of `Work`, tag `troupe-cluster.test.Work`) through the
//! cluster receptionist, registers one worker under it, and prints `ready` on stdout once it
//! has.
//!
//! It leaves the receptionist and exits when its standard input closes.
//! Run it by hand with `cargo run -p troupe-cluster --features testing
//! --bin troupe-receptionist-node -- <nats url> <node name>`.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, Context, Props, ServiceKey};
use troupe_cluster::receptionist::ClusterReceptionist;
use troupe_cluster::testing::say;
use troupe_remote::{Node, RemoteConfig};

/// The worker's message; the tests only look the worker up.
#[derive(serde::Serialize, serde::Deserialize)]
struct Work(String);

impl troupe_remote::RemoteMessage for Work {
    const TAG: &'static str = "troupe-cluster.test.Work";
}

/// A worker that does nothing: the tests are about its listing.
struct Worker;

impl Actor for Worker {
    type Msg = Work;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: Work) {}
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, node_name] = args.as_slice() else {
        return Err("usage: troupe-receptionist-node <nats url> <node name>".into());
    };
    let system = ActorSystem::builder().threads(1).build()?;
    let mut config = RemoteConfig::new(url, node_name);
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_secs(1);
    let node = Arc::new(Node::start(&system, config).await?);
    let receptionist = ClusterReceptionist::start(node.clone(), &system).await?;
    let workers = ServiceKey::<Work>::new("workers");
    receptionist.share(&workers).await?;
    let worker = system.spawn(Props::new(|| Worker))?;
    system.receptionist().register(&workers, worker);
    say("ready");
    // Block a runtime thread until the driver closes our stdin.
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    receptionist.leave().await;
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

//! A node process for the singleton's cross-process tests: joins NATS with
//! a short heartbeat (100 ms, declared down after 1 s), joins the singleton
//! `probe`, and prints on stdout, one per line:
//!
//! * `status holding <token>`, `status following <node>`, `status vacant`
//!   as its view changes;
//! * `instance started <token>` and `instance stopped <token>` as the
//!   instance it runs starts and stops.
//!
//! It leaves the singleton (handing it over) and exits when its standard
//! input closes. Run it by hand with `cargo run -p troupe-cluster --features
//! testing --bin troupe-singleton-node -- <nats url> <node name>`.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, Context, Props};
use troupe_cluster::singleton::{Singleton, SingletonSettings, SingletonStatus};
use troupe_cluster::testing::say;
use troupe_remote::{Node, RemoteConfig};

/// The probe's message: nothing to do; the instance only reports its life.
#[derive(serde::Serialize, serde::Deserialize)]
struct Nothing;

impl troupe_remote::RemoteMessage for Nothing {
    const TAG: &'static str = "troupe-cluster.test.Nothing";
}

/// An instance that prints when it starts and stops.
struct Probe {
    token: u64,
}

impl Actor for Probe {
    type Msg = Nothing;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        say(&format!("instance started {}", self.token));
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: Nothing) {}

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        say(&format!("instance stopped {}", self.token));
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, node_name] = args.as_slice() else {
        return Err("usage: troupe-singleton-node <nats url> <node name>".into());
    };
    let system = ActorSystem::builder().threads(1).build()?;
    let mut config = RemoteConfig::new(url, node_name);
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_secs(1);
    let node = Arc::new(Node::start(&system, config).await?);
    let singleton = Singleton::start(
        node.clone(),
        &system,
        SingletonSettings::new("probe"),
        |token| Props::new(move || Probe { token }),
    )
    .await?;
    let mut status = singleton.status_changes();
    let printer = tokio::spawn(async move {
        loop {
            let line = match &*status.borrow_and_update() {
                SingletonStatus::Holding { token } => format!("status holding {token}"),
                SingletonStatus::Following { node } => format!("status following {node}"),
                SingletonStatus::Vacant => "status vacant".to_string(),
            };
            say(&line);
            if status.changed().await.is_err() {
                return;
            }
        }
    });
    // Block a runtime thread until the driver closes our stdin.
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    singleton.leave().await;
    printer.abort();
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

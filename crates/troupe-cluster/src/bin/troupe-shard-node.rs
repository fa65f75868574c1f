//! A node process for the sharding's cross-process tests: joins NATS with
//! a short heartbeat (100 ms, declared down after 1 s), runs a region of
//! the entity type `probe` (12 shards, no passivation, no rebalancing),
//! and prints on stdout, one per line:
//!
//! * `ready` once its region runs;
//! * `entity started <id> <token>` and `entity stopped <id> <token>` as
//!   the entities it runs start and stop.
//!
//! An entity answers [`Where`] with its node's name and its fencing token.
//! The node leaves (handing its shards over) and exits when its standard
//! input closes. Run it by hand with `cargo run -p troupe-cluster
//! --features testing --bin troupe-shard-node -- <nats url> <node name>`.

use std::io::Read;
use std::sync::Arc;

use troupe::{Actor, ActorSystem, Context, Props};
use troupe_cluster::sharding::ShardRegion;
use troupe_cluster::testing::{say, Where};
use troupe_remote::Node;

/// An entity that prints when it starts and stops.
struct Probe {
    id: String,
    node: String,
    token: u64,
}

impl Actor for Probe {
    type Msg = Where;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        say(&format!("entity started {} {}", self.id, self.token));
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Where::Ask(reply): Where) {
        reply.reply((self.node.clone(), self.token));
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        say(&format!("entity stopped {} {}", self.id, self.token));
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, node_name] = args.as_slice() else {
        return Err("usage: troupe-shard-node <nats url> <node name>".into());
    };
    // Logs on stderr, tagged with the node, when RUST_LOG asks for them.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let system = ActorSystem::builder().threads(1).build()?;
    let node =
        Arc::new(Node::start(&system, troupe_cluster::testing::config(url, node_name)).await?);
    let here = node_name.clone();
    let region = ShardRegion::<Where>::start(
        node.clone(),
        &system,
        troupe_cluster::testing::probe_settings(),
        move |entity| {
            let (id, node, token) = (entity.id.clone(), here.clone(), entity.token);
            Props::new(move || Probe {
                id: id.clone(),
                node: node.clone(),
                token,
            })
        },
    )
    .await?;
    say("ready");
    // Block a runtime thread until the driver closes our stdin.
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    region.leave().await;
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

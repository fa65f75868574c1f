//! A node process for the sharding's cross-process tests: joins NATS with
//! a short heartbeat (100 ms, declared down after 1 s), runs a region of
//! the entity type `probe` (12 shards, no passivation, no rebalancing),
//! and prints on stdout, one per line:
//!
//! * `ready` once its region runs;
//! * `entity started <id> <token>` and `entity stopped <id> <token>` as
//!   the entities it runs start and stop;
//! * `shards <n>` whenever the number of shards it owns changes (looked
//!   at every 20 ms).
//!
//! An entity answers [`Where`] with its node's name and its fencing token.
//! The node leaves (handing its shards over) and exits when its standard
//! input closes. Run it by hand with `cargo run -p troupe-cluster
//! --features testing --bin troupe-shard-node -- <nats url> <node name>
//! [<heartbeat interval ms> <heartbeat timeout ms> <rebalance interval
//! ms>]`: the three numbers replace the short heartbeat and turn
//! rebalancing on.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

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
    let usage = "usage: troupe-shard-node <nats url> <node name> \
                 [<heartbeat interval ms> <heartbeat timeout ms> <rebalance interval ms>]";
    let (url, node_name, timing) = match args.as_slice() {
        [url, name] => (url, name, None),
        [url, name, beat, timeout, rebalance] => {
            let ms = |s: &String| s.parse::<u64>().map(Duration::from_millis);
            (url, name, Some((ms(beat)?, ms(timeout)?, ms(rebalance)?)))
        }
        _ => return Err(usage.into()),
    };
    // Logs on stderr, tagged with the node, when RUST_LOG asks for them.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let system = ActorSystem::builder().threads(1).build()?;
    let mut config = troupe_cluster::testing::config(url, node_name);
    let mut settings = troupe_cluster::testing::probe_settings();
    if let Some((beat, timeout, rebalance)) = timing {
        config.heartbeat_interval = beat;
        config.heartbeat_timeout = timeout;
        settings.rebalance_interval = Some(rebalance);
    }
    let node = Arc::new(Node::start(&system, config).await?);
    let here = node_name.clone();
    let region = ShardRegion::<Where>::start(node.clone(), &system, settings, move |entity| {
        let (id, node, token) = (entity.id.clone(), here.clone(), entity.token);
        Props::new(move || Probe {
            id: id.clone(),
            node: node.clone(),
            token,
        })
    })
    .await?;
    say("ready");
    // Block a runtime thread until the driver closes our stdin; meanwhile
    // say how many shards this node owns whenever that changes.
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    });
    tokio::pin!(stdin_closed);
    let mut owned = None;
    loop {
        tokio::select! {
            closed = &mut stdin_closed => {
                closed?;
                break;
            }
            _ = tokio::time::sleep(Duration::from_millis(20)) => {
                let now = region.stats().shards;
                if owned != Some(now) {
                    owned = Some(now);
                    say(&format!("shards {now}"));
                }
            }
        }
    }
    region.leave().await;
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

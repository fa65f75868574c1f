//! The second process of the remote experiment: `troupe-bench remote-echo
//! --transport troupe|nats --url URL` serves the echo side of every
//! workload until its standard input closes (so it never outlives the
//! bench). [`EchoProcess`] starts it and waits for its `ready` line.
//!
//! Both transports get the same thread budget, two threads for the work:
//! troupe a one-worker tokio runtime for the node plus a one-thread actor
//! system; raw NATS a two-worker tokio runtime.

use std::error::Error;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use troupe::{Actor, ActorSystem, Context, Props};
use troupe_remote::{Node, RemoteConfig};

use troupe_cluster::sharding::{ShardRegion, ShardingSettings};

use super::protocol::{raw, BenchMsg, StreamCheck, ECHO, SHARDED, SUBJECT};
use super::Transport;
use crate::child::Child;
use crate::runner::WorkloadError;

/// A running echo process; dropping it closes its stdin and reaps it.
pub struct EchoProcess {
    _child: Child,
}

impl EchoProcess {
    /// Starts the echo process for `transport` on the server at `url` and
    /// waits (up to a minute) until it serves.
    pub fn start(transport: Transport, url: &str) -> Result<EchoProcess, WorkloadError> {
        let args = ["remote-echo", "--transport", transport.name(), "--url", url];
        let what = format!("the {} echo process", transport.name());
        let mut child = Child::start(&args, &what)?;
        child.expect("ready", Duration::from_secs(60))?;
        Ok(EchoProcess { _child: child })
    }
}

/// Runs in the echo process: serves until stdin closes.
pub fn serve(transport: Transport, url: &str) -> Result<(), Box<dyn Error>> {
    match transport {
        Transport::Troupe => serve_troupe(url),
        Transport::Sharded => serve_sharded(url),
        Transport::Nats => serve_nats(url),
    }
}

/// Prints `ready` and returns a receiver that yields once stdin closes.
fn ready() -> Result<tokio::sync::oneshot::Receiver<()>, Box<dyn Error>> {
    let (closed, on_closed) = tokio::sync::oneshot::channel();
    let mut out = std::io::stdout();
    writeln!(out, "ready")?;
    out.flush()?;
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        let _ = closed.send(());
    });
    Ok(on_closed)
}

/// The echo actor: answers pings and marks, checks the stream, tells
/// how its node batched the answers.
struct Echo {
    check: StreamCheck,
    node: Arc<Node>,
}

impl Echo {
    fn new(node: &Arc<Node>) -> Echo {
        Echo {
            check: StreamCheck::default(),
            node: node.clone(),
        }
    }
}

impl Actor for Echo {
    type Msg = BenchMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: BenchMsg) {
        match msg {
            BenchMsg::Ping(seq, _, reply) => {
                reply.reply(seq);
            }
            BenchMsg::Data(seq, _) => self.check.arrived(seq),
            BenchMsg::Mark(reply) => {
                reply.reply(self.check.seen());
            }
            BenchMsg::Reset => self.check.reset(),
            BenchMsg::Batches(reply) => {
                let stats = self.node.batch_stats();
                reply.reply((stats.frames, stats.buckets.to_vec()));
            }
        }
    }
}

fn serve_troupe(url: &str) -> Result<(), Box<dyn Error>> {
    on_node(url, async |node, system| {
        let for_echo = node.clone();
        let echo = system.spawn(Props::new(move || Echo::new(&for_echo)))?;
        node.publish(ECHO, &echo).await?;
        let _ = ready()?.await;
        Ok(())
    })
}

/// The sharded echo: a region of the type [`SHARDED`] whose entities are
/// echo actors (the bench talks to one, [`ECHO`]).
fn serve_sharded(url: &str) -> Result<(), Box<dyn Error>> {
    on_node(url, async |node, system| {
        let for_echo = node.clone();
        let region =
            ShardRegion::<BenchMsg>::start(node.clone(), system, sharded_settings(), move |_| {
                let node = for_echo.clone();
                Props::new(move || Echo::new(&node))
            })
            .await?;
        let _ = ready()?.await;
        region.leave().await;
        Ok(())
    })
}

/// Serves with `serve` on a node of its own, the troupe transports' thread
/// budget: a one-worker tokio runtime for the node and a one-thread actor
/// system; `serve` returns when the bench closes stdin, and the node and
/// the system shut down.
fn on_node(
    url: &str,
    serve: impl AsyncFnOnce(&Arc<Node>, &ActorSystem) -> Result<(), Box<dyn Error>>,
) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let system = ActorSystem::builder().threads(1).build()?;
    runtime.block_on(async {
        let node = Arc::new(Node::start(&system, RemoteConfig::new(url, "bench-echo-node")).await?);
        serve(&node, &system).await?;
        node.shutdown().await;
        Ok::<(), Box<dyn Error>>(())
    })?;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

/// The sharded echo's settings, the same on both sides: no passivation
/// or rebalancing during a run.
pub fn sharded_settings() -> ShardingSettings {
    let mut settings = ShardingSettings::new(SHARDED);
    settings.passivate_after = None;
    settings.rebalance_interval = None;
    settings
}

fn serve_nats(url: &str) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = async_nats::connect(url).await?;
        let mut messages = client.subscribe(SUBJECT).await?;
        // The subscription is registered once the server has answered.
        client.flush().await?;
        let mut closed = ready()?;
        let mut check = StreamCheck::default();
        loop {
            let msg = tokio::select! {
                _ = &mut closed => break,
                msg = messages.next() => match msg {
                    Some(msg) => msg,
                    None => break,
                },
            };
            let Some((kind, seq)) = raw::decode(&msg.payload) else {
                continue;
            };
            match (kind, msg.reply) {
                (raw::PING, Some(reply)) => {
                    client
                        .publish(reply, seq.to_le_bytes().to_vec().into())
                        .await?;
                }
                (raw::DATA, _) => check.arrived(seq),
                (raw::MARK, Some(reply)) => {
                    let seen = check.seen();
                    let mut answer = seen.count.to_le_bytes().to_vec();
                    answer.extend_from_slice(&seen.out_of_order.to_le_bytes());
                    client.publish(reply, answer.into()).await?;
                }
                (raw::RESET, _) => check.reset(),
                _ => {}
            }
        }
        Ok::<(), Box<dyn Error>>(())
    })
}

//! An example node process: joins NATS, publishes an echo actor, prints
//! `ready` on stdout, and leaves when its standard input closes. The
//! cross-process tests drive it; run it by hand with
//! `cargo run -p troupe-remote --features testing --bin troupe-remote-echo
//! -- <nats url> <node name> <published name> [slow]` (it serves the
//! test-support echo actor, so it is built with the `testing` feature only).
//!
//! With `slow`, the published actor takes a millisecond per message and
//! answers an `Echo` with how many `Say` messages it has handled (a slow
//! consumer, for the tests of what floods cost). A line `stats` on its
//! standard input makes it print one line: its dead letters by reason and
//! its footprint (`Node::footprint`).

use std::io::{BufRead, Write};
use std::time::Duration;

use troupe::{Actor, ActorSystem, Context, Props};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{DeadLetterReason, Node, RemoteConfig};

/// Every reason, for the `stats` line.
const REASONS: [DeadLetterReason; 22] = [
    DeadLetterReason::Truncated,
    DeadLetterReason::Oversized,
    DeadLetterReason::BadVersion,
    DeadLetterReason::Malformed,
    DeadLetterReason::UnknownTag,
    DeadLetterReason::Undecodable,
    DeadLetterReason::UnknownName,
    DeadLetterReason::UnknownReply,
    DeadLetterReason::EncodeFailed,
    DeadLetterReason::OutboundFull,
    DeadLetterReason::OverMaxPayload,
    DeadLetterReason::NoResponders,
    DeadLetterReason::Unreachable,
    DeadLetterReason::NodeStopped,
    DeadLetterReason::WrongIncarnation,
    DeadLetterReason::Terminated,
    DeadLetterReason::NodeDown,
    DeadLetterReason::SlowConsumer,
    DeadLetterReason::Unconfirmed,
    DeadLetterReason::WrongSender,
    DeadLetterReason::OverCapacity,
    DeadLetterReason::MailboxFull,
];

/// A slow echo: a millisecond per message; `Echo` answers how many `Say`
/// messages it has handled.
#[derive(Default)]
struct Slow {
    said: u64,
}

impl Actor for Slow {
    type Msg = EchoMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: EchoMsg) {
        // Stands for real work; the process exists to be a slow consumer.
        std::thread::sleep(Duration::from_millis(1));
        match msg {
            EchoMsg::Say(_) => self.said += 1,
            EchoMsg::Echo(_, reply) => {
                reply.reply(self.said.to_string());
            }
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, node_name, published, slow) = match args.as_slice() {
        [url, node, name] => (url, node, name, false),
        [url, node, name, slow] if slow == "slow" => (url, node, name, true),
        _ => {
            return Err(
                "usage: troupe-remote-echo <nats url> <node name> <published name> [slow]".into(),
            )
        }
    };
    let system = ActorSystem::builder().threads(1).build()?;
    let node = Node::start(&system, RemoteConfig::new(url, node_name)).await?;
    if slow {
        let actor = system.spawn(Props::new(Slow::default))?;
        node.publish(published, &actor).await?;
    } else {
        let echo = system.spawn(Props::new(Echo::default))?;
        node.publish(published, &echo).await?;
    }
    println!("ready");
    std::io::stdout().flush()?;
    // Read commands on a runtime thread until the driver closes our stdin.
    let node = std::sync::Arc::new(node);
    let reading = node.clone();
    tokio::task::spawn_blocking(move || {
        for line in std::io::stdin().lock().lines() {
            match line.as_deref().map(str::trim) {
                Ok("stats") => print_stats(&reading),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    })
    .await?;
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

/// One line: `total=<n> <Reason>=<n>… members=<n> …`.
fn print_stats(node: &Node) {
    let mut line = format!("total={}", node.dead_letters_total());
    for reason in REASONS {
        let count = node.dead_letter_count(reason);
        if count > 0 {
            line.push_str(&format!(" {reason:?}={count}"));
        }
    }
    let f = node.footprint();
    line.push_str(&format!(
        " members={} down_incarnations={} dead_incarnations={} remote_watches={} confirming={} forgotten={}",
        f.members, f.down_incarnations, f.dead_incarnations, f.remote_watches, f.confirming, f.forgotten
    ));
    println!("{line}");
    let _ = std::io::stdout().flush();
}

//! An example node process: joins NATS, publishes an echo actor, prints
//! `ready` on stdout, and leaves when its standard input closes. The
//! cross-process test drives it; run it by hand with
//! `cargo run -p troupe-remote --features testing --bin troupe-remote-echo
//! -- <nats url> <node name> <published name>` (it serves the test-support
//! echo actor, so it is built with the `testing` feature only).

use std::io::{Read, Write};

use troupe::{ActorSystem, Props};
use troupe_remote::testing::echo::Echo;
use troupe_remote::{Node, RemoteConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, node_name, published] = args.as_slice() else {
        return Err("usage: troupe-remote-echo <nats url> <node name> <published name>".into());
    };
    let system = ActorSystem::builder().threads(1).build()?;
    let node = Node::start(&system, RemoteConfig::new(url, node_name)).await?;
    let echo = system.spawn(Props::new(Echo::default))?;
    node.publish(published, &echo).await?;
    println!("ready");
    std::io::stdout().flush()?;
    // Block a runtime thread until the driver closes our stdin.
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    node.shutdown().await;
    system.shutdown();
    system.await_termination()?;
    Ok(())
}

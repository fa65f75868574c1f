//! The echo process: `troupe-rust-peers-remote ractor remote-echo
//! --threads 2`. It runs a ractor_cluster node on a free port of
//! 127.0.0.1, an echo actor in the process group [`GROUP`], prints
//! `LISTENING <port>` and serves until its standard input closes (so it
//! never outlives the driver that started it).

use std::io::{Read, Write};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::args::Args;
use crate::harness::tokio_runtime;
use crate::node::{free_port, start, EchoMsg, GROUP};

/// Answers every ping with its sequence number.
struct Echo;

impl Actor for Echo {
    type Msg = EchoMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, myself: ActorRef<EchoMsg>, _: ()) -> Result<(), ActorProcessingErr> {
        // How ractor_cluster's examples make an actor reachable from
        // other nodes: a process group, synchronised across the cluster.
        ractor::pg::join(GROUP.to_string(), vec![myself.get_cell()]);
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<EchoMsg>,
        EchoMsg::Ping(seq, _payload, reply): EchoMsg,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        reply.send(seq)?;
        Ok(())
    }
}

/// Serves until stdin closes.
pub fn serve(a: &Args) -> Result<(), String> {
    let rt = tokio_runtime(a.threads()?)?;
    rt.block_on(async {
        // The port was free when probed; another process may take it
        // before the node binds it, so a few tries.
        let mut tries = 0;
        let (node, port) = loop {
            let port = free_port()?;
            match start("echo", port).await {
                Ok(node) => break (node, port),
                Err(why) if tries < 3 => {
                    tries += 1;
                    eprintln!("ractor echo: {why}; another port");
                }
                Err(why) => return Err(why),
            }
        };
        let (echo, echo_done) = Actor::spawn(None, Echo, ())
            .await
            .map_err(|e| format!("the echo actor did not start: {e}"))?;
        let (closed, on_closed) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            let _ = closed.send(());
        });
        let mut out = std::io::stdout();
        writeln!(out, "LISTENING {port}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write to stdout: {e}"))?;
        let _ = on_closed.await;
        echo.stop(None);
        let _ = echo_done.await;
        node.stop(None);
        Ok(())
    })
}

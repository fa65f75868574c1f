//! What both processes share: the echo's message (a `RactorClusterMessage`,
//! so ractor_cluster can carry it between nodes), the process group the
//! echo joins, and the ractor_cluster node each process runs.
//!
//! Written as ractor_cluster's documentation and examples do: a
//! `NodeServer` actor per process (its own TCP listener, raw TCP, no TLS,
//! the `Isolated` connection mode: only the peer it is told about), the
//! driver's `client_connect` to the echo's port, and the echo found as the
//! remote member of a process group (`ractor::pg`), which ractor_cluster
//! keeps in step across connected nodes.

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorRef, RpcReplyPort};
use ractor_cluster::{NodeServer, NodeServerMessage, RactorClusterMessage};

/// The process group the echo actor joins; the driver looks it up there.
pub const GROUP: &str = "troupe-bench-echo";

/// The shared secret of the two nodes' handshake.
const COOKIE: &str = "troupe-bench";

/// Loopback only: the experiment measures two processes on one machine.
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The echo's one message: a round trip, answered with its sequence
/// number. The payload travels with it (`Vec<u8>` is one of ractor's
/// `BytesConvertable` types); the reply port makes it an RPC, which the
/// derive serialises with a tag so the answer finds its caller.
#[derive(RactorClusterMessage)]
pub enum EchoMsg {
    /// `(sequence number, payload, reply)`.
    #[rpc]
    Ping(u64, Vec<u8>, RpcReplyPort<u64>),
}

/// A port that was free a moment ago, for the echo's node: ractor_cluster
/// picks a free port itself for port 0 but does not say which, and the
/// driver must know where to connect.
pub fn free_port() -> Result<u16, String> {
    let probe = TcpListener::bind((LOOPBACK, 0))
        .map_err(|e| format!("cannot find a free loopback port: {e}"))?;
    probe
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot read a loopback port: {e}"))
}

/// Starts this process's ractor_cluster node, listening on `port` of
/// 127.0.0.1 (0: any).
pub async fn start(name: &str, port: u16) -> Result<ActorRef<NodeServerMessage>, String> {
    let server = NodeServer::new(
        port,
        COOKIE.to_string(),
        name.to_string(),
        LOOPBACK.to_string(),
        None,
        None,
    )
    .with_listen_addr(LOOPBACK);
    let (node, _) = Actor::spawn(None, server, ())
        .await
        .map_err(|e| format!("the {name} node did not start on port {port}: {e}"))?;
    Ok(node)
}

/// Connects `node` to the node listening on `port` of 127.0.0.1 and waits
/// (up to `patience`) until the echo actor there shows in [`GROUP`]: the
/// handshake is done and the nodes have exchanged their groups.
pub async fn connect_and_find_echo(
    node: &ActorRef<NodeServerMessage>,
    port: u16,
    patience: Duration,
) -> Result<ActorRef<EchoMsg>, String> {
    ractor_cluster::client_connect(node, (LOOPBACK, port))
        .await
        .map_err(|e| format!("cannot connect to the echo node at 127.0.0.1:{port}: {e}"))?;
    let deadline = Instant::now() + patience;
    loop {
        let remote = ractor::pg::get_members(&GROUP.to_string())
            .into_iter()
            .find(|cell| !cell.get_id().is_local());
        if let Some(cell) = remote {
            return Ok(ActorRef::<EchoMsg>::from(cell));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the echo actor did not appear in process group {GROUP} within {patience:?} \
                 of connecting to 127.0.0.1:{port}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

//! `RemoteConfig`: how a node reaches NATS and what it accepts.

use std::path::PathBuf;
use std::time::Duration;

/// How the node authenticates to NATS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Auth {
    /// No credentials (a development server).
    #[default]
    None,
    /// A user name and password.
    UserPassword {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
    /// A token.
    Token(String),
    /// An nkey seed (the private key; the server knows the public key).
    NKey(String),
    /// A `.creds` file (a JWT and an nkey seed).
    CredentialsFile(PathBuf),
}

/// TLS to the NATS servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// Refuse a server that does not speak TLS.
    pub required: bool,
    /// PEM roots to trust besides the system's.
    pub root_certificates: Option<PathBuf>,
    /// A client certificate and its key (PEM), for servers that verify clients.
    pub client_certificate: Option<(PathBuf, PathBuf)>,
}

/// How a node joins the cluster.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// NATS server URLs, e.g. `nats://127.0.0.1:4222`; the client picks one
    /// and fails over to the others.
    pub urls: Vec<String>,
    /// This node's name, unique in the cluster: it names the node's reply
    /// subject and the NATS connection. Letters, digits, `-` and `_`.
    pub node_name: String,
    /// The cluster's name: nodes of different clusters on one NATS share
    /// nothing (every subject starts with `troupe.<cluster>.`). Letters,
    /// digits, `-` and `_`.
    pub cluster_name: String,
    /// Credentials.
    pub auth: Auth,
    /// TLS options.
    pub tls: Tls,
    /// How long `Node::start` waits for the first connection.
    pub connect_timeout: Duration,
    /// How long a lookup (or the name check of a publish) waits for the
    /// owner's answer.
    pub lookup_timeout: Duration,
    /// Largest frame sent or accepted, in bytes (header included). Bigger
    /// outgoing messages are dead letters (`Oversized`) and their asks fail
    /// at once (`AskError::Refused`); bigger incoming messages are refused
    /// (counted, and refused back to the sending node). The node also
    /// sends nothing above the NATS server's `max_payload`, which it
    /// learns from the server ([`Node::frame_limit`](crate::Node::frame_limit);
    /// `OverMaxPayload`). Keep it the same on every node, and at or below
    /// the servers' `max_payload`.
    pub max_frame_size: usize,
    /// Messages waiting between senders and the NATS connection; beyond it
    /// a send is a dead letter (`OutboundFull`, or `Unreachable` while
    /// disconnected) instead of a blocked sender.
    pub outbound_buffer: usize,
    /// How long a reply handle sent to another node stays registered here;
    /// an answer after that is an `UnknownReply` dead letter. Asks with a
    /// longer timeout get `NoReply` at this age. Also bounds how long the
    /// answering node waits for its local actor.
    pub reply_ttl: Duration,
    /// How long `Node::shutdown` may take in all: unpublishing, buffered
    /// messages reaching the server, the leave, closing the connection.
    /// With the server gone, shutdown returns after this.
    pub shutdown_timeout: Duration,
    /// How often this node announces that it is alive.
    pub heartbeat_interval: Duration,
    /// How long this node waits without a heartbeat of another node before
    /// it declares that node down. Keep it several of the other nodes'
    /// heartbeat intervals.
    pub heartbeat_timeout: Duration,
    /// How long the writer may hold a frame for company before it
    /// publishes it: frames queued behind it for the same subject within
    /// this time go in the same NATS message (up to 32 KiB, or the
    /// node's frame limit if less, and 128 asks).
    /// Adaptive: the writer lingers only when traffic is dense (its last
    /// message went out less than 8 lingers ago), and after a linger that
    /// gathered nothing it sends the next 8 messages at once. So a frame
    /// after a quiet spell goes at once, a burst goes in one message
    /// behind its first frame, and a frame waits at most this long (plus
    /// one turn of the other tasks ready on the node's runtime). Zero turns
    /// lingering off. [`Node::batch_stats`](crate::Node::batch_stats)
    /// shows the batches it makes.
    pub batch_linger: Duration,
    /// The most other nodes this node tracks as up at once. A heartbeat of
    /// one more is an `OverCapacity` dead letter (it is taken once one
    /// goes); node incarnations remembered as down are at most four times
    /// this, the oldest forgotten first. Bounds what heartbeats published
    /// under made-up names can cost (docs/operations.md, "Who may talk to
    /// a node").
    pub max_members: usize,
    /// How much may wait in a published actor's mailbox before frames for
    /// it from other nodes are refused (`MailboxFull` dead letters here and,
    /// refused back, at the sending node, whose asks in them fail at once
    /// with `AskError::Refused` naming the bound): a bounded mailbox for what other
    /// nodes send, on by default, whatever mailbox the actor was spawned
    /// with (its own bound, if any, applies too). `None` turns it off: an
    /// actor spawned with an unbounded mailbox then queues whatever
    /// arrives, and a sender faster than the actor grows this process
    /// without limit.
    pub inbound_limit: Option<InboundLimit>,
}

/// The bound on what other nodes' messages may queue in a published
/// actor's mailbox (see [`RemoteConfig::inbound_limit`]). A frame is
/// refused while the actor's mailbox holds `messages` messages (from
/// anywhere), or while the messages delivered from other nodes that may
/// still wait in it add up to `bytes` (encoded) or more with this one.
///
/// ```
/// use troupe_remote::{InboundLimit, RemoteConfig};
///
/// let mut config = RemoteConfig::new("nats://127.0.0.1:4222", "engine-a");
/// assert_eq!(config.inbound_limit, Some(InboundLimit::default()));
/// // A slow actor that should never hold more than 1,000 messages:
/// config.inbound_limit = Some(InboundLimit { messages: 1_000, bytes: 8 << 20 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboundLimit {
    /// Messages waiting in the mailbox (default 10,000).
    pub messages: usize,
    /// Encoded bytes of the messages from other nodes that may still wait
    /// (default 64 MiB).
    pub bytes: usize,
}

impl Default for InboundLimit {
    fn default() -> Self {
        InboundLimit {
            messages: 10_000,
            bytes: 64 << 20,
        }
    }
}

impl RemoteConfig {
    /// A configuration for one server URL with the defaults below.
    ///
    /// Defaults: no auth, no TLS, connect timeout 5 s, lookup timeout 2 s,
    /// frames up to 1 MiB, 65,536 buffered outbound messages, reply handles
    /// kept 60 s, shutdown waits up to 5 s, a heartbeat every 500 ms, a
    /// node silent for 3 s is down, a frame lingers up to 5 us for company,
    /// at most 1,024 other nodes up, and a published actor takes frames
    /// from other nodes while it has fewer than 10,000 messages waiting
    /// and those from other nodes hold less than 64 MiB
    /// ([`InboundLimit::default`]).
    pub fn new(url: impl Into<String>, node_name: impl Into<String>) -> RemoteConfig {
        RemoteConfig {
            urls: vec![url.into()],
            node_name: node_name.into(),
            cluster_name: "troupe".to_string(),
            auth: Auth::None,
            tls: Tls::default(),
            connect_timeout: Duration::from_secs(5),
            lookup_timeout: Duration::from_secs(2),
            max_frame_size: 1024 * 1024,
            outbound_buffer: 65_536,
            reply_ttl: Duration::from_secs(60),
            shutdown_timeout: Duration::from_secs(5),
            heartbeat_interval: Duration::from_millis(500),
            heartbeat_timeout: Duration::from_secs(3),
            batch_linger: Duration::from_micros(5),
            max_members: 1024,
            inbound_limit: Some(InboundLimit::default()),
        }
    }

    /// Sets the cluster name.
    pub fn cluster(mut self, name: impl Into<String>) -> Self {
        self.cluster_name = name.into();
        self
    }

    /// Sets the credentials.
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }
}

/// Whether `s` is a valid node, cluster or published-actor name: 1 to 128
/// letters, digits, `-` or `_` (one NATS subject token, no wildcards).
pub(crate) fn valid_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

//! The node's frame limit: the largest NATS message it publishes, which is
//! `RemoteConfig::max_frame_size` or the server's `max_payload` if that is
//! less. The server announces `max_payload` in its INFO when a connection
//! is made, so the limit is learned at connect and again after every
//! reconnect (a server restarted with another setting, or another server
//! of the cluster).
//!
//! Why it matters: a server closes the connection of a client that
//! publishes more than `max_payload`, and everything in flight on it is
//! lost. So the node never publishes more: senders refuse a bigger frame
//! before queueing it, and the writer checks every frame again against
//! the limit of the connection it publishes on (a frame queued before a
//! reconnect that lowered the limit is refused then), and never packs a
//! batch past it.
//!
//! How a reconnect is noticed: the NATS client counts its connections
//! (`Statistics::connects`), one relaxed load the writer makes per
//! message. The client bumps that count a moment before it stores the new
//! server's INFO, so after a change the limit is read again until the INFO
//! is that of a new connection: each connection has its own `(server_id,
//! client_id)` pair.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_nats::Client;

/// How long a refresh waits for the INFO of the new connection before it
/// takes what the client has.
const FRESH_INFO_WAIT: Duration = Duration::from_secs(1);

/// See the module docs.
pub(crate) struct FrameLimit {
    max_frame_size: usize,
    /// min(max_frame_size, the server's max_payload).
    limit: AtomicUsize,
    /// The server's max_payload as last learned (0: not known).
    server: AtomicUsize,
    /// The client's connection count the limit was learned at.
    learned_at: AtomicU64,
    /// The connection it was learned on: `(server_id, client_id)`.
    connection: Mutex<(String, u64)>,
    client: OnceLock<Client>,
}

impl FrameLimit {
    /// A limit of `max_frame_size` until the server is heard.
    pub(crate) fn new(max_frame_size: usize) -> FrameLimit {
        FrameLimit {
            max_frame_size,
            limit: AtomicUsize::new(max_frame_size),
            server: AtomicUsize::new(0),
            learned_at: AtomicU64::new(0),
            connection: Mutex::new((String::new(), 0)),
            client: OnceLock::new(),
        }
    }

    /// Learns the limit of `client`'s first connection (just made: its
    /// INFO is current) and keeps the client for later refreshes.
    pub(crate) fn attach(&self, client: &Client, node: &str) {
        let _ = self.client.set(client.clone());
        let info = client.server_info();
        let connects = client.statistics().connects.load(Ordering::Acquire);
        *self.connection.lock().unwrap_or_else(|e| e.into_inner()) =
            (info.server_id.clone(), info.client_id);
        self.learn(info.max_payload, node);
        self.learned_at.store(connects, Ordering::Release);
    }

    /// The largest NATS message the node publishes now.
    pub(crate) fn get(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// The server's `max_payload` as last learned (0: not known).
    pub(crate) fn server_max_payload(&self) -> usize {
        self.server.load(Ordering::Relaxed)
    }

    /// The configured `max_frame_size`.
    pub(crate) fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// The client's connection count the limit was learned at (compare
    /// with `Statistics::connects` to see whether a reconnect came since).
    pub(crate) fn learned_at(&self) -> u64 {
        self.learned_at.load(Ordering::Acquire)
    }

    /// Learns the limit again if the client has connected since it was
    /// last learned (see the module docs); returns at once otherwise.
    pub(crate) async fn refresh(&self, node: &str) {
        let Some(client) = self.client.get() else {
            return;
        };
        let stats = client.statistics();
        let deadline = Instant::now() + FRESH_INFO_WAIT;
        loop {
            let connects = stats.connects.load(Ordering::Acquire);
            if connects == self.learned_at() {
                return;
            }
            let info = client.server_info();
            {
                let mut connection = self.connection.lock().unwrap_or_else(|e| e.into_inner());
                let fresh = connection.0 != info.server_id || connection.1 != info.client_id;
                if fresh || Instant::now() >= deadline {
                    *connection = (info.server_id.clone(), info.client_id);
                    self.learn(info.max_payload, node);
                    self.learned_at.store(connects, Ordering::Release);
                    return;
                }
            }
            // The client stores the INFO right after it counts the
            // connection: microseconds.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn learn(&self, max_payload: usize, node: &str) {
        // A server that announces none (0) leaves our own limit.
        let limit = match max_payload {
            0 => self.max_frame_size,
            server => self.max_frame_size.min(server),
        };
        self.server.store(max_payload, Ordering::Relaxed);
        let before = self.limit.swap(limit, Ordering::Relaxed);
        if max_payload != 0 && max_payload < self.max_frame_size {
            tracing::warn!(
                node,
                max_payload,
                max_frame_size = self.max_frame_size,
                "troupe-remote: the NATS server's max_payload is below RemoteConfig::max_frame_size: \
                 a message or answer between the two is not sent (an OverMaxPayload dead letter, \
                 its ask fails at once); raise max_payload in the server's configuration or lower \
                 max_frame_size"
            );
        } else if before != limit {
            tracing::info!(
                node,
                max_payload,
                limit,
                "troupe-remote: frame limit learned from the NATS server"
            );
        }
    }
}

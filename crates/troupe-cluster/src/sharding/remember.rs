//! Remember-entities (`ShardingSettings::remember_entities`): the ids of
//! the entities each shard runs, kept in a JetStream key-value bucket
//! (`troupe-entities-<type>`, one key `<shard>.<escaped id>` per entity),
//! so that when a shard starts on a node (a handoff, a node's loss, the
//! whole cluster started again) its entities are started at once rather
//! than on their next message.
//!
//! An entity is remembered when it is first started in a shard and
//! forgotten when it stops while its shard runs (passivated, or stopped
//! on its own); a shard that stops (handed over, its node gone) forgets
//! none. Writes go through one task, in order, off the message path: an
//! entity started just before its node dies may not be remembered yet.

use async_nats::jetstream::consumer::{push, DeliverPolicy, ReplayPolicy};
use async_nats::jetstream::kv::{Config, Store};
use async_nats::jetstream::{self, Context};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use troupe_remote::Node;

use crate::lease::LeaseError;
use crate::token::{escape, unescape};

/// One write: remember (`true`) or forget an entity of a shard.
type Write = (u32, String, bool);

/// The remembered entities of one type, as seen from one node.
#[derive(Clone)]
pub(crate) struct Remembered {
    js: Context,
    bucket: String,
    writes: mpsc::UnboundedSender<Write>,
}

impl Remembered {
    /// Opens (or makes) the type's bucket and starts its writer task.
    pub(crate) async fn open(
        node: &Node,
        type_name: &str,
        replicas: usize,
    ) -> Result<Remembered, LeaseError> {
        let js = jetstream::new(node.nats_client());
        let bucket = format!("troupe-entities-{type_name}");
        let kv = match js.get_key_value(&bucket).await {
            Ok(kv) => kv,
            Err(_) => js
                .create_key_value(Config {
                    bucket: bucket.clone(),
                    history: 1,
                    num_replicas: replicas.clamp(1, 5),
                    ..Config::default()
                })
                .await
                .map_err(|e| {
                    LeaseError::Unavailable(format!("cannot make the bucket {bucket}: {e}"))
                })?,
        };
        let (writes, queue) = mpsc::unbounded_channel();
        tokio::spawn(write(kv, queue));
        Ok(Remembered { js, bucket, writes })
    }

    /// Queues remembering (`alive`) or forgetting `entity` of `shard`.
    pub(crate) fn note(&self, shard: u32, entity: &str, alive: bool) {
        let _ = self.writes.send((shard, entity.to_string(), alive));
    }

    /// The entities remembered for `shard`: the last state of each of its
    /// keys, read with a consumer filtered to the shard's keys.
    pub(crate) async fn recall(&self, shard: u32) -> Result<Vec<String>, String> {
        let stream = self
            .js
            .get_stream(format!("KV_{}", self.bucket))
            .await
            .map_err(|e| e.to_string())?;
        let prefix = format!("$KV.{}.{shard}.", self.bucket);
        let consumer = stream
            .create_consumer(push::OrderedConfig {
                deliver_subject: self.js.client().new_inbox(),
                filter_subject: format!("{prefix}>"),
                headers_only: true,
                deliver_policy: DeliverPolicy::LastPerSubject,
                replay_policy: ReplayPolicy::Instant,
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())?;
        let mut ids = Vec::new();
        if consumer.cached_info().num_pending == 0 {
            return Ok(ids);
        }
        let mut messages = consumer.messages().await.map_err(|e| e.to_string())?;
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| e.to_string())?;
            let deleted = message
                .headers
                .as_ref()
                .and_then(|h| h.get("KV-Operation"))
                .is_some_and(|op| op.as_str() == "DEL" || op.as_str() == "PURGE");
            if !deleted {
                if let Some(id) = message.subject.strip_prefix(&prefix).and_then(unescape) {
                    ids.push(id);
                }
            }
            let pending = message.info().map_err(|e| e.to_string())?.pending;
            if pending == 0 {
                break;
            }
        }
        Ok(ids)
    }
}

/// Writes the queued notes in order until every sender is gone. A write
/// that fails is logged and dropped: what is remembered is a hint for
/// starting entities early, never the entities' state.
async fn write(kv: Store, mut queue: mpsc::UnboundedReceiver<Write>) {
    while let Some((shard, entity, alive)) = queue.recv().await {
        let key = format!("{shard}.{}", escape(&entity));
        let written = if alive {
            kv.put(&key, Vec::new().into())
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            kv.delete(&key).await.map_err(|e| e.to_string())
        };
        if let Err(e) = written {
            tracing::warn!(entity, shard, error = %e, "sharding: cannot remember an entity");
        }
    }
}

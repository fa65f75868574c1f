//! [`ShardingSettings`]: how a sharded entity type runs, the same on
//! every node of the type.

use std::sync::Arc;
use std::time::Duration;

use super::ids::IdValidator;

/// How a sharded entity type runs. Every node of one type must use the
/// same `type_name`, `shards` and `bucket` (and should use the same
/// `validate`).
#[derive(Clone)]
pub struct ShardingSettings {
    /// The entity type's name (letters, digits, `-`, `_`).
    pub type_name: String,
    /// How many shards the ids are spread over: fixed for the life of the
    /// data (changing it moves every entity). About ten per node you may
    /// ever run is a good number.
    pub shards: u32,
    /// The key-value bucket of the leases (made on first use).
    pub bucket: String,
    /// Copies of the bucket when it is made (one per NATS server, at most
    /// 5).
    pub replicas: usize,
    /// Stop an entity after this long without a message (`None`: never).
    pub passivate_after: Option<Duration>,
    /// Messages a region holds for shards whose owner is not known yet or
    /// that are being handed over; beyond it new ones are dropped and
    /// counted.
    pub buffer: usize,
    /// How often a node looks at whether it owns too many shards (`None`:
    /// never rebalance).
    pub rebalance_interval: Option<Duration>,
    /// At most this many shards handed over per rebalance round.
    pub rebalance_limit: usize,
    /// How long a node may be cut off from NATS before it stops its shards
    /// on its own. `None`: half the node's heartbeat timeout.
    pub self_fence_after: Option<Duration>,
    /// Remember which entities each shard runs (in a key-value bucket,
    /// `troupe-entities-<type>`) and start them again as soon as their
    /// shard starts on a node (after a handoff, a node's loss, or the
    /// whole cluster's restart), not on their next message. An entity is
    /// forgotten when it is passivated or stops on its own.
    pub remember_entities: bool,
    /// Which entity ids exist: `Err(reason)` refuses an id before any
    /// entity is started for it (set it with
    /// [`validate`](Self::validate)). Run by the sending node's region
    /// before it routes a message, and by the owning shard before it
    /// starts an entity, after the length check every region makes (1 to
    /// [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) bytes). A refused message is
    /// counted (`RegionStats::refused`) and logged, and an ask in it is
    /// answered at once with `AskError::Refused`. `None`: every id that
    /// fits is accepted.
    pub validate: Option<IdValidator>,
}

impl ShardingSettings {
    /// Settings for the entity type `type_name`: 100 shards, bucket
    /// `troupe-leases` with one replica, passivation after 120 s, a buffer
    /// of 10,000 messages, a rebalance round every 10 s moving at most 5
    /// shards, every id that fits accepted.
    pub fn new(type_name: impl Into<String>) -> Self {
        ShardingSettings {
            type_name: type_name.into(),
            shards: 100,
            bucket: "troupe-leases".into(),
            replicas: 1,
            passivate_after: Some(Duration::from_secs(120)),
            buffer: 10_000,
            rebalance_interval: Some(Duration::from_secs(10)),
            rebalance_limit: 5,
            self_fence_after: None,
            remember_entities: false,
            validate: None,
        }
    }

    /// Refuses the entity ids for which `check` returns `Err(reason)`:
    /// no entity starts for them (so a persistent entity writes nothing
    /// to its journal), and an ask to one is answered at once with
    /// `AskError::Refused` and the reason. `check` runs on the sender's
    /// thread for every `tell` and every `entity_ref`, and once per
    /// activation on the owning node: keep it quick and pure.
    ///
    /// ```
    /// use troupe_cluster::sharding::ShardingSettings;
    ///
    /// let settings = ShardingSettings::new("show").validate(|id| {
    ///     match id.strip_prefix("show-").map(|n| n.parse::<u32>()) {
    ///         Some(Ok(_)) => Ok(()),
    ///         _ => Err(format!("{id:?} is not show-<number>")),
    ///     }
    /// });
    /// assert!(settings.validate.is_some());
    /// ```
    pub fn validate(
        mut self,
        check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.validate = Some(Arc::new(check));
        self
    }
}

impl std::fmt::Debug for ShardingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardingSettings")
            .field("type_name", &self.type_name)
            .field("shards", &self.shards)
            .field("bucket", &self.bucket)
            .field("replicas", &self.replicas)
            .field("passivate_after", &self.passivate_after)
            .field("buffer", &self.buffer)
            .field("rebalance_interval", &self.rebalance_interval)
            .field("rebalance_limit", &self.rebalance_limit)
            .field("self_fence_after", &self.self_fence_after)
            .field("remember_entities", &self.remember_entities)
            .field("validate", &self.validate.as_ref().map(|_| "Fn(&str)"))
            .finish()
    }
}

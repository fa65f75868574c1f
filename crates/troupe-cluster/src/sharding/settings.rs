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
    /// How a shard restarts an entity whose activation failed (a
    /// persistent entity whose recovery or journal write failed, an
    /// entity its supervisor stopped): after a backoff, holding the
    /// messages that arrive meanwhile, and refusing them once it has
    /// failed [`max_failures`](EntityBackoff::max_failures) times in a
    /// row.
    pub entity_backoff: EntityBackoff,
}

/// How a shard restarts an entity whose activation failed.
///
/// The `n`-th failure in a row delays the next activation by `min`
/// doubled `n - 1` times, at most `max` (100 ms, 200 ms, 400 ms ... 10 s
/// by default). The messages that arrive meanwhile wait in the shard, at
/// most `max_held` per entity (beyond that each is refused). At the
/// `max_failures`-th failure in a row the held messages are refused with
/// the failure's reason (an ask in one is answered with
/// `AskError::Refused`), and so is every message for the entity during
/// the next `max`; the first message after that starts one activation
/// again. Every refusal is counted in `RegionStats::refused` and logged.
/// An activation that ends well (stopped on purpose after it recovered)
/// clears the count. A persistent entity writes one fence record per
/// activation, so these bound how many a lasting failure writes: at
/// most `max_failures` in a row, then one per `max` while messages keep
/// coming.
///
/// ```
/// use std::time::Duration;
/// use troupe_cluster::sharding::{EntityBackoff, ShardingSettings};
///
/// let mut settings = ShardingSettings::new("show");
/// settings.entity_backoff = EntityBackoff {
///     min: Duration::from_millis(50),
///     max: Duration::from_secs(30),
///     ..EntityBackoff::default()
/// };
/// assert_eq!(settings.entity_backoff.delay(3), Duration::from_millis(200));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntityBackoff {
    /// The wait after the first failure.
    pub min: Duration,
    /// The longest wait, and how long an entity that failed
    /// `max_failures` times in a row has its messages refused.
    pub max: Duration,
    /// Failures in a row after which the held messages are refused (at
    /// least 1).
    pub max_failures: u32,
    /// Messages held per entity while it waits; more are refused.
    pub max_held: usize,
}

impl Default for EntityBackoff {
    /// 100 ms doubling to 10 s; refused after 5 failures in a row; 1,000
    /// messages held per entity.
    fn default() -> Self {
        EntityBackoff {
            min: Duration::from_millis(100),
            max: Duration::from_secs(10),
            max_failures: 5,
            max_held: 1_000,
        }
    }
}

impl ShardingSettings {
    /// Settings for the entity type `type_name`: 100 shards, bucket
    /// `troupe-leases` with one replica, passivation after 120 s, a buffer
    /// of 10,000 messages, a rebalance round every 10 s moving at most 5
    /// shards, every id that fits accepted, a failed entity restarted
    /// after [`EntityBackoff::default`].
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
            entity_backoff: EntityBackoff::default(),
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
            .field("entity_backoff", &self.entity_backoff)
            .finish()
    }
}

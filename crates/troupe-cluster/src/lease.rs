//! Leases: which node owns a name, decided by the NATS cluster's replicated
//! key-value store and never by two nodes at once. There is no consensus of
//! our own: a lease is a key in a JetStream key-value bucket whose value is
//! the owning node's name, and every change of owner is a compare-and-set
//! on the key's revision. The revision is the lease's **fencing token**:
//! it grows with every change of owner, so a resource that remembers the
//! highest token it saw (a persistence journal does)
//! refuses a former owner that has not yet noticed it lost the lease.
//!
//! A lease has no time to live. It moves when its holder's node is declared
//! down by troupe-remote's membership (no heartbeat for the node's
//! `heartbeat_timeout`, a restart, or a leave), when the holder releases it,
//! or when a node finds it held by a node it has not heard from for a
//! heartbeat timeout since it started looking (a holder left over from a
//! cluster that stopped as a whole). The blocks built on it (the
//! singleton module) take it over then.
//!
//! The bucket's operations are retried for [`RETRY_WITHIN`] when they fail
//! without a verdict (a NATS cluster that lost a server answers with errors
//! or not at all until it has elected the bucket a new leader); a
//! compare-and-set whose answer was lost is read back: it won if the key
//! holds this node's name at a newer revision.

use std::time::Duration;

use async_nats::jetstream::kv::{
    Config, CreateErrorKind, Entry, Operation, Store, UpdateErrorKind,
};
use troupe_remote::Node;

/// How long a bucket operation that failed without a verdict is retried.
pub const RETRY_WITHIN: Duration = Duration::from_secs(30);

/// How long opening the bucket is retried: a NATS cluster that has just
/// started elects its JetStream leader first, and refuses until then.
const OPEN_WITHIN: Duration = Duration::from_secs(30);

/// Why a lease operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseError {
    /// The key moved on from the revision the caller held or followed:
    /// another node owns it now (or the key was deleted).
    Moved {
        /// The key.
        key: String,
        /// The revision the caller expected.
        from: u64,
    },
    /// The bucket did not answer within [`RETRY_WITHIN`] (or could not be
    /// opened or created): what it said last.
    Unavailable(String),
    /// The key is not a valid key-value key (letters, digits, `-`, `_`,
    /// `/`, `=`, `.`).
    InvalidKey(String),
}

impl std::fmt::Display for LeaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaseError::Moved { key, from } => {
                write!(f, "lease {key} moved on from revision {from}")
            }
            LeaseError::Unavailable(why) => write!(f, "lease bucket unavailable: {why}"),
            LeaseError::InvalidKey(key) => write!(f, "invalid lease key {key:?}"),
        }
    }
}

impl std::error::Error for LeaseError {}

/// Who holds a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The holding node's name.
    pub node: String,
    /// The revision it holds: the fencing token.
    pub revision: u64,
}

/// What a watch of a lease reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseChange {
    /// The lease is held (by this node or another).
    Held(Holder),
    /// The lease was released (or deleted) at this revision: anyone may
    /// acquire it.
    Released(u64),
}

/// The changes of one lease (see [`Leases::watch`]).
pub type LeaseWatch = futures_util::stream::BoxStream<'static, Result<LeaseChange, String>>;

/// The leases of one bucket, as seen from one node.
#[derive(Clone)]
pub struct Leases {
    kv: Store,
    me: String,
}

impl Leases {
    /// Opens the bucket `bucket` through `node`'s NATS connection, or
    /// creates it with `replicas` copies (one per NATS server, at most 5:
    /// with 3 on a three-server cluster the leases survive the loss of any
    /// one server). Retried for 30 s while the NATS cluster has no
    /// JetStream leader yet.
    pub async fn open(node: &Node, bucket: &str, replicas: usize) -> Result<Leases, LeaseError> {
        Ok(Leases {
            kv: open_bucket(node, bucket, replicas).await?,
            me: node.name().to_string(),
        })
    }

    /// This node's name: the value it writes into the leases it holds.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// Acquires `key` if nobody holds it: its revision if this node created
    /// it now, `None` if it is held, by another node or by this node's own
    /// name (a create of ours that landed without an answer, or this node
    /// before a restart: [`take_over`](Self::take_over) that revision for a
    /// fresh fencing token).
    pub async fn acquire(&self, key: &str) -> Result<Option<u64>, LeaseError> {
        check_key(key)?;
        retrying(|| async {
            match self.kv.create(key, self.me.clone().into()).await {
                Ok(revision) => Ok(Some(revision)),
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
    }

    /// Creates `key` for `node` (another node, or this one) if nobody holds
    /// it: the revision if it was created now, `None` if it is held. A
    /// block that allocates work to nodes (sharding) writes the chosen
    /// node's name; that node learns it holds the key from a watch.
    pub async fn create_for(&self, key: &str, node: &str) -> Result<Option<u64>, LeaseError> {
        check_key(key)?;
        retrying(|| async {
            match self.kv.create(key, node.to_string().into()).await {
                Ok(revision) => Ok(Some(revision)),
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
    }

    /// Who holds `key` now, if anyone.
    pub async fn holder(&self, key: &str) -> Result<Option<Holder>, LeaseError> {
        check_key(key)?;
        retrying(|| async {
            match self.kv.entry(key).await {
                Ok(Some(e)) => Ok(held(&e)),
                Ok(None) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
    }

    /// Takes `key` over from the holder it had at revision `from` (whose
    /// node is gone): the new revision, or [`LeaseError::Moved`] if another
    /// node took it first.
    pub async fn take_over(&self, key: &str, from: u64) -> Result<u64, LeaseError> {
        let me = self.me.clone();
        self.move_to(key, from, &me).await
    }

    /// Moves `key` from the holder it had at revision `from` to `node`
    /// (this one or another): the new revision, or [`LeaseError::Moved`]
    /// if it moved on from `from` first. A holder hands its key to another
    /// node this way (sharding's rebalance), in one compare-and-set.
    pub async fn move_to(&self, key: &str, from: u64, node: &str) -> Result<u64, LeaseError> {
        check_key(key)?;
        let deadline = tokio::time::Instant::now() + RETRY_WITHIN;
        loop {
            match self.kv.update(key, node.to_string().into(), from).await {
                Ok(revision) => return Ok(revision),
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                    // Moved on since `from`: by someone else, or by an
                    // earlier attempt of ours whose answer was lost. If it
                    // names `node` at a newer revision, the caller has the
                    // outcome it asked for, whoever wrote it.
                    return match self.holder(key).await? {
                        Some(h) if h.node == node && h.revision > from => Ok(h.revision),
                        _ => Err(LeaseError::Moved {
                            key: key.to_string(),
                            from,
                        }),
                    };
                }
                Err(e) if tokio::time::Instant::now() > deadline => {
                    return Err(LeaseError::Unavailable(format!(
                        "cannot update {key} (retried for {RETRY_WITHIN:?}): {e}"
                    )))
                }
                // No verdict: ask again; if it had landed, the next answer
                // is WrongLastRevision and the read above finds the name.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Releases `key`, held at `revision`, so another node may acquire it
    /// at once. Does nothing if it moved on meanwhile.
    pub async fn release(&self, key: &str, revision: u64) -> Result<(), LeaseError> {
        check_key(key)?;
        retrying(|| async {
            match self.kv.delete_expect_revision(key, Some(revision)).await {
                Ok(()) => Ok(()),
                Err(e) => match self.kv.entry(key).await {
                    // Moved on (or our delete landed without an answer).
                    Ok(Some(entry)) if entry.revision != revision => Ok(()),
                    Ok(None) => Ok(()),
                    _ => Err(e.to_string()),
                },
            }
        })
        .await
    }

    /// Every change of `key` from now on, starting with its current state
    /// (so a watch made again after an error misses no move). The stream
    /// ends, or yields an error, when the bucket's stream changes leader:
    /// watch again then.
    pub async fn watch(&self, key: &str) -> Result<LeaseWatch, LeaseError> {
        use futures_util::StreamExt;
        check_key(key)?;
        let changes = self.watch_keys(key).await?;
        Ok(changes
            .map(|change| change.map(|(_, change)| change))
            .boxed())
    }
}

impl Leases {
    /// Every change of every key matching `pattern` (a key with `*` for one
    /// token and a final `>` for the rest, as in NATS subjects) from now
    /// on, starting with each matching key's current state, as
    /// `(key, change)`. Like [`watch`](Self::watch), watch again after an
    /// error or the end of the stream.
    pub async fn watch_keys(&self, pattern: &str) -> Result<KeysWatch, LeaseError> {
        use futures_util::StreamExt;
        let watch = retrying(|| async {
            self.kv
                .watch_with_history(pattern)
                .await
                .map_err(|e| e.to_string())
        })
        .await?;
        Ok(watch
            .map(|entry| {
                entry
                    .map(|e| {
                        let change = match held(&e) {
                            Some(h) => LeaseChange::Held(h),
                            None => LeaseChange::Released(e.revision),
                        };
                        (e.key, change)
                    })
                    .map_err(|e| e.to_string())
            })
            .boxed())
    }
}

impl Leases {
    /// Every held key that starts with `prefix`, with its holder: the
    /// state a [`watch_keys`](Self::watch_keys) made just before starts
    /// from, read in one pass (one request per key).
    pub async fn holders(&self, prefix: &str) -> Result<Vec<(String, Holder)>, LeaseError> {
        use futures_util::TryStreamExt;
        let keys: Vec<String> = retrying(|| async {
            match self.kv.keys().await {
                Ok(keys) => keys.try_collect().await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        })
        .await?;
        let mut held = Vec::new();
        for key in keys.into_iter().filter(|k| k.starts_with(prefix)) {
            if let Some(holder) = self.holder(&key).await? {
                held.push((key, holder));
            }
        }
        Ok(held)
    }
}

/// Opens the key-value bucket `bucket` through `node`'s NATS connection,
/// or creates it (one version per key) with `replicas` copies (at most 5);
/// retried for [`OPEN_WITHIN`] while the NATS cluster has no JetStream
/// leader yet. Shared by every block that keeps keys (leases, the cluster
/// receptionist).
pub(crate) async fn open_bucket(
    node: &Node,
    bucket: &str,
    replicas: usize,
) -> Result<Store, LeaseError> {
    let mut js = async_nats::jetstream::new(node.nats_client());
    // A request without an answer is retried (see `retrying`): the
    // default 5 s for each would add as much to a takeover that meets a
    // bucket electing a new leader.
    js.set_timeout(Duration::from_secs(1));
    let deadline = tokio::time::Instant::now() + OPEN_WITHIN;
    loop {
        if let Ok(kv) = js.get_key_value(bucket).await {
            return Ok(kv);
        }
        let created = js
            .create_key_value(Config {
                bucket: bucket.to_string(),
                history: 1,
                num_replicas: replicas.clamp(1, 5),
                ..Config::default()
            })
            .await;
        match created {
            Ok(kv) => return Ok(kv),
            Err(e) if tokio::time::Instant::now() > deadline => {
                return Err(LeaseError::Unavailable(format!(
                    "cannot open or create the bucket {bucket} with {replicas} replica(s) \
                     within {OPEN_WITHIN:?}: {e}"
                )))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The changes of the keys matching a pattern (see [`Leases::watch_keys`]).
pub type KeysWatch =
    futures_util::stream::BoxStream<'static, Result<(String, LeaseChange), String>>;

/// The holder an entry names, if it is a put.
fn held(entry: &Entry) -> Option<Holder> {
    (entry.operation == Operation::Put).then(|| Holder {
        node: String::from_utf8_lossy(&entry.value).into_owned(),
        revision: entry.revision,
    })
}

pub(crate) fn check_key(key: &str) -> Result<(), LeaseError> {
    let valid = !key.is_empty()
        && !key.starts_with('.')
        && !key.ends_with('.')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_/=.".contains(c));
    if valid {
        Ok(())
    } else {
        Err(LeaseError::InvalidKey(key.to_string()))
    }
}

/// Runs `op` until it succeeds, for at most [`RETRY_WITHIN`].
pub(crate) async fn retrying<T, F, Fut>(mut op: F) -> Result<T, LeaseError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + RETRY_WITHIN;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() > deadline => {
                return Err(LeaseError::Unavailable(format!(
                    "{e} (retried for {RETRY_WITHIN:?})"
                )))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_buckets_rules() {
        for good in ["singleton-orders", "shard/3", "a.b", "x=1"] {
            assert!(check_key(good).is_ok(), "{good}");
        }
        for bad in ["", ".a", "a.", "with space", "star*", "gt>"] {
            assert!(check_key(bad).is_err(), "{bad}");
        }
    }
}

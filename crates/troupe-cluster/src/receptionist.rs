//! The cluster receptionist: the system receptionist's listings made
//! cluster-wide. Once a [`ServiceKey`] is shared on every node
//! ([`ClusterReceptionist::share`]), an actor registered under it on any
//! node is listed on all of them: `system.receptionist().find(&key)` and
//! `subscribe` answer as before, with remote refs beside the local ones,
//! and a listing changes when an actor registers, deregisters or stops,
//! and when its node leaves or is lost.
//!
//! # Design
//!
//! The replicated state is a JetStream key-value bucket (no consensus of
//! our own, like the leases): one key per registered actor,
//! `<tag>.<key>.<node>.<incarnation>.<actor id>` (each part escaped),
//! whose value is the actor's ref as bytes ([`Node::to_bytes`]). On every
//! node that shares a key:
//!
//! * an **exporter** actor subscribes to the local receptionist's listing
//!   of the key and writes the difference in *local* actors (remote refs
//!   in the listing are the importer's, and are never written back) to a
//!   writer task, which puts and deletes the keys in the order of the
//!   changes;
//! * an **importer** task watches the bucket's keys of the service
//!   (current values first) and registers every other node's actor with
//!   the local receptionist as a remote ref, which it watches like any
//!   registered actor: the far actor's stop, or its node's loss, takes it
//!   off the listing without the bucket.
//!
//! A node that comes back from a stall as a new incarnation (see
//! `Node::incarnation`) writes its entries again under the new one: the
//! others deleted the old ones when they declared it down. Its importer
//! notices the change within a heartbeat interval and subscribes the
//! exporter again, which gets the listing at once and rewrites it.
//!
//! The bucket is cleaned by whoever notices: a node deletes the keys of
//! its own earlier incarnations when it shares a key, the keys of a node
//! declared down, and those of a node it has not heard from for a
//! heartbeat timeout after seeing its key (left over from a cluster that
//! stopped as a whole). A key of a node not yet heard waits for it.
//!
//! Listings are eventually consistent: a registration shows on another
//! node after one bucket write and one watch delivery (milliseconds on
//! one NATS server). Every node must share a key to see it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::kv::{Operation, Store};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use troupe::{Actor, ActorId, ActorRef, ActorSystem, Context, Listing, Props, ServiceKey};
use troupe_remote::{MemberEvent, Node, RemoteMessage};

use crate::lease::{open_bucket, retrying, LeaseError};
use crate::token::{escape, unescape};

/// Why sharing a key failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceptionistError {
    /// The bucket could not be opened, or did not answer within
    /// [`RETRY_WITHIN`](crate::lease::RETRY_WITHIN).
    Unavailable(String),
    /// The actor system is shutting down: no exporter can be spawned.
    Stopped,
}

impl std::fmt::Display for ReceptionistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReceptionistError::Unavailable(why) => {
                write!(f, "receptionist bucket unavailable: {why}")
            }
            ReceptionistError::Stopped => f.write_str("the actor system is shutting down"),
        }
    }
}

impl std::error::Error for ReceptionistError {}

impl From<LeaseError> for ReceptionistError {
    fn from(e: LeaseError) -> Self {
        ReceptionistError::Unavailable(e.to_string())
    }
}

/// A node's part of the cluster-wide receptionist (see the module header).
///
/// ```no_run
/// # async fn run(node: std::sync::Arc<troupe_remote::Node>, system: troupe::ActorSystem,
/// #     worker: troupe::ActorRef<troupe_remote::testing::echo::EchoMsg>)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use troupe::ServiceKey;
/// use troupe_cluster::receptionist::ClusterReceptionist;
/// use troupe_remote::testing::echo::EchoMsg;
///
/// let workers = ServiceKey::<EchoMsg>::new("workers");
/// let receptionist = ClusterReceptionist::start(node.clone(), &system).await?;
/// receptionist.share(&workers).await?;
///
/// // Registered here, listed on every node that shares the key:
/// system.receptionist().register(&workers, worker);
/// let listing = system.receptionist().find(&workers, Duration::from_secs(1)).await?;
/// for worker in listing.refs() {
///     worker.tell(EchoMsg::Say("hello".into()));
/// }
/// # Ok(()) }
/// ```
pub struct ClusterReceptionist {
    node: Arc<Node>,
    system: ActorSystem,
    kv: Store,
    /// The shared keys' bucket prefixes, and the tasks and exporter that
    /// share each.
    shared: Mutex<HashMap<String, Sharing>>,
}

/// What shares one key on this node.
struct Sharing {
    importer: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
    /// Stops the exporter actor (its ref is typed by the key's message).
    stop_exporter: Box<dyn FnOnce(&ActorSystem) + Send>,
}

/// The bucket of the receptionist of `cluster`.
fn bucket(cluster: &str) -> String {
    format!("troupe-receptionist-{}", escape(cluster).replace('=', "_"))
}

impl ClusterReceptionist {
    /// This node's part of the receptionist, on the bucket
    /// `troupe-receptionist-<cluster>` with one replica (see
    /// [`start_with_replicas`](Self::start_with_replicas)).
    pub async fn start(node: Arc<Node>, system: &ActorSystem) -> Result<Self, ReceptionistError> {
        Self::start_with_replicas(node, system, 1).await
    }

    /// Like [`start`](Self::start), creating the bucket (if this node is
    /// the first) with `replicas` copies: 3 on a three-server NATS cluster
    /// keeps the listings through the loss of any one server.
    pub async fn start_with_replicas(
        node: Arc<Node>,
        system: &ActorSystem,
        replicas: usize,
    ) -> Result<Self, ReceptionistError> {
        let kv = open_bucket(&node, &bucket(&node.config().cluster_name), replicas).await?;
        Ok(ClusterReceptionist {
            node,
            system: system.clone(),
            kv,
            shared: Mutex::new(HashMap::new()),
        })
    }

    /// Makes `key`'s listing cluster-wide on this node: this node's actors
    /// registered under it are listed on every node that shares it, and
    /// theirs here. Sharing a key twice does nothing. Returns once the
    /// bucket's current entries for the key are being read (they reach
    /// the local listing shortly after).
    pub async fn share<M: RemoteMessage>(
        &self,
        key: &ServiceKey<M>,
    ) -> Result<(), ReceptionistError> {
        let prefix = format!("{}.{}", escape(M::TAG), escape(key.name()));
        if self.lock().contains_key(&prefix) {
            return Ok(());
        }
        let kv = self.kv.clone();
        // The watch first, so no write between it and the exporter's
        // first listing is missed.
        let pattern = format!("{prefix}.>");
        let watch = retrying(|| async {
            kv.watch_with_history(pattern.as_str())
                .await
                .map_err(|e| e.to_string())
        })
        .await?;
        let (changes, queued) = mpsc::unbounded_channel();
        let me = Me {
            name: self.node.name().to_string(),
            incarnation: self.node.incarnation(),
        };
        let exporter = self
            .system
            .spawn(Props::new({
                let (node, me, prefix, changes) = (
                    self.node.clone(),
                    me.clone(),
                    prefix.clone(),
                    changes.clone(),
                );
                move || Exporter::<M> {
                    node: node.clone(),
                    me: me.clone(),
                    prefix: prefix.clone(),
                    written: HashMap::new(),
                    changes: changes.clone(),
                    _msg: std::marker::PhantomData,
                }
            }))
            .map_err(|_| ReceptionistError::Stopped)?;
        self.system.receptionist().subscribe(key, exporter.clone());
        let writer = tokio::spawn(write(kv.clone(), queued));
        let importer = Importer {
            node: self.node.clone(),
            system: self.system.clone(),
            key: key.clone(),
            me,
            exporter: exporter.clone(),
            prefix: prefix.clone(),
            changes,
            listed: HashMap::new(),
            waiting: HashMap::new(),
        };
        let importer = tokio::spawn(importer.run(kv, watch));
        let sharing = Sharing {
            importer,
            writer,
            stop_exporter: Box::new(move |system: &ActorSystem| system.stop(&exporter)),
        };
        if let Some(previous) = self.lock().insert(prefix, sharing) {
            // Shared twice at once: the second sharing replaces the first.
            previous.end(&self.system);
        }
        Ok(())
    }

    /// Stops sharing every key and deletes this node's entries, so the
    /// other nodes take its actors off their listings now rather than
    /// when this node is declared down. Local listings keep the local
    /// actors; the remote ones stay until they stop.
    pub async fn leave(&self) {
        let sharing: Vec<(String, Sharing)> = self.lock().drain().collect();
        for (prefix, sharing) in sharing {
            sharing.end(&self.system);
            let mine = format!(
                "{prefix}.{}.{}.",
                escape(self.node.name()),
                self.node.incarnation()
            );
            for key in keys(&self.kv)
                .await
                .into_iter()
                .filter(|k| k.starts_with(&mine))
            {
                delete(&self.kv, &key).await;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sharing>> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for ClusterReceptionist {
    fn drop(&mut self) {
        for (_, sharing) in self.lock().drain() {
            sharing.end(&self.system);
        }
    }
}

impl Sharing {
    fn end(self, system: &ActorSystem) {
        self.importer.abort();
        self.writer.abort();
        (self.stop_exporter)(system);
    }
}

/// This node incarnation, as its keys name it.
#[derive(Clone)]
struct Me {
    name: String,
    incarnation: u64,
}

/// A bucket change, in the order the writer makes it.
enum Change {
    Put(String, Vec<u8>),
    Delete(String),
}

/// Writes the changes in order; each is retried (see `retrying`) and
/// logged if the bucket stays unavailable.
async fn write(kv: Store, mut queued: mpsc::UnboundedReceiver<Change>) {
    while let Some(change) = queued.recv().await {
        match change {
            Change::Put(key, value) => {
                let done = retrying(|| async {
                    kv.put(key.as_str(), value.clone().into())
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
                .await;
                if let Err(e) = done {
                    tracing::warn!(target: "troupe::receptionist", key, error = %e,
                        "a registration was not written: other nodes will not list it");
                }
            }
            Change::Delete(key) => delete(&kv, &key).await,
        }
    }
}

/// Deletes `key` (retried; logged if the bucket stays unavailable).
async fn delete(kv: &Store, key: &str) {
    let done = retrying(|| async { kv.delete(key).await.map_err(|e| e.to_string()) }).await;
    if let Err(e) = done {
        tracing::warn!(target: "troupe::receptionist", key, error = %e,
            "a stale registration was not deleted");
    }
}

/// Every key of the bucket (empty if it cannot be read).
async fn keys(kv: &Store) -> Vec<String> {
    use futures_util::TryStreamExt;
    retrying(|| async {
        match kv.keys().await {
            Ok(keys) => keys.try_collect().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
    .unwrap_or_default()
}

/// Subscribed to the local listing of one key: writes this node's actors
/// in it to the bucket (see the module header).
struct Exporter<M: RemoteMessage> {
    node: Arc<Node>,
    me: Me,
    prefix: String,
    /// The local actors written, by id, with their keys.
    written: HashMap<ActorId, String>,
    changes: mpsc::UnboundedSender<Change>,
    _msg: std::marker::PhantomData<fn() -> M>,
}

impl<M: RemoteMessage> Actor for Exporter<M> {
    type Msg = Listing<M>;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, listing: Listing<M>) {
        let now = self.node.incarnation();
        if now != self.me.incarnation {
            // This node came back from a stall as a new incarnation: the
            // others deleted (or will delete) the old one's entries. Write
            // every local actor again under the new one.
            self.me.incarnation = now;
            for (_, key) in self.written.drain() {
                let _ = self.changes.send(Change::Delete(key));
            }
        }
        // Remote refs in the listing are the importer's: never written back.
        let local: HashMap<ActorId, &ActorRef<M>> = listing
            .refs()
            .iter()
            .filter(|r| !r.is_external())
            .map(|r| (r.id(), r))
            .collect();
        let gone: Vec<ActorId> = self
            .written
            .keys()
            .filter(|id| !local.contains_key(id))
            .copied()
            .collect();
        for id in gone {
            if let Some(key) = self.written.remove(&id) {
                let _ = self.changes.send(Change::Delete(key));
            }
        }
        for (id, actor) in local {
            if self.written.contains_key(&id) {
                continue;
            }
            match self.node.to_bytes(actor) {
                Ok(bytes) => {
                    let key = format!(
                        "{}.{}.{}.{}",
                        self.prefix,
                        escape(&self.me.name),
                        self.me.incarnation,
                        id.as_u64()
                    );
                    let _ = self.changes.send(Change::Put(key.clone(), bytes));
                    self.written.insert(id, key);
                }
                Err(e) => tracing::warn!(target: "troupe::receptionist", actor = %id, error = %e,
                    "a registered actor cannot be exported; it stays local"),
            }
        }
    }
}

/// Whose entry a bucket key is.
struct Owner {
    node: String,
    incarnation: u64,
}

/// `<node>.<incarnation>.<id>` after the prefix.
fn owner(prefix: &str, key: &str) -> Option<Owner> {
    let rest = key.strip_prefix(prefix)?.strip_prefix('.')?;
    let mut parts = rest.split('.');
    let node = unescape(parts.next()?)?;
    let incarnation = parts.next()?.parse().ok()?;
    parts.next()?;
    parts
        .next()
        .is_none()
        .then_some(Owner { node, incarnation })
}

/// Watches the bucket's entries of one key and keeps the other nodes'
/// actors on the local listing (see the module header).
struct Importer<M: RemoteMessage> {
    node: Arc<Node>,
    system: ActorSystem,
    key: ServiceKey<M>,
    me: Me,
    /// Subscribed again when this node becomes a new incarnation, so it
    /// rewrites its entries at once.
    exporter: ActorRef<Listing<M>>,
    prefix: String,
    /// Deletes go through the writer, in order with this node's puts.
    changes: mpsc::UnboundedSender<Change>,
    /// Remote actors on the local listing, by bucket key, with their node.
    listed: HashMap<String, (String, ActorRef<M>)>,
    /// Entries of nodes not heard yet, with when they were first seen.
    waiting: HashMap<String, (String, ActorRef<M>, Instant)>,
}

impl<M: RemoteMessage> Importer<M> {
    async fn run(mut self, kv: Store, mut watch: async_nats::jetstream::kv::Watch) {
        let mut events = self.node.member_events();
        let timeout = self.node.config().heartbeat_timeout;
        let mut sweep = tokio::time::interval(timeout.max(Duration::from_millis(10)));
        let beat = self.node.config().heartbeat_interval;
        let mut renewal = tokio::time::interval(beat.max(Duration::from_millis(10)));
        loop {
            tokio::select! {
                entry = watch.next() => match entry {
                    Some(Ok(entry)) => self.entry(&entry.key, entry.operation, &entry.value),
                    // The watch ended or failed: watch again from the
                    // current values (puts already listed are skipped).
                    _ => {
                        let pattern = format!("{}.>", self.prefix);
                        match retrying(|| async {
                            kv.watch_with_history(pattern.as_str()).await.map_err(|e| e.to_string())
                        }).await {
                            Ok(again) => watch = again,
                            Err(e) => {
                                tracing::warn!(target: "troupe::receptionist", error = %e,
                                    "the bucket cannot be watched; retrying");
                            }
                        }
                    }
                },
                event = events.recv() => match event {
                    Ok(MemberEvent::Up(node)) => self.heard(&node),
                    Ok(MemberEvent::Down { node, .. }) => self.down(&node),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let members: HashSet<String> = self.node.members().into_iter().collect();
                        for node in members.iter() {
                            self.heard(node);
                        }
                        let gone: HashSet<String> = self.listed.values()
                            .map(|(n, _)| n.clone())
                            .filter(|n| !members.contains(n))
                            .collect();
                        for node in gone {
                            self.down(&node);
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = sweep.tick() => self.sweep(timeout),
                _ = renewal.tick() => self.renewed(),
            }
        }
    }

    /// One bucket entry of the key.
    fn entry(&mut self, key: &str, operation: Operation, value: &[u8]) {
        let Some(owner) = owner(&self.prefix, key) else {
            return;
        };
        if owner.node == self.me.name {
            // Ours: the exporter's. One of an earlier incarnation of this
            // node is a leftover: its refs are dead. (The incarnation now,
            // not the one this task last noticed: the exporter may write
            // under a new one first.)
            if owner.incarnation != self.node.incarnation() && operation == Operation::Put {
                let _ = self.changes.send(Change::Delete(key.to_string()));
            }
            return;
        }
        if operation != Operation::Put {
            self.waiting.remove(key);
            if let Some((_, actor)) = self.listed.remove(key) {
                self.system.receptionist().deregister(&self.key, &actor);
            }
            return;
        }
        if self.listed.contains_key(key) || self.waiting.contains_key(key) {
            return;
        }
        let actor: ActorRef<M> = match self.node.from_bytes(value) {
            Ok(actor) => actor,
            Err(e) => {
                tracing::warn!(target: "troupe::receptionist", key, error = %e,
                    "an entry that is not a ref of this key's type is ignored");
                return;
            }
        };
        if actor.is_terminated() {
            // Its node incarnation is known to be gone.
            let _ = self.changes.send(Change::Delete(key.to_string()));
        } else if self.node.members().contains(&owner.node) {
            self.list(key.to_string(), owner.node, actor);
        } else {
            self.waiting
                .insert(key.to_string(), (owner.node, actor, Instant::now()));
        }
    }

    /// This node became a new incarnation (it resumed from a stall the
    /// others took for its death): its entries of the new one are its own
    /// from now on, and the exporter, subscribed again, gets the listing
    /// at once and writes them. (Each renewal adds one subscription; the
    /// exporter's writes are idempotent, so a listing told twice writes
    /// nothing more.)
    fn renewed(&mut self) {
        let now = self.node.incarnation();
        if now != self.me.incarnation {
            self.me.incarnation = now;
            self.system
                .receptionist()
                .subscribe(&self.key, self.exporter.clone());
        }
    }

    fn list(&mut self, key: String, node: String, actor: ActorRef<M>) {
        self.system
            .receptionist()
            .register(&self.key, actor.clone());
        self.listed.insert(key, (node, actor));
    }

    /// `node` was heard: its waiting entries are listed.
    fn heard(&mut self, node: &str) {
        let keys: Vec<String> = self
            .waiting
            .iter()
            .filter(|(_, (n, _, _))| n == node)
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if let Some((node, actor, _)) = self.waiting.remove(&key) {
                self.list(key, node, actor);
            }
        }
    }

    /// `node` is down: the entries of its incarnation that went down are
    /// deleted (by every node that notices; a delete is idempotent). Those
    /// are the ones whose refs are dead; a restarted node's new entries,
    /// under the same name, are alive and stay.
    fn down(&mut self, node: &str) {
        self.drop_dead(|n| n == node);
    }

    /// Takes the dead refs of the nodes `which` picks off the local
    /// listing and out of the bucket.
    fn drop_dead(&mut self, which: impl Fn(&str) -> bool) {
        let dead: Vec<String> = self
            .listed
            .iter()
            .filter(|(_, (n, actor))| which(n) && actor.is_terminated())
            .map(|(k, _)| k.clone())
            .chain(
                self.waiting
                    .iter()
                    .filter(|(_, (n, actor, _))| which(n) && actor.is_terminated())
                    .map(|(k, _)| k.clone()),
            )
            .collect();
        for key in dead {
            self.waiting.remove(&key);
            if let Some((_, actor)) = self.listed.remove(&key) {
                self.system.receptionist().deregister(&self.key, &actor);
            }
            let _ = self.changes.send(Change::Delete(key));
        }
    }

    /// Entries of nodes still unheard a heartbeat timeout after they were
    /// seen are leftovers of nodes that stopped: deleted; and so are the
    /// entries whose refs died since (a down event this task missed).
    fn sweep(&mut self, timeout: Duration) {
        self.drop_dead(|_| true);
        let members: HashSet<String> = self.node.members().into_iter().collect();
        let stale: Vec<String> = self
            .waiting
            .iter()
            .filter(|(_, (n, _, seen))| !members.contains(n) && seen.elapsed() >= timeout)
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            self.waiting.remove(&key);
            let _ = self.changes.send(Change::Delete(key));
        }
        let heard: Vec<String> = self
            .waiting
            .values()
            .map(|(n, _, _)| n.clone())
            .filter(|n| members.contains(n))
            .collect();
        for node in heard {
            self.heard(&node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_its_owner_and_nothing_else_does() {
        let prefix = "tag.workers";
        let key = format!("{prefix}.{}.42.7", escape("node.a"));
        let found = owner(prefix, &key).unwrap();
        assert_eq!(found.node, "node.a");
        assert_eq!(found.incarnation, 42);
        assert!(owner(prefix, "tag.workers.a.x.7").is_none(), "incarnation");
        assert!(owner(prefix, "tag.workers.a.1").is_none(), "no id");
        assert!(owner(prefix, "tag.workers.a.1.2.3").is_none(), "too long");
        assert!(owner("tag.other", &key).is_none(), "another key");
    }

    #[test]
    fn bucket_names_are_valid_for_any_cluster_name() {
        for cluster in ["troupe", "a.b", "x y"] {
            let name = bucket(cluster);
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)),
                "{name}"
            );
        }
    }
}

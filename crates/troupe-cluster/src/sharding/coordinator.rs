//! The coordinator: one tokio task per node and entity type that keeps the
//! region's view of the shard leases and changes them. There is no
//! cluster-wide coordinator: every change is a compare-and-set on one
//! shard's lease in the key-value bucket, so nodes that decide at once
//! cannot both win.
//!
//! Keys (in the leases bucket; `<type>` is the entity type name):
//! - `shard.<type>.<n>`: the node that owns shard `n`; its revision is the
//!   fencing token of the shard's entities there.
//! - `region.<type>.<node>`: held by each node that runs a region of the
//!   type, so shards are only given to nodes that can run them (a proxy
//!   region, which only routes, holds none).
//!
//! What it does:
//! - **allocate** a shard nobody owns (the region asks, on its first
//!   message): to the live region node with the fewest shards, this node
//!   on a tie;
//! - **reallocate** the shards of a node that is down (membership's `Down`,
//!   or a holder not heard from for a heartbeat timeout since this node
//!   started: a leftover of a cluster that stopped as a whole) the same
//!   way; every node tries, one compare-and-set per shard wins;
//! - **rebalance** every `rebalance_interval`: if this node owns more than
//!   one shard more than the least loaded live region node, it hands up to
//!   `rebalance_limit` of its shards over, one at a time: the region stops
//!   the shard and holds its messages, then the lease moves to the target
//!   in one compare-and-set, then the region forwards what it held;
//! - **leave**: hand every shard over the same way (or release it if no
//!   other node runs a region), then release the region key;
//! - **fence**: cut off from NATS for `self_fence_after`, tell the region
//!   to stop its shards and hold; once connected again, load the view
//!   afresh before it serves again;
//! - **step down** after a stall of this process past half the heartbeat
//!   timeout (the others may have declared this node down meanwhile and
//!   moved its shards): the region stops its shards at once, every shard
//!   this node still owns is handed to another live region node (never to
//!   itself; released if there is none), and the region key is given up,
//!   so the node only routes; then **rejoin**, taking the region key
//!   again, as soon as the others cannot have declared it down: the stall
//!   was shorter than their heartbeat timeout by a margin (see
//!   `may_rejoin`), no other node was up, or the node runs under a new
//!   incarnation since. Rebalancing then gives it shards again.
//!
//! A shard this node's previous process owned (same node name) is taken
//! over at a new revision when the coordinator starts, so the new
//! entities' fencing token is above the old ones'.

mod moves;
mod stall;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use troupe::ActorRef;
use troupe_remote::{MemberEvent, Node, RemoteError, RemoteMessage};

use super::envelope::Envelope;
use super::region::{Command, RegionMsg};
use super::remember::Remembered;
use super::Counters;
use crate::lease::{Holder, KeysWatch, LeaseChange, LeaseError, Leases};

/// How often lookups of a peer region are tried, the connection checked,
/// and orphaned shards looked for.
const TICK: Duration = Duration::from_millis(200);

/// The coordinator's settings (from `ShardingSettings`).
pub(crate) struct Plan {
    pub(crate) type_name: String,
    pub(crate) shards: u32,
    pub(crate) rebalance_interval: Option<Duration>,
    pub(crate) rebalance_limit: usize,
    pub(crate) self_fence_after: Duration,
    /// A proxy region: it routes, and never owns a shard.
    pub(crate) proxy: bool,
}

/// One node's coordinator of one entity type.
pub(crate) struct Coordinator<M: Send + 'static> {
    pub(crate) node: Arc<Node>,
    pub(crate) leases: Leases,
    pub(crate) plan: Plan,
    pub(crate) region: ActorRef<RegionMsg<M>>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    /// Owner and revision of each shard, as far as this node knows.
    pub(crate) owners: Vec<(Option<String>, u64)>,
    /// Nodes that run a region of this type.
    pub(crate) regions: BTreeMap<String, u64>,
    pub(crate) finders: HashMap<String, JoinHandle<()>>,
    pub(crate) counters: Arc<Counters>,
    /// Shards the region asked for that could not be allocated yet (no
    /// live region node known, or the bucket did not answer): tried again
    /// every tick until they have an owner.
    pub(crate) pending: BTreeSet<u32>,
    /// Whether this node may own shards now: not a proxy, and not
    /// stepped down after a stall (see the module header).
    pub(crate) hosting: bool,
    /// A stall was seen and the step-down has not run yet.
    pub(crate) stepping_down: bool,
    /// Stepped down after a stall of this long, and not rejoined yet.
    pub(crate) stepped_down: Option<Duration>,
    /// The end of the stall this node last stepped down for: each stall
    /// is handled once.
    pub(crate) handled_stall: Option<std::time::Instant>,
    /// The node's incarnation when it registered its region: another one
    /// since means the others know it afresh.
    pub(crate) registered_incarnation: u64,
    /// The remembered entities, if the type remembers them.
    pub(crate) remembered: Option<Remembered>,
}

impl<M: RemoteMessage> Coordinator<M> {
    fn shard_key(&self, shard: u32) -> String {
        format!("shard.{}.{shard}", self.plan.type_name)
    }

    fn region_key(&self, node: &str) -> String {
        format!("region.{}.{node}", self.plan.type_name)
    }

    fn region_name(type_name: &str, node: &str) -> String {
        format!("region-{type_name}-{node}")
    }

    fn me(&self) -> &str {
        self.leases.me()
    }

    /// Applies one change seen on the bucket, telling the region if it is
    /// news for a shard.
    fn apply(&mut self, key: &str, change: LeaseChange) {
        let (owner, rev) = match change {
            LeaseChange::Held(h) => (Some(h.node), h.revision),
            LeaseChange::Released(rev) => (None, rev),
        };
        let shard_prefix = format!("shard.{}.", self.plan.type_name);
        let region_prefix = format!("region.{}.", self.plan.type_name);
        if let Some(n) = key.strip_prefix(&shard_prefix) {
            let Ok(shard) = n.parse::<u32>() else { return };
            let Some(slot) = self.owners.get_mut(shard as usize) else {
                return;
            };
            if rev <= slot.1 {
                return;
            }
            let came_here = owner.as_deref() == Some(self.leases.me())
                && slot.0.as_deref() != Some(self.leases.me());
            *slot = (owner.clone(), rev);
            if came_here {
                self.recall(shard);
            }
            tracing::debug!(me = %self.leases.me(), shard, owner = ?owner, rev, "sharding: shard owner");
            let me = self.leases.me();
            let owned = self
                .owners
                .iter()
                .filter(|(o, _)| o.as_deref() == Some(me))
                .count();
            self.counters
                .owned
                .store(owned as u64, std::sync::atomic::Ordering::Relaxed);
            self.region.tell(RegionMsg::Owner {
                shard,
                owner: owner.map(|node| Holder {
                    node,
                    revision: rev,
                }),
                rev,
            });
        } else if let Some(node) = key.strip_prefix(&region_prefix) {
            match owner {
                Some(_) => {
                    self.regions.insert(node.to_string(), rev);
                }
                None => {
                    self.regions.remove(node);
                }
            }
        }
    }

    /// Reads the entities remembered for `shard`, which just came to this
    /// node, beside the loop, and hands them to the region to start.
    fn recall(&self, shard: u32) {
        let Some(remembered) = self.remembered.clone() else {
            return;
        };
        let region = self.region.clone();
        tokio::spawn(async move {
            match remembered.recall(shard).await {
                Ok(ids) if !ids.is_empty() => region.tell(RegionMsg::Recalled { shard, ids }),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(shard, error = %e, "sharding: cannot read the remembered entities")
                }
            }
        });
    }

    /// Loads the current state of every key of this type (after a watch
    /// was made, so nothing between the two is missed).
    async fn load(&mut self) -> Result<(), LeaseError> {
        for (key, holder) in self
            .leases
            .holders(&format!("shard.{}.", self.plan.type_name))
            .await?
        {
            self.apply(&key, LeaseChange::Held(holder));
        }
        for (key, holder) in self
            .leases
            .holders(&format!("region.{}.", self.plan.type_name))
            .await?
        {
            self.apply(&key, LeaseChange::Held(holder));
        }
        Ok(())
    }

    async fn watch(&self) -> Result<KeysWatch, LeaseError> {
        self.leases
            .watch_keys(&format!("*.{}.*", self.plan.type_name))
            .await
    }

    /// The live nodes that run a region of this type, except those
    /// `excluded`, with their shard counts, fewest first; this node is
    /// always live to itself.
    fn loads(&self, excluded: impl Fn(&str) -> bool) -> Vec<(usize, String)> {
        let members = self.node.members();
        let mut nodes: Vec<String> = self
            .regions
            .keys()
            .filter(|n| members.contains(n))
            .cloned()
            .collect();
        let me = self.me().to_string();
        if self.hosting && !nodes.contains(&me) {
            nodes.push(me.clone());
        }
        // Stepped down: its region key may still be in the view (the
        // release is on its way back through the watch).
        nodes.retain(|n| !excluded(n) && (self.hosting || *n != me));
        let mut loads: Vec<(usize, String)> = nodes
            .into_iter()
            .map(|n| {
                let count = self
                    .owners
                    .iter()
                    .filter(|(o, _)| o.as_deref() == Some(n.as_str()))
                    .count();
                (count, n)
            })
            .collect();
        // Fewest shards first; this node first among equals (the shard is
        // wanted here), then by name, so nodes with one view agree.
        loads.sort_by(|a, b| (a.0, a.1 != me, &a.1).cmp(&(b.0, b.1 != me, &b.1)));
        loads
    }

    fn least_loaded(&self, excluded: impl Fn(&str) -> bool) -> Option<String> {
        self.loads(excluded).into_iter().next().map(|(_, n)| n)
    }

    fn find_peer(&mut self, peer: String) {
        if let Some(old) = self.finders.remove(&peer) {
            old.abort();
        }
        let node = self.node.clone();
        let region = self.region.clone();
        let name = Self::region_name(&self.plan.type_name, &peer);
        let peer_key = peer.clone();
        let task = tokio::spawn(async move {
            loop {
                let found = match node.lookup::<Envelope<M>>(&name).await {
                    Ok(found) => Some(found),
                    // The peer's region takes another message type (a proxy
                    // or a region started with the wrong type). Its
                    // messages go all the same, through the name: the
                    // peer's node refuses each back with both tags, so it
                    // is counted here and an ask in it fails at once,
                    // instead of waiting here for ever.
                    Err(e @ RemoteError::TagMismatch { .. }) => {
                        tracing::error!(peer = %peer, error = %e, "sharding: the peer's region takes another message type; its messages will be refused");
                        node.select::<Envelope<M>>(&name).ok()
                    }
                    Err(_) => None,
                };
                if let Some(found) = found {
                    region.tell(RegionMsg::Peer {
                        node: peer,
                        region: Some(found),
                    });
                    return;
                }
                tokio::time::sleep(TICK).await;
            }
        });
        self.finders.retain(|_, t| !t.is_finished());
        self.finders.insert(peer_key, task);
    }

    /// Runs until told to leave (or the region's handle is dropped).
    pub(crate) async fn run(mut self, ready: oneshot::Sender<Result<(), LeaseError>>) {
        let mut events = self.node.member_events();
        let setup = async {
            let watch = self.watch().await?;
            self.load().await?;
            self.register().await?;
            Ok::<_, LeaseError>(watch)
        };
        let mut watch = match setup.await {
            Ok(watch) => {
                let _ = ready.send(Ok(()));
                watch
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let mut unheard: HashMap<String, tokio::time::Instant> = HashMap::new();
        let silent_after = self.node.config().heartbeat_timeout;
        let mut tick = tokio::time::interval(TICK);
        let mut last_rebalance = tokio::time::Instant::now();
        let mut disconnected_since: Option<tokio::time::Instant> = None;
        let mut fenced = false;
        loop {
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(Command::Allocate(shard)) => self.allocate(shard).await,
                    Some(Command::FindPeer(node)) => self.find_peer(node),
                    Some(Command::Leave(done)) => {
                        self.leave().await;
                        let _ = done.send(());
                        return;
                    }
                    None => {
                        self.leave().await;
                        return;
                    }
                },
                change = watch.next() => match change {
                    Some(Ok((key, change))) => self.apply(&key, change),
                    // The watch ended (the bucket changed leader): watch
                    // again; it starts with every key's current state.
                    Some(Err(_)) | None => match self.watch().await {
                        Ok(again) => watch = again,
                        Err(e) => tracing::warn!(error = %e, "sharding: cannot watch the shard leases"),
                    },
                },
                event = events.recv() => match event {
                    Ok(MemberEvent::Down { node, .. }) => {
                        tracing::debug!(me = %self.leases.me(), down = %node, "sharding: node down");
                        if let Some(finder) = self.finders.remove(&node) {
                            finder.abort();
                        }
                        self.region.tell(RegionMsg::Peer { node: node.clone(), region: None });
                        if !fenced {
                            self.reallocate_orphans(|o| o == node).await;
                        }
                    }
                    Ok(MemberEvent::Up(_)) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    // The node stopped: nothing can be handed over any
                    // more; the others take its shards as a node that left.
                    Err(_) => return,
                },
                _ = tick.tick() => {
                    if self.check_stall() {
                        self.step_down().await;
                        continue;
                    }
                    if self.stepped_down.is_some() && self.may_rejoin() {
                        self.rejoin().await;
                    }
                    let connected = matches!(
                        self.node.nats_client().connection_state(),
                        async_nats::connection::State::Connected
                    );
                    let now = tokio::time::Instant::now();
                    match (connected, disconnected_since, fenced) {
                        (true, _, true) => {
                            // Back: load the view afresh, then serve.
                            if self.load().await.is_ok() {
                                fenced = false;
                                disconnected_since = None;
                                self.region.tell(RegionMsg::Fenced(false));
                            }
                            continue;
                        }
                        (true, _, false) => disconnected_since = None,
                        (false, None, _) => disconnected_since = Some(now),
                        (false, Some(since), false) if now - since >= self.plan.self_fence_after => {
                            tracing::warn!(region = %self.plan.type_name, "sharding: disconnected from NATS; stopping this node's shards");
                            fenced = true;
                            self.region.tell(RegionMsg::Fenced(true));
                        }
                        (false, Some(_), _) => {}
                    }
                    if fenced {
                        continue;
                    }
                    let pending: Vec<u32> = self.pending.iter().copied().collect();
                    for shard in pending {
                        self.allocate(shard).await;
                    }
                    // A holder this node has not heard for a heartbeat
                    // timeout (counted from when it was first missed, so a
                    // node that just joined and was given shards by a node
                    // that heard it first is not robbed): a leftover of a
                    // cluster that stopped as a whole, which no Down event
                    // will ever announce.
                    let members = self.node.members();
                    let now = tokio::time::Instant::now();
                    unheard.retain(|node, _| !members.contains(node));
                    for (owner, _) in &self.owners {
                        if let Some(owner) = owner {
                            if owner != self.me() && !members.contains(owner) {
                                unheard.entry(owner.clone()).or_insert(now);
                            }
                        }
                    }
                    let silent: Vec<String> = unheard
                        .iter()
                        .filter(|(_, since)| now - **since >= silent_after)
                        .map(|(node, _)| node.clone())
                        .collect();
                    if !silent.is_empty() {
                        self.reallocate_orphans(|o| silent.iter().any(|s| s == o)).await;
                    }
                    if let Some(every) = self.plan.rebalance_interval {
                        if last_rebalance.elapsed() >= every {
                            last_rebalance = tokio::time::Instant::now();
                            self.rebalance().await;
                        }
                    }
                }
            }
        }
    }
}

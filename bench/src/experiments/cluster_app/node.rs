//! One node process of the cluster-app experiment: `troupe-bench
//! cluster-app-node --url URL --name NAME --journal jetstream|local
//! --shards N` runs a region of the `ledger` entity type whose entities
//! are persistent ledgers of command ids, on the JetStream journal (shared
//! by the three nodes, through `ShardRegion::start_persistent`) or on a
//! local journal in a temporary directory of its own (the entities pinned:
//! no rebalancing, no passivation, no node leaves during a row, so an
//! entity never moves away from its journal).
//!
//! A ledger's command is idempotent, as a client that retries needs it
//! to be: an id the ledger already holds is answered again without a new
//! event, and counted. The throughput rows send every id once, so a count
//! above zero there is a command delivered twice, which fails the row; the
//! kill row retries asks the killed node never answered, and its count is
//! the retries whose first attempt had been persisted after all.
//!
//! It says `ready` once its region runs; on a `stats` line it answers
//! `stats <appends> <acquires> <published> <repeats>`: the journal writes
//! of events and of fences (token acquisitions) its entities made, the
//! messages its NATS client published and the ids its ledgers were asked
//! to add again, all since it started. It leaves when its standard input
//! closes, so it never outlives the bench.

use std::collections::HashSet;
use std::error::Error;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, Props, ReplyTo};
use troupe_cluster::persistence::{
    Counters, Done, EachEvent, Effect, JetStreamJournal, Journal, JournalScope, LocalJournal,
    PersistenceError, Persistent, PersistentActor, PersistentContext, PersistentSettings, Replayed,
    Snapshot,
};
use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
use troupe_remote::{Node, RemoteConfig};

/// The entity type of the experiment.
pub const TYPE_NAME: &str = "ledger";

/// What a client asks a ledger.
#[derive(Serialize, Deserialize)]
pub enum LedgerCmd {
    /// Record command `id`; answered with the ledger's length once the
    /// event is durable.
    Add(u64, ReplyTo<u64>),
    /// Every id recorded, in order.
    Read(ReplyTo<Vec<u64>>),
}

impl troupe_remote::RemoteMessage for LedgerCmd {
    const TAG: &'static str = "troupe-bench.cluster-app.LedgerCmd";
}

/// The event: one command id recorded.
#[derive(Serialize, Deserialize)]
pub struct Added(u64);

/// A ledger's state: the ids it acknowledged, in order, and the same ids
/// as a set, so that the check for an id asked again costs the same
/// however long the ledger is (the set is rebuilt from the list when a
/// snapshot is read).
// Serialized as the list alone (`into` takes a clone).
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(from = "Vec<u64>", into = "Vec<u64>")]
pub struct Ids {
    order: Vec<u64>,
    seen: HashSet<u64>,
}

impl From<Vec<u64>> for Ids {
    fn from(order: Vec<u64>) -> Ids {
        let seen = order.iter().copied().collect();
        Ids { order, seen }
    }
}

impl From<Ids> for Vec<u64> {
    fn from(ids: Ids) -> Vec<u64> {
        ids.order
    }
}

/// A ledger: the ids of the commands it acknowledged, in order.
struct Ledger {
    id: String,
    /// The node's count of ids asked for again (the module header).
    repeats: Arc<AtomicU64>,
}

impl PersistentActor for Ledger {
    type Command = LedgerCmd;
    type Event = Added;
    type State = Ids;

    fn persistence_id(&self) -> String {
        self.id.clone()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        state: &Ids,
        cmd: LedgerCmd,
    ) -> Effect<Self> {
        match cmd {
            LedgerCmd::Add(id, reply) if state.seen.contains(&id) => {
                self.repeats.fetch_add(1, Ordering::Relaxed);
                Effect::reply(reply, state.order.len() as u64)
            }
            LedgerCmd::Add(id, reply) => {
                Effect::persist(Added(id)).then_reply(reply, |ids: &Ids| ids.order.len() as u64)
            }
            LedgerCmd::Read(reply) => Effect::reply(reply, state.order.clone()),
        }
    }

    fn apply(state: &mut Ids, Added(id): &Added) {
        // Pushed even if seen: an id persisted twice must show in the
        // list, where the run's verification counts it as doubled.
        state.seen.insert(*id);
        state.order.push(*id);
    }
}

/// A journal that counts the writes made through it (events and fences)
/// and passes everything to the one it wraps, scope included.
struct Counting {
    inner: Arc<dyn Journal>,
    appends: AtomicU64,
    acquires: AtomicU64,
}

impl Journal for Counting {
    fn acquire(&self, persistence_id: &str, token: Option<u64>, done: Done<u64>) {
        self.acquires.fetch_add(1, Ordering::Relaxed);
        self.inner.acquire(persistence_id, token, done)
    }
    fn append(
        &self,
        persistence_id: &str,
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    ) {
        self.appends.fetch_add(1, Ordering::Relaxed);
        self.inner
            .append(persistence_id, token, first_seq_nr, events, done)
    }
    fn replay(
        &self,
        persistence_id: &str,
        after_seq_nr: u64,
        position: u64,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError> {
        self.inner
            .replay(persistence_id, after_seq_nr, position, each)
    }
    fn load_snapshot(&self, persistence_id: &str) -> Result<Option<Snapshot>, PersistenceError> {
        self.inner.load_snapshot(persistence_id)
    }
    fn save_snapshot(&self, persistence_id: &str, snapshot: Snapshot, done: Done<u64>) {
        self.inner.save_snapshot(persistence_id, snapshot, done)
    }
    fn counters(&self) -> &Counters {
        self.inner.counters()
    }
    fn scope(&self) -> JournalScope {
        self.inner.scope()
    }
}

/// The node's settings of the entity type: no passivation, no
/// rebalancing (entities stay where they started for the whole row).
pub fn sharding_settings(shards: u32) -> ShardingSettings {
    let mut settings = ShardingSettings::new(TYPE_NAME);
    settings.shards = shards;
    settings.passivate_after = None;
    settings.rebalance_interval = None;
    settings
}

/// Runs in the node process: serves until stdin closes.
pub fn serve(url: &str, name: &str, journal: &str, shards: u32) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let system = ActorSystem::builder().threads(1).build()?;
    let dir = tempfile::tempdir()?;
    let repeats = Arc::new(AtomicU64::new(0));
    let counted = repeats.clone();
    let (node, region, counting) = runtime.block_on(async {
        let node = Arc::new(Node::start(&system, RemoteConfig::new(url, name)).await?);
        let inner: Arc<dyn Journal> = match journal {
            "jetstream" => {
                Arc::new(JetStreamJournal::open(node.nats_client(), TYPE_NAME, 1).await?)
            }
            "local" => Arc::new(LocalJournal::open(dir.path())?),
            other => return Err(format!("unknown journal {other}: jetstream or local").into()),
        };
        let counting = Arc::new(Counting {
            inner,
            appends: AtomicU64::new(0),
            acquires: AtomicU64::new(0),
        });
        let shared: Arc<dyn Journal> = counting.clone();
        let settings = sharding_settings(shards);
        let region: ShardRegion<LedgerCmd> = if journal == "jetstream" {
            // The way a cluster shards persistent entities: the journal
            // every node reads, the shard's fencing token on each write.
            ShardRegion::start_persistent(
                node.clone(),
                &system,
                settings,
                shared,
                PersistentSettings::default(),
                move |entity| Ledger {
                    id: entity.id.clone(),
                    repeats: counted.clone(),
                },
            )
            .await?
        } else {
            // A node-local journal: `start_persistent` rightly refuses it
            // (a moved entity would recover without its events), so the
            // entities are built here and pinned by the settings above.
            ShardRegion::start(node.clone(), &system, settings, move |entity| {
                let (id, journal, repeats) =
                    (entity.id.clone(), shared.clone(), counted.clone());
                Props::new(move || {
                    let ledger = Ledger {
                        id: id.clone(),
                        repeats: repeats.clone(),
                    };
                    Persistent::new(ledger, journal.clone())
                })
            })
            .await?
        };
        Ok::<_, Box<dyn Error>>((node, region, counting))
    })?;
    let client = node.nats_client();
    let mut out = std::io::stdout();
    writeln!(out, "ready")?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        if line?.trim() == "stats" {
            writeln!(
                out,
                "stats {} {} {} {}",
                counting.appends.load(Ordering::Relaxed),
                counting.acquires.load(Ordering::Relaxed),
                client.statistics().out_messages.load(Ordering::Relaxed),
                repeats.load(Ordering::Relaxed)
            )?;
            out.flush()?;
        }
    }
    runtime.block_on(async {
        region.leave().await;
        node.shutdown().await;
    });
    system.shutdown();
    let _ = system.await_termination_timeout(std::time::Duration::from_secs(10));
    Ok(())
}

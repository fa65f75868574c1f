//! Sharded persistent entities: [`ShardRegion::start_persistent`], which
//! builds each entity's [`Persistent`] itself, on the journal it was
//! given and with the shard's fencing token, and refuses to start on a
//! journal that only one node can read.
//!
//! Why the refusal: a sharded entity moves. A node leaves, dies or stalls,
//! and the entity starts on another node, which recovers it from its
//! journal. A journal on one node's disk (`LocalJournal`) is not there: the
//! entity would start on the new node from nothing (or from a stale copy
//! of an earlier visit), accept commands against the wrong state and
//! acknowledge them, and the events written on the first node would be
//! silently ignored from then on: acknowledged updates lost, the same seat
//! sold twice. No fencing token helps, since the two nodes never write to
//! the same log. So the region looks at [`Journal::scope`] before it
//! starts, and only a journal every node shares
//! ([`JournalScope::Shared`], `JetStreamJournal`) is accepted.
//!
//! Each activation also sees its journal through [`Reporting`], which
//! tells the shard how the activation's recovery went: a journal failure
//! (a record it cannot decode, a server it cannot reach) is a failed
//! activation, restarted after a backoff instead of at once
//! (`sharding/backoff.rs`), since each attempt writes a fence record.

use std::sync::Arc;

use troupe::{ActorSystem, Props};
use troupe_remote::{Node, RemoteMessage};

use super::{EntityContext, ShardRegion, ShardingSettings};
use crate::lease::LeaseError;
use crate::persistence::{
    Counters, Done, EachEvent, Journal, JournalScope, Msg, PersistenceError, Persistent,
    PersistentActor, PersistentSettings, Replayed, Snapshot,
};

/// Why a region did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ShardingError {
    /// Persistent entities were to be sharded on a journal that keeps its
    /// data on one node: an entity that moves would recover without its
    /// events. Use `JetStreamJournal` (or any journal whose
    /// [`Journal::scope`] is [`JournalScope::Shared`]).
    JournalNotShared {
        /// The entity type.
        type_name: String,
        /// What the journal said of itself.
        scope: JournalScope,
    },
    /// The leases bucket, the type name or the region's publication (as
    /// for [`ShardRegion::start`]).
    Lease(LeaseError),
}

impl std::fmt::Display for ShardingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardingError::JournalNotShared { type_name, scope } => write!(
                f,
                "cannot shard the persistent entity type `{type_name}` on a {scope} journal: \
                 a sharded entity moves between nodes and recovers from the journal wherever \
                 it starts, and a node-local journal is not there (the entity would start \
                 without its events, and acknowledged updates would be lost); use \
                 JetStreamJournal, or a journal whose scope() is JournalScope::Shared"
            ),
            ShardingError::Lease(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ShardingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShardingError::Lease(e) => Some(e),
            ShardingError::JournalNotShared { .. } => None,
        }
    }
}

impl From<LeaseError> for ShardingError {
    fn from(e: LeaseError) -> Self {
        ShardingError::Lease(e)
    }
}

impl<M: RemoteMessage> ShardRegion<M> {
    /// Starts this node's region of persistent entities: `entity` makes
    /// the [`PersistentActor`] of an id (called again on every restart of
    /// the entity), and the region runs it as
    /// `Persistent::new(actor, journal)` with `persistent` (snapshots,
    /// stash) and the shard's fencing token ([`EntityContext::token`]:
    /// whatever token `persistent` names is replaced), so an activation
    /// on a node that lost the shard cannot write after the new one.
    ///
    /// The way to shard persistent entities: it checks that `journal` is
    /// one every node reads. Fails with
    /// [`ShardingError::JournalNotShared`] before anything starts if the
    /// journal's [`scope`](Journal::scope) is [`JournalScope::Node`]
    /// (`LocalJournal`), and otherwise as [`start`](Self::start).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use troupe::{ActorSystem, ReplyTo};
    /// use troupe_cluster::persistence::{
    ///     Effect, JetStreamJournal, Journal, PersistentActor, PersistentContext, PersistentSettings,
    /// };
    /// use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
    /// use troupe_remote::{Node, RemoteConfig};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// enum Seat { Book(String, ReplyTo<bool>) }
    /// impl troupe_remote::RemoteMessage for Seat { const TAG: &'static str = "example.Seat"; }
    ///
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Booked(String);
    ///
    /// struct Show { id: String }
    /// impl PersistentActor for Show {
    ///     type Command = Seat;
    ///     type Event = Booked;
    ///     type State = Vec<String>;
    ///     fn persistence_id(&self) -> String { self.id.clone() }
    ///     fn handle(&mut self, _: &mut PersistentContext<'_, Self>, seats: &Vec<String>, Seat::Book(seat, reply): Seat) -> Effect<Self> {
    ///         if seats.contains(&seat) {
    ///             Effect::reply(reply, false)
    ///         } else {
    ///             Effect::persist(Booked(seat)).then_reply(reply, |_| true)
    ///         }
    ///     }
    ///     fn apply(seats: &mut Vec<String>, Booked(seat): &Booked) { seats.push(seat.clone()) }
    /// }
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let system = ActorSystem::builder().build()?;
    /// let node = Arc::new(Node::start(&system, RemoteConfig::new("nats://127.0.0.1:4222", "box-office-1")).await?);
    /// let journal: Arc<dyn Journal> = Arc::new(JetStreamJournal::open(node.nats_client(), "show", 1).await?);
    /// let shows = ShardRegion::start_persistent(
    ///     node.clone(),
    ///     &system,
    ///     ShardingSettings::new("show"),
    ///     journal,
    ///     PersistentSettings::default(),
    ///     |entity| Show { id: entity.id.clone() },
    /// )
    /// .await?;
    /// let show = shows.entity_ref("show-7");
    /// let booked = show.ask(|r| Seat::Book("A12".into(), r), std::time::Duration::from_secs(5)).await?;
    /// assert!(booked);
    /// # Ok(()) }
    /// ```
    pub async fn start_persistent<P, F>(
        node: Arc<Node>,
        system: &ActorSystem,
        settings: ShardingSettings,
        journal: Arc<dyn Journal>,
        persistent: PersistentSettings,
        entity: F,
    ) -> Result<ShardRegion<M>, ShardingError>
    where
        P: PersistentActor,
        Msg<P::Command>: From<M>,
        F: Fn(&EntityContext) -> P + Send + Sync + 'static,
    {
        if let scope @ JournalScope::Node(_) = journal.scope() {
            return Err(ShardingError::JournalNotShared {
                type_name: settings.type_name,
                scope,
            });
        }
        let entity = Arc::new(entity);
        let factory = move |context: &EntityContext| {
            let journal: Arc<dyn Journal> = Arc::new(Reporting {
                journal: journal.clone(),
                activation: context.clone(),
            });
            let (entity, context) = (entity.clone(), context.clone());
            let mut settings = persistent.clone();
            settings.token = Some(context.token);
            Props::new(move || {
                Persistent::new(entity(&context), journal.clone()).with_settings(settings.clone())
            })
        };
        Ok(Self::start(node, system, settings, factory).await?)
    }
}

/// An activation's journal: the type's, telling the activation's shard
/// (through its [`EntityContext`]) whether its recovery is under way,
/// done, or failed, and whether a write failed (after which the
/// persistent actor stops). Everything else passes through.
struct Reporting {
    journal: Arc<dyn Journal>,
    activation: EntityContext,
}

impl Reporting {
    fn check<T>(&self, result: Result<T, PersistenceError>) -> Result<T, PersistenceError> {
        if let Err(e) = &result {
            self.activation.report_failure(e.to_string());
        }
        result
    }

    /// `done`, after reporting a failure the actor stops on.
    fn reporting(&self, done: Done<u64>) -> Done<u64> {
        let activation = self.activation.clone();
        Box::new(move |result| {
            if let Err(e) = &result {
                // A rejected write (too large) leaves the actor running.
                if !e.is_rejection() {
                    activation.report_failure(e.to_string());
                }
            }
            done(result)
        })
    }
}

impl Journal for Reporting {
    fn acquire(&self, persistence_id: &str, token: Option<u64>, done: Done<u64>) {
        // Taking the token starts the recovery: a stop before it is done
        // is a failure (the actor reports a snapshot it cannot decode
        // only to its own hook).
        self.activation.activation.recovering();
        self.journal
            .acquire(persistence_id, token, self.reporting(done));
    }

    fn append(
        &self,
        persistence_id: &str,
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    ) {
        let done = self.reporting(done);
        self.journal
            .append(persistence_id, token, first_seq_nr, events, done);
    }

    fn replay(
        &self,
        persistence_id: &str,
        after_seq_nr: u64,
        position: u64,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError> {
        let replayed =
            self.check(
                self.journal
                    .replay(persistence_id, after_seq_nr, position, each),
            )?;
        // The replay is the recovery's last step.
        self.activation.report_recovered();
        Ok(replayed)
    }

    fn load_snapshot(&self, persistence_id: &str) -> Result<Option<Snapshot>, PersistenceError> {
        self.check(self.journal.load_snapshot(persistence_id))
    }

    fn save_snapshot(&self, persistence_id: &str, snapshot: Snapshot, done: Done<u64>) {
        self.journal.save_snapshot(persistence_id, snapshot, done);
    }

    fn counters(&self) -> &Counters {
        self.journal.counters()
    }

    fn scope(&self) -> JournalScope {
        self.journal.scope()
    }
}

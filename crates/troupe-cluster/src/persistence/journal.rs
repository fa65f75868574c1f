//! The `Journal` trait: what a persistent actor needs of its storage,
//! in bytes (the actor encodes events and states itself), so that the
//! local-disk journal and a later JetStream one are interchangeable.
//!
//! Every call that waits on durability (an append, taking a token, saving
//! a snapshot) answers through a callback, never by blocking: the actor
//! turns the callback into a message to itself, so its worker thread never
//! waits for an fsync. Reads (loading a snapshot, replaying) are called on
//! the actor's thread during recovery.

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::PersistenceError;

/// A completion called once, from whichever thread finished the work.
pub type Done<T> = Box<dyn FnOnce(Result<T, PersistenceError>) + Send>;

/// What a replay hands each event to: its sequence number and bytes. An
/// error ends the replay.
pub type EachEvent<'a> = dyn FnMut(u64, &[u8]) -> Result<(), PersistenceError> + 'a;

/// A saved state: the fold of the id's events up to `seq_nr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The sequence number of the last event the state includes.
    pub seq_nr: u64,
    /// The journal's position of that event's record: recovery replays
    /// from it, skipping the events up to `seq_nr` (a record may hold
    /// later events too: the JetStream journal writes appends that queued
    /// up behind each other as one record). A journal-specific number: a
    /// record number for the local journal, a stream sequence for
    /// JetStream.
    pub position: u64,
    /// The token of the activation that saved it.
    pub token: u64,
    /// The encoded state.
    pub state: Vec<u8>,
}

/// Where replay ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replayed {
    /// The sequence number of the last event replayed (the snapshot's if
    /// none came after it).
    pub seq_nr: u64,
    /// The position of that event's record (the snapshot's if none).
    pub position: u64,
    /// How many events were handed out.
    pub events: u64,
}

impl Replayed {
    /// One stored event, numbered `seq_nr` in the record at `position`:
    /// handed to `each` if it comes after `after_seq_nr`, and only if it
    /// continues the replay (a missing event is an error, never skipped).
    /// Every journal's replay goes through here.
    pub(crate) fn step(
        &mut self,
        persistence_id: &str,
        after_seq_nr: u64,
        (seq_nr, position, event): (u64, u64, &[u8]),
        each: &mut EachEvent<'_>,
    ) -> Result<(), PersistenceError> {
        if seq_nr <= after_seq_nr {
            return Ok(());
        }
        if seq_nr != self.seq_nr + 1 {
            return Err(PersistenceError::Decode {
                persistence_id: persistence_id.to_string(),
                what: "event",
                reason: format!(
                    "event {seq_nr} follows {} in the journal: events are missing",
                    self.seq_nr
                ),
            });
        }
        each(seq_nr, event)?;
        self.seq_nr = seq_nr;
        self.position = position;
        self.events += 1;
        Ok(())
    }
}

/// Storage for persistent actors: an event log per persistence id with a
/// fencing token checked on every append, and the latest snapshot per id.
///
/// Implementations must guarantee, per persistence id:
/// - **Fencing**: [`acquire`](Self::acquire) makes `token` the id's
///   highest (refusing one below it), and from the moment it returns every
///   append with a lower token is refused with
///   [`PersistenceError::Fenced`]. Appends the older activation made
///   before are ordered before the new token, so a replay made after the
///   acquisition's acknowledgement sees them.
/// - **Sequence**: an append's first sequence number continues the id's
///   last one, or it is refused.
/// - **Order and atomicity**: the events of one append are stored as one
///   unit (all or none survive a crash) and acknowledged in append order.
pub trait Journal: Send + Sync + 'static {
    /// Starts an activation of `persistence_id`: with `token` `None` the
    /// journal picks one above every token it has seen for the id (and
    /// keeps it durably); with `Some` (a lease revision) it checks that it
    /// is not below the highest. `done` gets the token once it is durable.
    fn acquire(&self, persistence_id: &str, token: Option<u64>, done: Done<u64>);

    /// Appends `events` (encoded, at least one) as sequence numbers
    /// `first_seq_nr..`, written by the activation holding `token`. `done`
    /// gets the position of the stored unit once it is durable, or the
    /// reason it was refused or failed.
    fn append(
        &self,
        persistence_id: &str,
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    );

    /// Hands `each` every event of `persistence_id` with a sequence number
    /// above `after_seq_nr`, in order, starting the search at `position`
    /// (a snapshot's; 0 for the beginning). An error from `each` ends the
    /// replay and is returned.
    fn replay(
        &self,
        persistence_id: &str,
        after_seq_nr: u64,
        position: u64,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError>;

    /// The latest snapshot of `persistence_id`, if one was saved.
    fn load_snapshot(&self, persistence_id: &str) -> Result<Option<Snapshot>, PersistenceError>;

    /// Saves `snapshot` as the latest of `persistence_id`, atomically, off
    /// the caller's thread; `done` gets its sequence number once durable.
    /// A snapshot from a fenced activation, or older than the one stored,
    /// is not written.
    fn save_snapshot(&self, persistence_id: &str, snapshot: Snapshot, done: Done<u64>);

    /// What the actors using this journal have dropped or been refused.
    fn counters(&self) -> &Counters;

    /// Where the journal's data lives, and so who can recover from it:
    /// only this process ([`JournalScope::Node`], the default: a journal
    /// has to say that it is shared), or every node of a cluster
    /// ([`JournalScope::Shared`]). Sharding refuses to run persistent
    /// entities on a node-scoped journal, since they move between nodes
    /// and would recover from another node's disk.
    fn scope(&self) -> JournalScope {
        JournalScope::Node("a journal that does not say it is shared".into())
    }
}

/// Who can read what a [`Journal`] wrote (see [`Journal::scope`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalScope {
    /// Only the process that wrote it (a directory on local disk): an
    /// entity recovered on another node would not see its events.
    Node(String),
    /// Every node that opens the same store (a replicated stream): an
    /// entity recovers wherever it moves. The string names the store.
    Shared(String),
}

impl std::fmt::Display for JournalScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalScope::Node(what) => write!(f, "node-local ({what})"),
            JournalScope::Shared(what) => write!(f, "shared by the cluster ({what})"),
        }
    }
}

/// Counts of what persistent actors lost or were refused, for alerts: each
/// is also logged (at `error` or `warn`) with the persistence id.
#[derive(Debug, Default)]
pub struct Counters {
    fenced: AtomicU64,
    stash_dropped: AtomicU64,
    failures: AtomicU64,
}

impl Counters {
    /// Activations that stopped because a newer one fenced them.
    pub fn fenced(&self) -> u64 {
        self.fenced.load(Ordering::Relaxed)
    }

    /// Commands dropped because the actor's stash was full (while it
    /// recovered or waited for an append) or because it stopped with them
    /// stashed. Their reply handles were dropped, so an `ask` fails.
    pub fn stash_dropped(&self) -> u64 {
        self.stash_dropped.load(Ordering::Relaxed)
    }

    /// Other failures reported to actors (IO, decoding, serialising).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    pub(crate) fn count_fenced(&self) {
        self.fenced.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_stash_dropped(&self, n: u64) {
        self.stash_dropped.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn count_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }
}

//! The settings of a JetStream journal's stream and snapshot bucket
//! ([`JetStreamOptions`]), and what an acknowledgement means under each.
//!
//! The journal acknowledges an append once the stream's server does, and
//! the server acknowledges once the record is stored by the stream's
//! leader and, with more than one replica, by a quorum of them: in the
//! servers' memory ([`Storage::Memory`]), or written to their files
//! ([`Storage::File`]), where the server calls `fsync` only every
//! `sync_interval` (two minutes by default) unless it is configured with
//! `sync_interval: always`. The guide (page 12) and docs/semantics.md
//! ("Persistent actors") spell out what survives what under each setting.

use std::time::Duration;

use async_nats::jetstream::{kv, stream};

/// Where the journal's stream keeps its records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Storage {
    /// In files on each replica's disk (the default). An acknowledged
    /// record survives a server process restart; it survives a power loss
    /// or an OS crash of the machine only once fsynced (see the module
    /// header), or if the other replicas of a quorum survive.
    #[default]
    File,
    /// In each replica's memory: a record survives only while a quorum of
    /// the servers that hold it keep running. For tests and caches, never
    /// for a system of record.
    Memory,
}

/// How a [`JetStreamJournal`](super::JetStreamJournal) makes its stream
/// (`troupe-journal-<type>`) and snapshot bucket
/// (`troupe-snapshots-<type>`). [`Default`] is one replica, file storage,
/// no size or age limit.
///
/// ```
/// use std::time::Duration;
/// use troupe_cluster::persistence::{JetStreamOptions, Storage};
///
/// let options = JetStreamOptions::default()
///     .replicas(3)
///     .storage(Storage::File)
///     .max_bytes(50 * 1024 * 1024 * 1024)
///     .max_age(Duration::from_secs(365 * 24 * 3600));
/// assert_eq!(options.replicas, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct JetStreamOptions {
    /// Copies of each record and snapshot (1 to 5, clamped): with 3, an
    /// append is acknowledged once 2 servers hold it, and it survives the
    /// loss of any one server. More replicas than servers in the NATS
    /// cluster fail [`open_with`](super::JetStreamJournal::open_with), as
    /// do more than the servers that have joined it so far (a cluster
    /// still forming, just started): the server answers "no suitable
    /// peers for placement" (error code 10005); open again once every
    /// server has joined.
    pub replicas: usize,
    /// Files or memory.
    pub storage: Storage,
    /// The most bytes the stream may hold (`None`: no limit but the
    /// server's). A full stream refuses appends (the server answers
    /// "maximum bytes exceeded", the actor gets
    /// [`PersistenceError::JetStream`](super::PersistenceError::JetStream)
    /// and stops): it never deletes events to make room.
    pub max_bytes: Option<u64>,
    /// Records older than this are deleted by the server (`None`: kept for
    /// ever). Events are an entity's record, so only set it with
    /// snapshots taken well within it: an entity whose events past its
    /// last snapshot were deleted fails recovery with
    /// [`PersistenceError::Decode`](super::PersistenceError::Decode)
    /// ("events are missing"), rather than recover a wrong state.
    pub max_age: Option<Duration>,
}

impl Default for JetStreamOptions {
    fn default() -> Self {
        JetStreamOptions {
            replicas: 1,
            storage: Storage::File,
            max_bytes: None,
            max_age: None,
        }
    }
}

impl JetStreamOptions {
    /// Sets [`replicas`](Self::replicas).
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// Sets [`storage`](Self::storage).
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// Sets [`max_bytes`](Self::max_bytes).
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// Sets [`max_age`](Self::max_age).
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    fn num_replicas(&self) -> usize {
        self.replicas.clamp(1, 5)
    }

    fn storage_type(&self) -> stream::StorageType {
        match self.storage {
            Storage::File => stream::StorageType::File,
            Storage::Memory => stream::StorageType::Memory,
        }
    }

    /// The journal stream's configuration.
    pub(super) fn stream_config(&self, name: &str, subjects: String) -> stream::Config {
        stream::Config {
            name: name.to_string(),
            subjects: vec![subjects],
            num_replicas: self.num_replicas(),
            storage: self.storage_type(),
            // The server's "no limit".
            max_bytes: self
                .max_bytes
                .map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX)),
            max_age: self.max_age.unwrap_or_default(),
            // Refuse an append when full rather than delete old events.
            discard: stream::DiscardPolicy::New,
            // Recovery reads with direct gets (no consumer per activation).
            allow_direct: true,
            ..stream::Config::default()
        }
    }

    /// Whether an existing stream's configuration differs from what these
    /// options ask in anything they set.
    pub(super) fn differs(&self, have: &stream::Config, want: &stream::Config) -> bool {
        have.num_replicas != want.num_replicas
            || have.storage != want.storage
            || have.max_bytes != want.max_bytes
            || have.max_age != want.max_age
            || have.discard != want.discard
            || !have.allow_direct
    }

    /// The snapshot bucket's configuration: one value per id, with the
    /// stream's replicas and storage (no size or age limit: a deleted
    /// snapshot would only make a recovery longer, never wrong, but a
    /// bucket that refused writes would stop saving them).
    pub(super) fn bucket_config(&self, bucket: &str) -> kv::Config {
        kv::Config {
            bucket: bucket.to_string(),
            history: 1,
            num_replicas: self.num_replicas(),
            storage: self.storage_type(),
            ..kv::Config::default()
        }
    }
}

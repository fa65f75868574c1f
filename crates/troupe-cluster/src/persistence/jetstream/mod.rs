//! A [`Journal`] on NATS JetStream (feature `nats`): the events of a
//! cluster's persistent actors in a replicated stream, so that an entity
//! can be recovered on whichever node it moves to.
//!
//! # Layout
//!
//! One stream per entity type, `troupe-journal-<type>`, with one subject
//! per persistence id, `troupe.journal.<type>.<escaped id>` (the id's
//! bytes outside `A-Z a-z 0-9 - _` escaped as `=XX`). Each message is one
//! record: the events of one append (stored and acknowledged as a unit),
//! or a fence (no events) written when an activation takes its token.
//! Every record carries its writer's token and the id's last sequence
//! number after it. Snapshots are the values of a key-value bucket,
//! `troupe-snapshots-<type>`, one key per id. The stream's and the
//! bucket's settings (replicas, storage, limits) are
//! [`JetStreamOptions`]; what an acknowledgement means under each is in
//! `options.rs`.
//!
//! # Fencing: optimistic concurrency on the id's subject
//!
//! Every write to an id's subject (fence or events) is published with
//! `Nats-Expected-Last-Subject-Sequence` set to the stream sequence of the
//! last record this activation wrote or read there: the server refuses it
//! if anything was written to the subject since. Taking a token writes a
//! fence this way, so from the moment `acquire` is acknowledged an older
//! activation's next append is refused (`Fenced`), in whatever process it
//! runs, and everything it wrote before is ordered before the fence,
//! where the new activation replays it. Two activations never interleave
//! writes: this is checked by the server, not after the fact. The server
//! must honour the header under concurrent publishers: nats-server 2.9.21
//! and later do (a race in that check was fixed in server pull request
//! 4319); the pinned server of this repository (`scripts/nats-server.sh`)
//! is 2.15.
//!
//! Every write goes through the journal's writer, one task
//! (`writer.rs`), in the order each id made them: an id's record waits
//! for the previous one's acknowledgement (it needs its stream sequence),
//! so one entity has one record in flight (appends it made meanwhile go
//! out together as its next record), and many entities' records go out
//! back to back, their acknowledgements gathered on one subscription. Replay and snapshot loading block
//! the calling thread on the node's tokio runtime: call them from actor
//! threads (the pool), never from inside that runtime. Reads create no
//! JetStream consumer (`read.rs` says why and how).
//!
//! # Limits
//!
//! A NATS server closes the whole connection of a client that sends a
//! message over its `max_payload` or a protocol line over its
//! `max_control_line`, losing every entity's writes in flight on it. So
//! an id over [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) is refused
//! ([`PersistenceError::InvalidId`]) before anything is sent, and so is a
//! record or a snapshot over the server's current `max_payload`
//! ([`PersistenceError::TooLarge`]); `limits.rs` says how each bound is
//! known. A snapshot over `max_payload` is refused rather than split
//! across messages: a snapshot only shortens recovery (the events stay the
//! record), a split one would need a multi-message write that a crash can
//! leave half done, and a state that large is better cut into entities or
//! the server's `max_payload` raised.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_nats::jetstream::{self, kv, stream};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::error::PersistenceError;
use super::journal::{Counters, Done, EachEvent, Journal, JournalScope, Replayed, Snapshot};
use crate::token::{escape, id_fits};
use write::{IdState, Write};
use writer::Request;

mod limits;
mod options;
mod prefetch;
mod read;
mod write;
mod writer;

pub use limits::MAX_ENTITY_TYPE_BYTES;
pub use options::{JetStreamOptions, Storage};

/// How often a read or write that failed without a verdict is tried
/// again.
const TRIES: u32 = 10;

/// One stored snapshot (a key-value value).
#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    seq_nr: u64,
    position: u64,
    token: u64,
    state: Vec<u8>,
}

/// What this process knows of an id, shared by the writer, snapshots
/// and replays.
type Known = Arc<Mutex<IdState>>;

struct Inner {
    client: async_nats::Client,
    js: jetstream::Context,
    stream: stream::Stream,
    stream_name: String,
    prefix: String,
    snapshots: kv::Store,
    runtime: tokio::runtime::Handle,
    ids: Mutex<HashMap<String, Known>>,
    /// Recovery's reads made ahead (`prefetch.rs`).
    prefetch: prefetch::Prefetch,
    counters: Counters,
}

/// The JetStream journal of one entity type (see the module header).
pub struct JetStreamJournal {
    inner: Arc<Inner>,
    /// The writer's queue (`writer.rs`); it ends when the journal is
    /// dropped, once every write has its answer.
    writes: mpsc::UnboundedSender<Request>,
}

fn failed(op: &'static str, e: impl std::fmt::Display) -> PersistenceError {
    PersistenceError::JetStream {
        op,
        reason: e.to_string(),
    }
}

fn invalid_id(id: &str) -> PersistenceError {
    PersistenceError::InvalidId {
        persistence_id: id.chars().take(100).collect(),
    }
}

impl JetStreamJournal {
    /// Opens the journal of `entity_type` (1 to [`MAX_ENTITY_TYPE_BYTES`]
    /// letters, digits, `-`, `_`) on `client`'s NATS, making its stream
    /// and snapshot bucket with `replicas` copies and otherwise
    /// [`JetStreamOptions::default`] if they do not exist (an existing
    /// stream keeps its settings). Call from a tokio runtime: the
    /// journal's writes run on it.
    pub async fn open(
        client: async_nats::Client,
        entity_type: &str,
        replicas: usize,
    ) -> Result<JetStreamJournal, PersistenceError> {
        let options = JetStreamOptions::default().replicas(replicas);
        Self::open_inner(client, entity_type, &options, false).await
    }

    /// Opens the journal of `entity_type` like [`open`](Self::open), with
    /// the stream and bucket made with `options`; an existing stream is
    /// brought to them (the server refuses some changes, such as the
    /// storage, and so does this call then). Every node should open an
    /// entity type with the same options.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use troupe_cluster::persistence::{JetStreamJournal, JetStreamOptions};
    ///
    /// # async fn open(client: async_nats::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let options = JetStreamOptions::default()
    ///     .replicas(3)
    ///     .max_bytes(100 * 1024 * 1024 * 1024);
    /// let journal = JetStreamJournal::open_with(client, "accounts", options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open_with(
        client: async_nats::Client,
        entity_type: &str,
        options: JetStreamOptions,
    ) -> Result<JetStreamJournal, PersistenceError> {
        Self::open_inner(client, entity_type, &options, true).await
    }

    async fn open_inner(
        client: async_nats::Client,
        entity_type: &str,
        options: &JetStreamOptions,
        apply: bool,
    ) -> Result<JetStreamJournal, PersistenceError> {
        if !limits::entity_type_fits(entity_type) {
            return Err(invalid_id(entity_type));
        }
        let js = jetstream::new(client.clone());
        let prefix = format!("troupe.journal.{entity_type}");
        let stream_name = format!("troupe-journal-{entity_type}");
        let want = options.stream_config(&stream_name, format!("{prefix}.>"));
        let mut stream = js
            .get_or_create_stream(want.clone())
            .await
            .map_err(|e| failed("open the stream", e))?;
        let have = stream.cached_info().config.clone();
        if options.differs(&have, &want) {
            // `open` only turns on direct gets, which reads need.
            let config = if apply {
                want
            } else {
                stream::Config {
                    allow_direct: true,
                    ..have
                }
            };
            if config != stream.cached_info().config {
                tracing::info!(stream = %stream_name, "updating the journal stream's settings");
                js.update_stream(config)
                    .await
                    .map_err(|e| failed("update the stream's settings", e))?;
                stream = js
                    .get_stream(&stream_name)
                    .await
                    .map_err(|e| failed("open the stream", e))?;
            }
        }
        let bucket = format!("troupe-snapshots-{entity_type}");
        let snapshots = match js.get_key_value(&bucket).await {
            Ok(store) => store,
            Err(_) => js
                .create_key_value(options.bucket_config(&bucket))
                .await
                .map_err(|e| failed("open the snapshot bucket", e))?,
        };
        let inner = Arc::new(Inner {
            client,
            js,
            stream,
            stream_name,
            prefix,
            snapshots,
            runtime: tokio::runtime::Handle::current(),
            ids: Mutex::new(HashMap::new()),
            prefetch: prefetch::Prefetch::default(),
            counters: Counters::default(),
        });
        let (writes, requests) = mpsc::unbounded_channel();
        inner.runtime.spawn(writer::run(inner.clone(), requests));
        Ok(JetStreamJournal { inner, writes })
    }

    /// What this process knows of `id` (nothing at first).
    fn known(&self, id: &str) -> Known {
        let mut ids = self.inner.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.entry(id.to_string()).or_default().clone()
    }

    /// The last record this process wrote or read for `id` (0: none).
    fn known_last_record(&self, id: &str) -> u64 {
        let ids = self.inner.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.get(id).map_or(0, |state| {
            state.lock().unwrap_or_else(|e| e.into_inner()).last_record
        })
    }

    fn submit(&self, id: &str, write: Write) {
        let request = Request {
            id: id.to_string(),
            state: self.known(id),
            write,
        };
        if let Err(mpsc::error::SendError(request)) = self.writes.send(request) {
            let done = match request.write {
                Write::Acquire(_, done) | Write::Append { done, .. } => done,
            };
            done(Err(failed(
                "queue a write",
                "the journal's runtime has stopped",
            )));
        }
    }
}

impl Inner {
    fn subject(&self, id: &str) -> String {
        format!("{}.{}", self.prefix, escape(id))
    }
}

impl Journal for JetStreamJournal {
    fn acquire(&self, persistence_id: &str, token: Option<u64>, done: Done<u64>) {
        if !id_fits(persistence_id) {
            return done(Err(invalid_id(persistence_id)));
        }
        self.submit(persistence_id, Write::Acquire(token, done));
    }

    fn append(
        &self,
        persistence_id: &str,
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    ) {
        if !id_fits(persistence_id) {
            return done(Err(invalid_id(persistence_id)));
        }
        self.submit(
            persistence_id,
            Write::Append {
                token,
                first_seq_nr,
                events,
                done,
            },
        );
    }

    fn replay(
        &self,
        persistence_id: &str,
        after_seq_nr: u64,
        position: u64,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError> {
        if !id_fits(persistence_id) {
            return Err(invalid_id(persistence_id));
        }
        let inner = &self.inner;
        let mut replayed = Replayed {
            seq_nr: after_seq_nr,
            position,
            events: 0,
        };
        let mut record = |(sequence, record): (u64, &write::Record)| {
            let first = record.last_seq_nr + 1 - record.events.len() as u64;
            for (i, event) in record.events.iter().enumerate() {
                let step = (first + i as u64, sequence, event.as_slice());
                replayed.step(persistence_id, after_seq_nr, step, each)?;
            }
            Ok(())
        };
        // After `acquire`, this process knows the id's last record (the
        // fence): the replay reads at least that far. Without it, ask the
        // leader how far that is.
        let known = self.known_last_record(persistence_id);
        // Read while the token was taken (`prefetch.rs`): through the
        // fence, so everything the replay below would read.
        if let Some(records) = inner.prefetch.take_records(persistence_id, position, known) {
            for (sequence, stored) in &records {
                record((*sequence, stored))?;
            }
            return Ok(replayed);
        }
        inner.runtime.block_on(async {
            let through = if known > 0 {
                known
            } else {
                match inner.last_record_from_leader(persistence_id).await? {
                    Some((last, _)) => last,
                    None => return Ok(()),
                }
            };
            inner
                .replay_records(
                    persistence_id,
                    position,
                    through,
                    &mut |sequence, stored| record((sequence, stored)),
                )
                .await
        })?;
        Ok(replayed)
    }

    fn load_snapshot(&self, persistence_id: &str) -> Result<Option<Snapshot>, PersistenceError> {
        if !id_fits(persistence_id) {
            return Err(invalid_id(persistence_id));
        }
        let inner = &self.inner;
        let fence = self.known_last_record(persistence_id);
        let value = match inner.prefetch.snapshot(persistence_id, fence) {
            Some(value) => value,
            None => inner
                .runtime
                .block_on(inner.snapshots.get(escape(persistence_id)))
                .map_err(|e| failed("load a snapshot", e))?,
        };
        let Some(value) = value else {
            return Ok(None);
        };
        let stored: StoredSnapshot =
            postcard::from_bytes(&value).map_err(|e| PersistenceError::Decode {
                persistence_id: persistence_id.to_string(),
                what: "snapshot",
                reason: e.to_string(),
            })?;
        Ok(Some(Snapshot {
            seq_nr: stored.seq_nr,
            position: stored.position,
            token: stored.token,
            state: stored.state,
        }))
    }

    fn save_snapshot(&self, persistence_id: &str, snapshot: Snapshot, done: Done<u64>) {
        if !id_fits(persistence_id) {
            return done(Err(invalid_id(persistence_id)));
        }
        let seq_nr = snapshot.seq_nr;
        let stored = StoredSnapshot {
            seq_nr: snapshot.seq_nr,
            position: snapshot.position,
            token: snapshot.token,
            state: snapshot.state,
        };
        let bytes = match postcard::to_allocvec(&stored) {
            Ok(bytes) => bytes,
            Err(e) => return done(Err(failed("encode a snapshot", e))),
        };
        // Measured before it counts as the latest, so that a refused one
        // does not stop a smaller later one at the same sequence number.
        // (A key-value put carries no headers.)
        let size = bytes.len();
        let check =
            |inner: &Inner| limits::check_payload(&inner.client, persistence_id, "snapshot", size);
        if let Err(e) = check(&self.inner) {
            return done(Err(e));
        }
        let state = self.known(persistence_id);
        let current = {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            let current = s.token <= stored.token && s.snapshot_seq_nr < seq_nr;
            if current {
                s.snapshot_seq_nr = seq_nr;
            }
            current
        };
        if !current {
            return done(Err(failed(
                "keep a snapshot",
                "a newer activation holds the id, or a newer snapshot exists",
            )));
        }
        let inner = self.inner.clone();
        let id = persistence_id.to_string();
        self.inner.runtime.spawn(async move {
            // Again just before sending: a reconnect may have brought a
            // server with a lower limit.
            let result = match limits::check_payload(&inner.client, &id, "snapshot", size) {
                Ok(()) => inner
                    .snapshots
                    .put(escape(&id), bytes.into())
                    .await
                    .map(|_| seq_nr)
                    .map_err(|e| failed("save a snapshot", e)),
                Err(e) => Err(e),
            };
            inner.prefetch.forget(&id);
            done(result);
        });
    }

    fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    fn scope(&self) -> JournalScope {
        JournalScope::Shared(format!("JetStream stream {}", self.inner.stream_name))
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn ids_escape_to_subject_tokens() {
        assert_eq!(escape("account-42_a"), "account-42_a");
        assert_eq!(escape("a.b c"), "a=2Eb=20c");
        assert_eq!(escape("=*>"), "=3D=2A=3E");
        assert_eq!(escape("ü"), "=C3=BC");
    }
}

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
//! `troupe-snapshots-<type>`, one key per id (so a state is limited to the
//! server's `max_payload`, 1 MB by default).
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
//! Writes of one id go through one task per id, in the order they were
//! made: each waits for the previous one's acknowledgement (it needs its
//! stream sequence), so one entity has one write in flight, and many
//! entities write in parallel. Replay and snapshot loading block the
//! calling thread on the node's tokio runtime: call them from actor
//! threads (the pool), never from inside that runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, context::PublishErrorKind, kv, stream};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::error::PersistenceError;
use super::journal::{Counters, Done, EachEvent, Journal, JournalScope, Replayed, Snapshot};
use crate::token::escape;

/// How often a write that failed without a verdict is tried again.
const TRIES: u32 = 10;

/// One stored record (the payload of one stream message).
#[derive(Serialize, Deserialize)]
struct Record {
    /// The writer's token.
    token: u64,
    /// The id's last sequence number after this record.
    last_seq_nr: u64,
    /// The events (none: a fence).
    events: Vec<Vec<u8>>,
}

/// One stored snapshot (a key-value value).
#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    seq_nr: u64,
    position: u64,
    token: u64,
    state: Vec<u8>,
}

/// What this process knows of an id: what its last write returned.
#[derive(Clone, Copy, Default)]
struct IdState {
    /// The stream sequence of the id's last record (0: none).
    last_record: u64,
    seq_nr: u64,
    token: u64,
    snapshot_seq_nr: u64,
}

/// A write of one id, in order.
enum Write {
    Acquire(Option<u64>, Done<u64>),
    Append {
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    },
}

/// An id's writer: its queue of writes, and what its last write returned.
type Writer = (mpsc::UnboundedSender<Write>, Arc<Mutex<IdState>>);

struct Inner {
    js: jetstream::Context,
    stream: stream::Stream,
    stream_name: String,
    prefix: String,
    snapshots: kv::Store,
    runtime: tokio::runtime::Handle,
    ids: Mutex<HashMap<String, Writer>>,
    counters: Counters,
}

/// The JetStream journal of one entity type (see the module header).
pub struct JetStreamJournal {
    inner: Arc<Inner>,
}

fn failed(op: &'static str, e: impl std::fmt::Display) -> PersistenceError {
    PersistenceError::JetStream {
        op,
        reason: e.to_string(),
    }
}

impl JetStreamJournal {
    /// Opens the journal of `entity_type` (letters, digits, `-`, `_`) on
    /// `client`'s NATS, making its stream and snapshot bucket with
    /// `replicas` copies if they do not exist. Call from a tokio runtime:
    /// the journal's writes run on it.
    pub async fn open(
        client: async_nats::Client,
        entity_type: &str,
        replicas: usize,
    ) -> Result<JetStreamJournal, PersistenceError> {
        if entity_type.is_empty() || escape(entity_type) != entity_type {
            return Err(PersistenceError::InvalidId {
                persistence_id: entity_type.chars().take(100).collect(),
            });
        }
        let js = jetstream::new(client);
        let prefix = format!("troupe.journal.{entity_type}");
        let stream_name = format!("troupe-journal-{entity_type}");
        let stream = js
            .get_or_create_stream(stream::Config {
                name: stream_name.clone(),
                subjects: vec![format!("{prefix}.>")],
                num_replicas: replicas.clamp(1, 5),
                allow_direct: true,
                ..stream::Config::default()
            })
            .await
            .map_err(|e| failed("open the stream", e))?;
        let bucket = format!("troupe-snapshots-{entity_type}");
        let snapshots = match js.get_key_value(&bucket).await {
            Ok(store) => store,
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket,
                    history: 1,
                    num_replicas: replicas.clamp(1, 5),
                    ..kv::Config::default()
                })
                .await
                .map_err(|e| failed("open the snapshot bucket", e))?,
        };
        Ok(JetStreamJournal {
            inner: Arc::new(Inner {
                js,
                stream,
                stream_name,
                prefix,
                snapshots,
                runtime: tokio::runtime::Handle::current(),
                ids: Mutex::new(HashMap::new()),
                counters: Counters::default(),
            }),
        })
    }

    /// The writer of `id`: its queue and state, started on first use.
    fn writer(&self, id: &str) -> Writer {
        let mut ids = self.inner.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.entry(id.to_string())
            .or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                let state = Arc::new(Mutex::new(IdState::default()));
                self.inner.runtime.spawn(write_loop(
                    self.inner.clone(),
                    id.to_string(),
                    state.clone(),
                    rx,
                ));
                (tx, state)
            })
            .clone()
    }

    fn submit(&self, id: &str, write: Write) {
        if let Err(mpsc::error::SendError(write)) = self.writer(id).0.send(write) {
            let done = match write {
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

    /// The id's last record and its stream sequence, if it has one.
    async fn last_record(&self, id: &str) -> Result<Option<(u64, Record)>, PersistenceError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        match self
            .stream
            .get_last_raw_message_by_subject(&self.subject(id))
            .await
        {
            Ok(message) => Ok(Some((message.sequence, decode(id, &message.payload)?))),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(failed("read the last record", e)),
        }
    }

    /// Publishes `record` to the id's subject if its last record is still
    /// `expected` (0: none): `Ok(Some(sequence))`, or `Ok(None)` if the
    /// subject moved on. A publish without a verdict is tried again.
    async fn publish(
        &self,
        id: &str,
        record: &Record,
        expected: u64,
    ) -> Result<Option<u64>, PersistenceError> {
        let payload = postcard::to_allocvec(record).map_err(|e| failed("encode a record", e))?;
        let mut tries = 0;
        loop {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(
                "Nats-Expected-Last-Subject-Sequence",
                expected.to_string().as_str(),
            );
            let sent = self
                .js
                .publish_with_headers(self.subject(id), headers, payload.clone().into())
                .await;
            let acked = match sent {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            match acked {
                Ok(ack) => return Ok(Some(ack.sequence)),
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    // Moved on: by another writer, or by an earlier try of
                    // ours whose acknowledgement was lost.
                    return match self.last_record(id).await? {
                        Some((seq, last))
                            if tries > 0
                                && last.token == record.token
                                && last.last_seq_nr == record.last_seq_nr
                                && last.events.len() == record.events.len() =>
                        {
                            Ok(Some(seq))
                        }
                        _ => Ok(None),
                    };
                }
                Err(e) if tries + 1 >= TRIES => return Err(failed("append", e)),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// Takes a token for `id` (see [`Journal::acquire`]).
    async fn acquire(&self, id: &str, wanted: Option<u64>) -> Result<IdState, PersistenceError> {
        for _ in 0..TRIES {
            let (last_record, highest, seq_nr) = match self.last_record(id).await? {
                Some((seq, record)) => (seq, record.token, record.last_seq_nr),
                None => (0, 0, 0),
            };
            let token = match wanted {
                None => highest + 1,
                Some(t) if t < highest => {
                    return Err(PersistenceError::Fenced {
                        persistence_id: id.to_string(),
                        token: t,
                        highest,
                    })
                }
                Some(t) => t,
            };
            let fence = Record {
                token,
                last_seq_nr: seq_nr,
                events: Vec::new(),
            };
            if let Some(written) = self.publish(id, &fence, last_record).await? {
                return Ok(IdState {
                    last_record: written,
                    seq_nr,
                    token,
                    snapshot_seq_nr: 0,
                });
            }
            // Another activation wrote meanwhile: look again.
        }
        Err(failed(
            "take a token",
            "the id's subject kept moving under concurrent activations",
        ))
    }
}

fn decode(id: &str, payload: &[u8]) -> Result<Record, PersistenceError> {
    postcard::from_bytes(payload).map_err(|e| PersistenceError::Decode {
        persistence_id: id.to_string(),
        what: "record",
        reason: e.to_string(),
    })
}

/// The writes of one id, one after the other.
async fn write_loop(
    inner: Arc<Inner>,
    id: String,
    state: Arc<Mutex<IdState>>,
    mut writes: mpsc::UnboundedReceiver<Write>,
) {
    let get = |state: &Arc<Mutex<IdState>>| *state.lock().unwrap_or_else(|e| e.into_inner());
    let set = |state: &Arc<Mutex<IdState>>, s: IdState| {
        *state.lock().unwrap_or_else(|e| e.into_inner()) = s;
    };
    while let Some(write) = writes.recv().await {
        match write {
            Write::Acquire(wanted, done) => match inner.acquire(&id, wanted).await {
                Ok(mut s) => {
                    s.snapshot_seq_nr = get(&state).snapshot_seq_nr;
                    set(&state, s);
                    done(Ok(s.token));
                }
                Err(e) => done(Err(e)),
            },
            Write::Append {
                token,
                first_seq_nr,
                events,
                done,
            } => {
                let s = get(&state);
                if token < s.token {
                    done(Err(PersistenceError::Fenced {
                        persistence_id: id.clone(),
                        token,
                        highest: s.token,
                    }));
                    continue;
                }
                if first_seq_nr != s.seq_nr + 1 {
                    done(Err(PersistenceError::SequenceMismatch {
                        persistence_id: id.clone(),
                        expected: first_seq_nr,
                        actual: s.seq_nr + 1,
                    }));
                    continue;
                }
                let record = Record {
                    token,
                    last_seq_nr: s.seq_nr + events.len() as u64,
                    events,
                };
                match inner.publish(&id, &record, s.last_record).await {
                    Ok(Some(written)) => {
                        set(
                            &state,
                            IdState {
                                last_record: written,
                                seq_nr: record.last_seq_nr,
                                token,
                                ..s
                            },
                        );
                        done(Ok(written));
                    }
                    // Someone wrote to the id since this activation's last
                    // record: a newer activation's fence, in this process
                    // or another.
                    Ok(None) => {
                        let highest = match inner.last_record(&id).await {
                            Ok(Some((_, last))) => last.token.max(s.token),
                            _ => s.token,
                        };
                        set(
                            &state,
                            IdState {
                                token: highest,
                                ..s
                            },
                        );
                        done(Err(PersistenceError::Fenced {
                            persistence_id: id.clone(),
                            token,
                            highest,
                        }));
                    }
                    Err(e) => done(Err(e)),
                }
            }
        }
    }
}

impl Journal for JetStreamJournal {
    fn acquire(&self, persistence_id: &str, token: Option<u64>, done: Done<u64>) {
        if persistence_id.is_empty() {
            return done(Err(PersistenceError::InvalidId {
                persistence_id: String::new(),
            }));
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
        let inner = &self.inner;
        let mut replayed = Replayed {
            seq_nr: after_seq_nr,
            position,
            events: 0,
        };
        inner.runtime.block_on(async {
            let Some((last, _)) = inner.last_record(persistence_id).await? else {
                return Ok::<(), PersistenceError>(());
            };
            if position >= last {
                return Ok(());
            }
            let consumer = inner
                .stream
                .create_consumer(jetstream::consumer::pull::OrderedConfig {
                    filter_subject: inner.subject(persistence_id),
                    deliver_policy: jetstream::consumer::DeliverPolicy::ByStartSequence {
                        start_sequence: position.max(1),
                    },
                    ..Default::default()
                })
                .await
                .map_err(|e| failed("replay", e))?;
            let mut messages = consumer.messages().await.map_err(|e| failed("replay", e))?;
            while let Some(message) = messages.next().await {
                let message = message.map_err(|e| failed("replay", e))?;
                let sequence = message
                    .info()
                    .map_err(|e| failed("replay", e))?
                    .stream_sequence;
                let record = decode(persistence_id, &message.payload)?;
                let first = record.last_seq_nr + 1 - record.events.len() as u64;
                for (i, event) in record.events.iter().enumerate() {
                    let step = (first + i as u64, sequence, event.as_slice());
                    replayed.step(persistence_id, after_seq_nr, step, each)?;
                }
                if sequence >= last {
                    break;
                }
            }
            Ok(())
        })?;
        Ok(replayed)
    }

    fn load_snapshot(&self, persistence_id: &str) -> Result<Option<Snapshot>, PersistenceError> {
        let inner = &self.inner;
        let value = inner
            .runtime
            .block_on(inner.snapshots.get(escape(persistence_id)))
            .map_err(|e| failed("load a snapshot", e))?;
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
        let (_, state) = self.writer(persistence_id);
        let current = {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            let current = s.token <= snapshot.token && s.snapshot_seq_nr < snapshot.seq_nr;
            if current {
                s.snapshot_seq_nr = snapshot.seq_nr;
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
        let key = escape(persistence_id);
        let seq_nr = snapshot.seq_nr;
        let stored = StoredSnapshot {
            seq_nr: snapshot.seq_nr,
            position: snapshot.position,
            token: snapshot.token,
            state: snapshot.state,
        };
        self.inner.runtime.spawn(async move {
            let result = match postcard::to_allocvec(&stored) {
                Ok(bytes) => inner
                    .snapshots
                    .put(key, bytes.into())
                    .await
                    .map(|_| seq_nr)
                    .map_err(|e| failed("save a snapshot", e)),
                Err(e) => Err(failed("encode a snapshot", e)),
            };
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

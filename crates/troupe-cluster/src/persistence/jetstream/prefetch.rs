//! Recovery's reads, made ahead while the token is taken.
//!
//! A persistent actor recovers by taking its token (`acquire`, answered by
//! a message), then loading its snapshot and replaying the records after
//! it, which block its thread (`Journal::load_snapshot` and
//! `Journal::replay` are synchronous). On a node whose shards just moved
//! there, hundreds of entities recover at once on a pool of one or two
//! threads: their reads went to the server one after the other, two round
//! trips each, while the rest of the node's traffic waited behind them.
//! So once the fence is written, the acquiring task (on the node's tokio
//! runtime, where all the entities' acquisitions run side by side) also
//! reads the snapshot and the records after it, up to the fence, and
//! keeps them here; the actor's `load_snapshot` and `replay` then find
//! them without a round trip.
//!
//! What is read ahead is what recovery would read: the records up to the
//! activation's own fence (everything acknowledged before the token), from
//! the snapshot that was current once the fence was written (a snapshot
//! saved later by an older activation holds only events before the fence,
//! so either is a valid start). An id's entry is dropped once its next
//! record or snapshot is stored (by the writer, and by the snapshot's
//! task: one place each), and by its next acquisition, so a journal user
//! that writes before replaying reads the stream. Bounded: at most [`RECORDS`] records and
//! [`ID_BYTES`] of events per id (a longer tail is read by the replay
//! itself, as before), [`BYTES`] held in all, and [`AT_ONCE`] ids read at
//! once (a burst of ten thousand activations sent ten thousand reads
//! together, and the server's answers to the last of them came after the
//! client's timeout). An entry whose recovery never comes (it failed
//! before its replay) stays until the id writes, within those bounds.

use std::collections::HashMap;
use std::sync::Mutex;

use super::read::Stored;
use super::{Inner, PersistenceError, StoredSnapshot};
use crate::token::escape;

/// Records read ahead for one id at most.
const RECORDS: usize = 1_000;

/// Bytes of events read ahead for one id at most.
const ID_BYTES: usize = 1024 * 1024;

/// Bytes of events held for all ids at most; past it an id's reads are
/// not made ahead.
const BYTES: usize = 64 * 1024 * 1024;

/// Ids whose reads are under way at once, at most; the others' tokens
/// wait for a turn.
const AT_ONCE: usize = 64;

/// The reads made ahead for one id.
pub(super) struct Prefetched {
    /// The snapshot's value, as stored (`None`: the id has none).
    pub(super) snapshot: Option<bytes::Bytes>,
    /// The stream sequence the records were read from (the snapshot's
    /// position, or 0).
    pub(super) from: u64,
    /// Every record of the id from `from` through its fence.
    pub(super) records: Vec<Stored>,
    /// The fence's stream sequence: the reads are used only by the
    /// activation that wrote it (what this process knows as the id's last
    /// record when it recovers).
    fence: u64,
    /// The records' events' bytes.
    bytes: usize,
}

/// The entries and their bytes.
#[derive(Default)]
struct Held {
    ids: HashMap<String, Prefetched>,
    bytes: usize,
}

impl Held {
    fn remove(&mut self, id: &str) -> Option<Prefetched> {
        let p = self.ids.remove(id)?;
        self.bytes -= p.bytes;
        Some(p)
    }
}

/// The reads made ahead, by persistence id.
pub(super) struct Prefetch {
    held: Mutex<Held>,
    turns: tokio::sync::Semaphore,
}

impl Default for Prefetch {
    fn default() -> Self {
        Prefetch {
            held: Mutex::default(),
            turns: tokio::sync::Semaphore::new(AT_ONCE),
        }
    }
}

impl Prefetch {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The snapshot read ahead for `id` after the fence at `fence`, if
    /// its reads were made (the entry stays for the replay).
    pub(super) fn snapshot(&self, id: &str, fence: u64) -> Option<Option<bytes::Bytes>> {
        let held = self.lock();
        let p = held.ids.get(id).filter(|p| p.fence == fence)?;
        Some(p.snapshot.clone())
    }

    /// The records read ahead for `id` from `from` after the fence at
    /// `fence`, taken out (an entry for another fence or start is
    /// dropped).
    pub(super) fn take_records(&self, id: &str, from: u64, fence: u64) -> Option<Vec<Stored>> {
        match self.lock().remove(id) {
            Some(p) if p.from == from && p.fence == fence => Some(p.records),
            _ => None,
        }
    }

    /// Drops what was read ahead for `id`: it is being written.
    pub(super) fn forget(&self, id: &str) {
        let mut held = self.lock();
        if !held.ids.is_empty() {
            held.remove(id);
        }
    }
}

impl Inner {
    /// Reads `id`'s snapshot and its records from there through `fence`
    /// (its own fence's stream sequence) and keeps them for its recovery.
    /// Anything unusual (a read that fails, a snapshot that does not
    /// decode, a tail over [`RECORDS`]) leaves nothing: recovery then
    /// reads as it would have, and reports what it finds.
    pub(super) async fn prefetch(&self, id: &str, fence: u64) {
        // An earlier activation's entry, never used, is not this one's.
        self.prefetch.forget(id);
        let Ok(_turn) = self.prefetch.turns.acquire().await else {
            return;
        };
        if self.prefetch.lock().bytes >= BYTES {
            return;
        }
        let Ok(snapshot) = self.snapshots.get(escape(id)).await else {
            return;
        };
        let from = match &snapshot {
            None => 0,
            Some(value) => match postcard::from_bytes::<StoredSnapshot>(value) {
                Ok(stored) => stored.position,
                Err(_) => return,
            },
        };
        let mut records = Vec::new();
        let mut bytes = 0;
        let read = self
            .replay_records(id, from, fence, &mut |sequence, record| {
                bytes += record.events.iter().map(Vec::len).sum::<usize>();
                if records.len() >= RECORDS || bytes > ID_BYTES {
                    // Not an error of the journal: ends the read, and the
                    // replay reads the tail itself.
                    return Err(PersistenceError::JetStream {
                        op: "read ahead",
                        reason: "the tail is longer than is read ahead".into(),
                    });
                }
                records.push((sequence, record.clone()));
                Ok(())
            })
            .await;
        if read.is_ok() {
            let prefetched = Prefetched {
                snapshot,
                from,
                records,
                fence,
                bytes,
            };
            let mut held = self.prefetch.lock();
            held.remove(id);
            held.bytes += bytes;
            held.ids.insert(id.to_string(), prefetched);
        }
    }
}

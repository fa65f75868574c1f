//! The default [`Journal`]: local disk, on troupe-journal.
//!
//! # Layout, and why
//!
//! One directory per entity type (one `LocalJournal`), shared by every
//! persistence id of that type:
//!
//! ```text
//! <dir>/log/         a troupe-journal log (group commit by default): one
//!                    record per append, tagged with the persistence id
//!                    (see `local/record.rs`), and one per token taken
//! <dir>/snapshots/   the latest snapshot of each id, in a file named
//!                    after the id (`local/snapshots.rs` says how)
//! ```
//!
//! On open the log is read once to rebuild an in-memory index: per id, the
//! last sequence number, the highest fencing token, and the position of
//! its first record. That is O(ids) memory, about 100 bytes an id.
//!
//! What it costs, against one log per persistence id:
//! - **100 entities writing at once**: one log means one writer thread and
//!   one fsync per batch for all of them, so their appends share each
//!   fsync (group commit across entities). One log per id would start 100
//!   writer threads and pay 100 fsyncs for the same 100 events, and hold
//!   100 directory locks and open segment files.
//! - **1,000,000 events of one entity**: recovery reads the snapshot, then
//!   the log from the snapshot's position on (a segment at a time,
//!   skipping other ids' records after reading their header): the cost is
//!   the tail since the last snapshot, not the million, whichever the
//!   layout. Without a snapshot, a shared log makes replay read the other
//!   ids' records interleaved with this one's (from the id's first record
//!   on); snapshots every N events bound that.
//! - **Opening**: the shared log is checked and indexed once per entity
//!   type (a pass over the whole log), not once per id.
//!
//! Events are never deleted (no compaction yet): the log grows with every
//! event; a snapshot bounds replay time, not disk use.
//!
//! # Fencing
//!
//! The index's mutex orders every check against the log: an append's
//! token is compared with the id's highest, and its record is queued to
//! the log (which fixes its position) under the same lock. A token taken
//! by [`Journal::acquire`] is the highest from that moment, so any later
//! append with a lower one is refused before it reaches the log. Taking a
//! token writes nothing: it is acknowledged once every append queued
//! before it has been answered (`troupe_journal::Journal::after_pending`),
//! so the new activation's replay sees the older one's acknowledged
//! events, and recovery works on a full disk. A token reaches the log
//! with the first events record written under it; one never written under
//! belonged to an activation that wrote nothing, so after a restart the
//! next activation may reuse it without any two writers' records
//! interleaving. (Logs written before this keep their fence records,
//! which the index still reads.)
//!
//! Across processes, troupe-journal's directory lock lets only one process
//! open the directory; fencing here orders activations within it. A
//! cluster passes the owner's lease revision as the token instead.
//!
//! # A failed write
//!
//! When the log fails (a full disk, an IO error), every append queued
//! behind the failure fails too, and the actors that made them stop. The
//! next acquisition or append repairs the log in place: it is cut back to
//! its last acknowledged record (nothing of a failed append stays: a
//! failed append is never stored) and the index's entries go back to
//! match (`local/index.rs`). On a disk that is still full the repair
//! writes nothing, so recovery and reads go on; the next append fails
//! again, and succeeds once there is room, with no reopening.

mod index;
mod record;
mod snapshots;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use troupe_journal::{read_from, Journal as Log, MAX_RECORD};
pub use troupe_journal::{Durability, Options as LogOptions};

use self::index::{lock, Entry, Index};
use self::record::Body;
use super::error::PersistenceError;
use super::journal::{Counters, Done, EachEvent, Journal, JournalScope, Replayed, Snapshot};

fn lock_log(log: &Mutex<Log>) -> MutexGuard<'_, Log> {
    // Taken after the index's lock; the log itself is consistent whatever
    // a panicking holder did (its own state is behind its own locks).
    log.lock().unwrap_or_else(|e| e.into_inner())
}

/// Repairs a failed log and takes the index back to match (module
/// header); nothing to do if the log has not failed.
fn repair(log: &mut Log, index: &mut HashMap<String, Entry>) -> Result<(), PersistenceError> {
    if !log.is_failed() {
        return Ok(());
    }
    let queued = log.next_seq();
    log.repair()?;
    let acknowledged = log.acknowledged();
    index::roll_back(index, acknowledged);
    tracing::warn!(
        cut = queued.saturating_sub(acknowledged),
        acknowledged,
        "local journal repaired after a failed write: the records after the last \
         acknowledged one are cut (their appends had failed)"
    );
    Ok(())
}

/// The local-disk journal of one entity type (see the module header).
///
/// ```
/// use std::sync::Arc;
/// use troupe_cluster::persistence::{Journal, LocalJournal};
///
/// let dir = tempfile::tempdir().unwrap();
/// let journal: Arc<dyn Journal> = Arc::new(LocalJournal::open(dir.path()).unwrap());
/// assert_eq!(journal.counters().fenced(), 0);
/// ```
pub struct LocalJournal {
    log_dir: PathBuf,
    snapshot_dir: PathBuf,
    index: Index,
    counters: Counters,
    // Dropped in this order: pending appends are written and answered,
    // then pending snapshots. Locked after `index`, when both are.
    log: Mutex<Log>,
    snapshots: snapshots::Writer,
}

impl LocalJournal {
    /// Opens (creating it if needed) the journal in `dir`, with group
    /// commit: an append is acknowledged after the fsync of its batch.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Journal`] if the log cannot be opened (IO,
    /// another process holds it, a damaged record in the middle), and
    /// [`PersistenceError::Decode`] if a record is not one this journal
    /// writes.
    pub fn open(dir: impl AsRef<Path>) -> Result<LocalJournal, PersistenceError> {
        LocalJournal::open_with(dir, LogOptions::default())
    }

    /// Opens the journal in `dir` with the log's durability and segment
    /// size chosen (`Durability::None` for tests and caches that may lose
    /// the last writes on a machine crash).
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open).
    pub fn open_with(
        dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> Result<LocalJournal, PersistenceError> {
        let dir = dir.as_ref();
        let log_dir = dir.join("log");
        let snapshot_dir = dir.join("snapshots");
        std::fs::create_dir_all(&snapshot_dir).map_err(|e| PersistenceError::SnapshotIo {
            op: "create the directory of",
            path: snapshot_dir.clone(),
            reason: e.to_string(),
        })?;
        // Opening recovers the log (a torn tail is truncated) before it is
        // indexed, so the index never counts a record that is not there.
        let log = Log::open(&log_dir, options)?;
        let index = index::rebuild(&log_dir)?;
        Ok(LocalJournal {
            snapshots: snapshots::Writer::start(snapshot_dir.clone())?,
            log_dir,
            snapshot_dir,
            index: Arc::new(Mutex::new(index)),
            counters: Counters::default(),
            log: Mutex::new(log),
        })
    }

    /// The last sequence number and highest token of `persistence_id`
    /// (0 and 0 for an id never written).
    pub fn position_of(&self, persistence_id: &str) -> (u64, u64) {
        lock(&self.index)
            .get(persistence_id)
            .map_or((0, 0), |e| (e.seq_nr, e.token))
    }

    /// Every events record of `persistence_id` in log order, as (token,
    /// first sequence number, event count): what tests and tools read to
    /// check that no two activations interleaved.
    ///
    /// # Errors
    ///
    /// As a replay.
    pub fn records_of(
        &self,
        persistence_id: &str,
    ) -> Result<Vec<(u64, u64, u32)>, PersistenceError> {
        lock_log(&self.log).sync()?;
        let mut out = Vec::new();
        let mut error = None;
        read_from(&self.log_dir, 0, |r| match record::decode(&r.payload) {
            Ok(rec) if rec.id == persistence_id.as_bytes() => {
                if let Body::Events {
                    first_seq_nr,
                    count,
                    ..
                } = rec.body
                {
                    out.push((rec.token, first_seq_nr, count));
                }
            }
            Ok(_) => {}
            Err(e) => {
                error.get_or_insert(e);
            }
        })?;
        error.map_or(Ok(out), Err)
    }

    /// Waits until every snapshot saved so far is written or refused.
    pub fn flush_snapshots(&self) {
        self.snapshots.flush();
    }

    /// Every event of `persistence_id` in the journal in `dir`, in order,
    /// read without opening the journal: for tools and checks that read
    /// the journal of a process still running (which holds its lock). A
    /// record being written as this reads may be missed, never half-read.
    ///
    /// ```
    /// use troupe_cluster::persistence::LocalJournal;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// drop(LocalJournal::open(dir.path()).unwrap());
    /// let mut count = 0;
    /// LocalJournal::read_events(dir.path(), "cart-1", &mut |_seq_nr, _event| {
    ///     count += 1;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// assert_eq!(count, 0);
    /// ```
    ///
    /// # Errors
    ///
    /// As a replay: the log cannot be read, a record is not one this
    /// journal writes, an event is missing, or `each` failed.
    pub fn read_events(
        dir: impl AsRef<Path>,
        persistence_id: &str,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError> {
        read_events_from(
            &dir.as_ref().join("log"),
            persistence_id,
            0,
            Replayed::default(),
            each,
        )
    }

    /// The file that holds `persistence_id`'s snapshot (whether or not
    /// one was saved): `<dir>/snapshots/`, then the id escaped, or for a
    /// long id the start of it and a hash of it.
    pub fn snapshot_path(&self, persistence_id: &str) -> PathBuf {
        self.snapshot_dir.join(snapshots::file_name(persistence_id))
    }

    /// The directory of the log (for tools that read it with
    /// `troupe_journal::read_from`).
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }
}

/// Hands `each` the events of `persistence_id` after `replayed.seq_nr`
/// from the log in `log_dir`, starting at record `position`: a replay's
/// body, shared by [`Journal::replay`] and [`LocalJournal::read_events`].
fn read_events_from(
    log_dir: &Path,
    persistence_id: &str,
    position: u64,
    mut replayed: Replayed,
    each: &mut EachEvent<'_>,
) -> Result<Replayed, PersistenceError> {
    let after_seq_nr = replayed.seq_nr;
    let id = persistence_id.as_bytes();
    let mut error = None;
    read_from(log_dir, position, |r| {
        if error.is_some() {
            return;
        }
        let result = record::decode(&r.payload).and_then(|rec| {
            let Body::Events {
                first_seq_nr,
                count,
                bytes,
            } = rec.body
            else {
                return Ok(());
            };
            if rec.id != id {
                return Ok(());
            }
            record::each_event(bytes, count, |i, event| {
                let seq_nr = first_seq_nr + u64::from(i);
                replayed.step(persistence_id, after_seq_nr, (seq_nr, r.seq, event), each)
            })
        });
        if let Err(e) = result {
            error = Some(e);
        }
    })?;
    error.map_or(Ok(replayed), Err)
}

fn check_id(id: &str) -> Result<(), PersistenceError> {
    if !crate::token::id_fits(id) {
        return Err(PersistenceError::InvalidId {
            persistence_id: id.chars().take(100).collect(),
        });
    }
    Ok(())
}

impl Journal for LocalJournal {
    fn acquire(&self, persistence_id: &str, token: Option<u64>, done: Done<u64>) {
        if let Err(e) = check_id(persistence_id) {
            return done(Err(e));
        }
        let mut index = lock(&self.index);
        let mut log = lock_log(&self.log);
        // Before the recovery that follows reads the log: what it reads
        // is then exactly what was acknowledged.
        if let Err(e) = repair(&mut log, &mut index) {
            drop((log, index));
            return done(Err(e));
        }
        let entry = index.entry(persistence_id.to_string()).or_default();
        let token = match token {
            None => entry.token + 1,
            Some(t) if t < entry.token => {
                let highest = entry.token;
                drop((log, index));
                return done(Err(PersistenceError::Fenced {
                    persistence_id: persistence_id.to_string(),
                    token: t,
                    highest,
                }));
            }
            Some(t) => t,
        };
        entry.token = token;
        // Queued under the lock: every append checked before this one is
        // answered first (so the replay sees it), every later one with a
        // lower token is refused. Nothing is written (module header). If
        // one of those appends failed, the log may end in records never
        // acknowledged: the activation fails, and the next acquisition
        // repairs the log before its replay.
        log.after_pending(move |r| done(r.map(|()| token).map_err(PersistenceError::from)));
    }

    fn append(
        &self,
        persistence_id: &str,
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    ) {
        if let Err(e) = check_id(persistence_id) {
            return done(Err(e));
        }
        let bytes = record::events(persistence_id, token, first_seq_nr, &events);
        // Refused before the index moves: the id's sequence stays where
        // the actor's state is, and its next command appends normally.
        if bytes.len() > MAX_RECORD {
            return done(Err(PersistenceError::TooLarge {
                persistence_id: persistence_id.to_string(),
                what: "event record",
                size: bytes.len(),
                limit: MAX_RECORD,
            }));
        }
        let mut index = lock(&self.index);
        let mut log = lock_log(&self.log);
        if let Err(e) = repair(&mut log, &mut index) {
            drop((log, index));
            return done(Err(e));
        }
        let entry = match index.get_mut(persistence_id) {
            Some(e) => e,
            None => index.entry(persistence_id.to_string()).or_default(),
        };
        if token < entry.token {
            let highest = entry.token;
            drop((log, index));
            return done(Err(PersistenceError::Fenced {
                persistence_id: persistence_id.to_string(),
                token,
                highest,
            }));
        }
        if first_seq_nr != entry.seq_nr + 1 {
            let actual = entry.seq_nr + 1;
            drop((log, index));
            return done(Err(PersistenceError::SequenceMismatch {
                persistence_id: persistence_id.to_string(),
                expected: first_seq_nr,
                actual,
            }));
        }
        entry.token = token;
        // Under the lock, so the position read here is the one the log
        // gives the record (every append goes through this lock).
        let position = log.next_seq();
        entry.appended(position, events.len() as u64, log.acknowledged());
        log.append_with(&bytes, move |r| done(r.map_err(PersistenceError::from)));
    }

    fn replay(
        &self,
        persistence_id: &str,
        after_seq_nr: u64,
        position: u64,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError> {
        let first = lock(&self.index)
            .get(persistence_id)
            .and_then(|e| e.first_position);
        let replayed = Replayed {
            seq_nr: after_seq_nr,
            position: position.saturating_sub(1),
            events: 0,
        };
        let Some(first) = first else {
            return Ok(replayed);
        };
        read_events_from(
            &self.log_dir,
            persistence_id,
            position.max(first),
            replayed,
            each,
        )
    }

    fn load_snapshot(&self, persistence_id: &str) -> Result<Option<Snapshot>, PersistenceError> {
        let path = self.snapshot_path(persistence_id);
        let Some(snapshot) = snapshots::read(&path, persistence_id)? else {
            return Ok(None);
        };
        // Called by recovery once its token is taken, when every earlier
        // append of the id has been answered: the index's last event is
        // the log's.
        let journal_seq_nr = self.position_of(persistence_id).0;
        if snapshot.seq_nr > journal_seq_nr {
            return Err(PersistenceError::SnapshotAhead {
                persistence_id: persistence_id.to_string(),
                snapshot: path.display().to_string(),
                snapshot_seq_nr: snapshot.seq_nr,
                journal_seq_nr,
            });
        }
        Ok(Some(snapshot))
    }

    fn save_snapshot(&self, persistence_id: &str, snapshot: Snapshot, done: Done<u64>) {
        let index = self.index.clone();
        let id = persistence_id.to_string();
        let (token, seq_nr) = (snapshot.token, snapshot.seq_nr);
        let still_current = Box::new(move || {
            let mut index = lock(&index);
            match index.get_mut(&id) {
                Some(e) if e.token <= token && e.snapshot_seq_nr < seq_nr => {
                    e.snapshot_seq_nr = seq_nr;
                    true
                }
                _ => false,
            }
        });
        self.snapshots.save(snapshots::Job {
            id: persistence_id.to_string(),
            snapshot,
            still_current,
            done,
        });
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn scope(&self) -> JournalScope {
        JournalScope::Node(format!("LocalJournal in {}", self.log_dir.display()))
    }
}

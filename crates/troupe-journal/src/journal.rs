//! The writable journal: recovery on open, appends under a durability
//! policy, segment rotation.
//!
//! Invariants:
//! - Records get consecutive sequence numbers in the order they are written
//!   to the file; a sequence number is handed out only to a record that
//!   will be written (or whose failure is reported).
//! - An append is acknowledged (returns, or calls back with `Ok`) only
//!   after its whole frame is written, and, under `GroupCommit` and
//!   `SyncEach`, after an fsync that covers it.
//! - One writer per directory: `open` takes the directory's `LOCK` file
//!   exclusively (an OS file lock, released when the journal is dropped or
//!   the process dies), before recovery touches anything.
//! - After a failed write the journal is *failed*: every later append gets
//!   an error, so no record is acknowledged behind a partial one, until
//!   [`Journal::repair`] cuts the log back to its last acknowledged record
//!   (or the journal is reopened, which truncates a partial frame as a torn
//!   tail).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::committer::{self, Committer, Done};
use crate::error::JournalError;
use crate::frame::{self, MAX_RECORD};
use crate::guard::lock;
use crate::reader::walk;
use crate::segment::{self, HEADER};
use crate::tail::{Status, Tail};

/// When an append counts as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Written to the OS (one `write` per append), never fsynced: survives
    /// a crash of the process, not of the machine.
    None,
    /// Appends are batched by a writer thread; each batch is written and
    /// fsynced once, and its appends are acknowledged after that fsync.
    GroupCommit,
    /// Each append is written and fsynced before it returns.
    SyncEach,
}

/// How a journal is opened.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The durability policy.
    pub durability: Durability,
    /// A segment is closed and a new one started once it reaches this size.
    pub segment_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::GroupCommit,
            segment_bytes: 64 << 20,
        }
    }
}

/// A durable append-only log of byte records (see the crate docs).
pub struct Journal {
    tail: Arc<Mutex<Tail>>,
    status: Arc<Status>,
    durability: Durability,
    committer: Option<(Committer, JoinHandle<()>)>,
    frame: Mutex<Vec<u8>>,
    /// Held while the journal is open (released when it is dropped, after
    /// the committer has finished).
    _lock: File,
}

impl Journal {
    /// Opens (creating it if needed) the journal in `dir`, recovering from
    /// a crash: a torn tail of the last segment is truncated away, the
    /// temporary file of a rotation that never got renamed is removed, and
    /// a segment a rotation left unsealed gets its seal.
    ///
    /// # Errors
    ///
    /// If the directory cannot be created or read, a file cannot be opened
    /// for writing (read-only directory), or the log is damaged: a record
    /// in the middle, or a segment missing, emptied or cut
    /// ([`JournalError::Corrupt`] names the file and byte offset; see the
    /// crate docs for every case).
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Journal, JournalError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| JournalError::io("create directory", &dir, e))?;
        // Taken before recovery: a second writer must not truncate what the
        // first is appending to. The OS releases it if the process dies.
        let lock = lock_dir(&dir)?;
        segment::remove_temporaries(&dir)?;
        let durable = options.durability != Durability::None;
        // Every segment is checked, so a damaged log is refused at open
        // rather than at replay.
        let Some(end) = walk(&dir, 0, |_, _| {})? else {
            let (path, file) = segment::create(&dir, 0, durable)?;
            return Journal::start(dir, options, lock, (path, file), (0, HEADER as u64, 0));
        };
        if end.scanned.valid_len < end.len {
            truncate(&end.last.path, end.scanned.valid_len)?;
        }
        if let Some((path, at)) = &end.unsealed {
            seal(path, *at, end.last.base, durable)?;
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&end.last.path)
            .map_err(|e| JournalError::io("open for append", &end.last.path, e))?;
        Journal::start(
            dir,
            options,
            lock,
            (end.last.path, file),
            (end.last.base, end.scanned.valid_len, end.next_seq),
        )
    }

    /// Starts a journal appending to `file` (segment `base`, `len` bytes
    /// long), whose next record is `next_seq`.
    fn start(
        dir: PathBuf,
        options: Options,
        lock: File,
        file: (PathBuf, File),
        (base, len, next_seq): (u64, u64, u64),
    ) -> Result<Journal, JournalError> {
        let status = Arc::new(Status::default());
        let tail = Arc::new(Mutex::new(Tail::new(
            dir,
            file,
            base,
            len,
            next_seq,
            options.segment_bytes.max(1),
            options.durability != Durability::None,
            status.clone(),
        )));
        let committer = match options.durability {
            Durability::GroupCommit => Some(committer::start(tail.clone(), next_seq)?),
            _ => None,
        };
        Ok(Journal {
            tail,
            status,
            durability: options.durability,
            committer,
            frame: Mutex::new(Vec::with_capacity(256)),
            _lock: lock,
        })
    }

    /// The durability policy.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The sequence number the next record will get (the number of records
    /// in the log, once everything appended so far is written).
    pub fn next_seq(&self) -> u64 {
        match &self.committer {
            Some((c, _)) => c.next_seq(),
            None => lock(&self.tail).next_seq,
        }
    }

    /// Appends `payload`, returning its sequence number once it is as
    /// durable as the policy promises. Under `GroupCommit` this waits for
    /// the batch's fsync.
    pub fn append(&self, payload: &[u8]) -> Result<u64, JournalError> {
        check_size(payload)?;
        match &self.committer {
            Some((c, _)) => c.append_wait(payload),
            None => {
                let mut frame = lock(&self.frame);
                frame.clear();
                frame::encode(payload, &mut frame);
                let mut tail = lock(&self.tail);
                let seq = tail.next_seq;
                let len = frame.len();
                tail.write(&frame, &[len])?;
                if self.durability == Durability::SyncEach {
                    tail.sync()?;
                }
                tail.acknowledge();
                Ok(seq)
            }
        }
    }

    /// Appends `payload` and calls `done` once it is as durable as the
    /// policy promises: at once, on this thread, without group commit; from
    /// the writer thread after the batch's fsync with it. The record's
    /// position in the log is fixed when this returns, so appends made one
    /// after the other are acknowledged in that order.
    pub fn append_with(
        &self,
        payload: &[u8],
        done: impl FnOnce(Result<u64, JournalError>) + Send + 'static,
    ) {
        if let Err(e) = check_size(payload) {
            return done(Err(e));
        }
        match &self.committer {
            Some((c, _)) => c.append(payload, Done::new(done)),
            None => done(self.append(payload)),
        }
    }

    /// Calls `done` once every append made before this call has been
    /// answered (acknowledged or failed), without writing anything: at
    /// once, on this thread, without group commit (appends are answered
    /// before they return); from the writer thread after the pending
    /// batch with it. What a reader that must see every earlier
    /// acknowledged record waits for. `done` gets an error if the journal
    /// has failed by then (the log may end in records never acknowledged
    /// until a [`repair`](Self::repair)).
    pub fn after_pending(&self, done: impl FnOnce(Result<(), JournalError>) + Send + 'static) {
        match &self.committer {
            Some((c, _)) => c.after_pending(Box::new(done)),
            None if self.is_failed() => done(Err(JournalError::Failed)),
            None => done(Ok(())),
        }
    }

    /// The number of records acknowledged so far: every record below it
    /// is written and, under a durable policy, fsynced, and survives a
    /// [`repair`](Self::repair).
    pub fn acknowledged(&self) -> u64 {
        self.status.acknowledged.load(Ordering::Acquire)
    }

    /// Whether a write, fsync or rotation failed: every append is refused
    /// until a [`repair`](Self::repair).
    pub fn is_failed(&self) -> bool {
        self.status.failed.load(Ordering::Acquire)
    }

    /// Recovers a failed journal in place: appends queued behind the
    /// failure are answered with it, then the log is cut back to its last
    /// acknowledged record (a partial frame, whole frames whose fsync
    /// failed, a segment a rotation created after it are removed; nothing
    /// acknowledged is touched) and appends go on from there. A journal
    /// that has not failed is left as it is. On a disk that is still full
    /// the repair itself writes nothing (cutting a file needs no space);
    /// the next append fails again.
    ///
    /// # Errors
    ///
    /// If the log cannot be cut back (an IO error): the journal stays
    /// failed, and the repair can be tried again.
    pub fn repair(&mut self) -> Result<(), JournalError> {
        if !self.is_failed() {
            return Ok(());
        }
        // The writer is stopped first: it answers what is queued (every
        // append behind the failure fails), and nothing is written while
        // the files are cut back.
        if let Some((committer, handle)) = self.committer.take() {
            committer.close();
            let _ = handle.join();
        }
        let (result, next_seq) = {
            let mut tail = lock(&self.tail);
            (tail.repair(), tail.next_seq)
        };
        if self.durability == Durability::GroupCommit {
            match committer::start(self.tail.clone(), next_seq) {
                Ok(c) => self.committer = Some(c),
                Err(e) => {
                    // Without its writer the journal must not take appends.
                    self.status.failed.store(true, Ordering::Release);
                    return Err(e);
                }
            }
        }
        result
    }

    /// Makes every record appended so far durable (an fsync; under group
    /// commit, waits for the pending batch).
    pub fn sync(&self) -> Result<(), JournalError> {
        if let Some((c, _)) = &self.committer {
            c.flush()?;
        }
        lock(&self.tail).sync()
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Pending group-commit appends are written, synced and answered.
        if let Some((committer, handle)) = self.committer.take() {
            committer.close();
            let _ = handle.join();
        }
    }
}

/// Takes the directory's `LOCK` file exclusively, without waiting.
fn lock_dir(dir: &Path) -> Result<File, JournalError> {
    let path = dir.join("LOCK");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| JournalError::io("open lock file", &path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(JournalError::Locked {
            dir: dir.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(JournalError::io("lock", &path, e)),
    }
}

fn check_size(payload: &[u8]) -> Result<(), JournalError> {
    if payload.len() > MAX_RECORD {
        return Err(JournalError::TooLarge {
            len: payload.len(),
            max: MAX_RECORD,
        });
    }
    Ok(())
}

/// Seals the segment `path` at byte `at` (its end): a rotation to the
/// segment starting at `next` was interrupted before it did.
fn seal(path: &Path, at: u64, next: u64, durable: bool) -> Result<(), JournalError> {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| JournalError::io("open for sealing", path, e))?;
    debug_assert_eq!(file.metadata().map(|m| m.len()).ok(), Some(at));
    file.write_all(&frame::seal(next))
        .map_err(|e| JournalError::io("seal", path, e))?;
    if durable {
        file.sync_data()
            .map_err(|e| JournalError::io("fsync", path, e))?;
    }
    Ok(())
}

fn truncate(path: &Path, len: u64) -> Result<(), JournalError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| JournalError::io("open for truncation", path, e))?;
    file.set_len(len)
        .and_then(|()| file.sync_all())
        .map_err(|e| JournalError::io("truncate torn tail", path, e))
}

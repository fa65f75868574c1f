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
//!   an error, so no record is acknowledged behind a partial one. Reopening
//!   truncates the partial frame as a torn tail.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::committer::{self, Committer, Done};
use crate::error::JournalError;
use crate::frame::{self, MAX_RECORD};
use crate::guard::lock;
use crate::scan::scan;
use crate::segment;
use crate::tail::{create_segment, Tail};

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
    durability: Durability,
    committer: Option<(Committer, JoinHandle<()>)>,
    frame: Mutex<Vec<u8>>,
    /// Held while the journal is open (released when it is dropped, after
    /// the committer has finished).
    _lock: File,
}

impl Journal {
    /// Opens (creating it if needed) the journal in `dir`, recovering from
    /// a crash: a torn tail of the last segment is truncated away.
    ///
    /// # Errors
    ///
    /// If the directory cannot be created or read, a file cannot be opened
    /// for writing (read-only directory), or a record in the middle of the
    /// log is damaged ([`JournalError::Corrupt`]).
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Journal, JournalError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| JournalError::io("create directory", &dir, e))?;
        // Taken before recovery: a second writer must not truncate what the
        // first is appending to. The OS releases it if the process dies.
        let lock = lock_dir(&dir)?;
        let segments = segment::list(&dir)?;
        let durable = options.durability != Durability::None;
        let (path, len, next_seq) = match segments.last() {
            None => {
                let path = dir.join(segment::file_name(0));
                create_segment(&path)?;
                if durable {
                    segment::sync_dir(&dir)?;
                }
                (path, 0, 0)
            }
            Some(last) => {
                // Earlier segments were complete when the journal rotated
                // away from them; check them now anyway, so a damaged log
                // is refused at open rather than at replay.
                let mut expected = segments[0].base;
                for (i, s) in segments.iter().enumerate() {
                    if s.base != expected {
                        return Err(JournalError::Corrupt {
                            segment: s.path.clone(),
                            offset: 0,
                            reason: format!(
                                "segment starts at record {}, expected {expected}",
                                s.base
                            ),
                        });
                    }
                    let bytes = segment::read(&s.path)?;
                    let found = scan(&s.path, &bytes, i + 1 == segments.len(), |_| {})?;
                    expected += found.records;
                    if i + 1 == segments.len() && found.valid_len < bytes.len() as u64 {
                        truncate(&s.path, found.valid_len)?;
                    }
                    if i + 1 == segments.len() {
                        return Journal::start(
                            dir,
                            options,
                            lock,
                            last.path.clone(),
                            found.valid_len,
                            expected,
                        );
                    }
                }
                unreachable!("the loop returns at the last segment");
            }
        };
        Journal::start(dir, options, lock, path, len, next_seq)
    }

    fn start(
        dir: PathBuf,
        options: Options,
        lock: File,
        path: PathBuf,
        len: u64,
        next_seq: u64,
    ) -> Result<Journal, JournalError> {
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| JournalError::io("open for append", &path, e))?;
        let tail = Arc::new(Mutex::new(Tail {
            dir,
            file,
            path,
            len,
            next_seq,
            failed: false,
            segment_bytes: options.segment_bytes.max(1),
            durable: options.durability != Durability::None,
        }));
        let committer = match options.durability {
            Durability::GroupCommit => Some(committer::start(tail.clone(), next_seq)?),
            _ => None,
        };
        Ok(Journal {
            tail,
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

fn truncate(path: &Path, len: u64) -> Result<(), JournalError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| JournalError::io("open for truncation", path, e))?;
    file.set_len(len)
        .and_then(|()| file.sync_all())
        .map_err(|e| JournalError::io("truncate torn tail", path, e))
}

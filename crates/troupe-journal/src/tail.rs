//! The segment file being appended to: writing whole frames, rotating to a
//! new segment when one fills, and the *failed* state after a write or
//! fsync error (every later write is refused, so nothing is acknowledged
//! behind a partial frame). Shared by the journal (direct appends) and the
//! group-commit writer thread.
//!
//! The tail also remembers where the last acknowledged record ends (the
//! *mark*: which segment, how many bytes, how many records), so that a
//! failed journal can be repaired in place: the files are cut back to the
//! mark, which removes every byte written after the last acknowledgement
//! (a partial frame, whole frames of a batch whose fsync failed, a seal, a
//! segment a rotation created), and appends go on from there.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::JournalError;
use crate::frame;
use crate::segment::{self, HEADER};

/// What the journal reads without taking the tail's lock (which the
/// writer holds across a write and its fsync).
#[derive(Debug, Default)]
pub(crate) struct Status {
    /// Every record below this number is acknowledged.
    pub acknowledged: AtomicU64,
    /// A write, fsync or rotation failed, and no repair has succeeded since.
    pub failed: AtomicBool,
}

/// Where the last acknowledged record ends.
#[derive(Clone, Debug)]
struct Mark {
    base: u64,
    path: PathBuf,
    len: u64,
    next_seq: u64,
}

/// The file being appended to.
pub(crate) struct Tail {
    pub dir: PathBuf,
    pub file: File,
    pub path: PathBuf,
    /// The first record of the current segment.
    pub base: u64,
    pub len: u64,
    pub next_seq: u64,
    pub segment_bytes: u64,
    pub durable: bool,
    pub status: Arc<Status>,
    mark: Mark,
}

impl Tail {
    /// The tail of a recovered log: every record in it is acknowledged.
    #[expect(clippy::too_many_arguments, reason = "one constructor, called twice")]
    pub fn new(
        dir: PathBuf,
        (path, file): (PathBuf, File),
        base: u64,
        len: u64,
        next_seq: u64,
        segment_bytes: u64,
        durable: bool,
        status: Arc<Status>,
    ) -> Tail {
        status.acknowledged.store(next_seq, Ordering::Release);
        status.failed.store(false, Ordering::Release);
        Tail {
            mark: Mark {
                base,
                path: path.clone(),
                len,
                next_seq,
            },
            dir,
            file,
            path,
            base,
            len,
            next_seq,
            segment_bytes,
            durable,
            status,
        }
    }

    pub fn failed(&self) -> bool {
        self.status.failed.load(Ordering::Acquire)
    }

    fn fail(&self) {
        self.status.failed.store(true, Ordering::Release);
    }

    /// Writes `frames` (whole frames for records `first..`, ending at
    /// `ends`), rotating segments as they fill. Marks the tail failed on
    /// any error.
    pub fn write(&mut self, frames: &[u8], ends: &[usize]) -> Result<(), JournalError> {
        if self.failed() {
            return Err(JournalError::Failed);
        }
        let result = self.write_inner(frames, ends);
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn write_inner(&mut self, frames: &[u8], ends: &[usize]) -> Result<(), JournalError> {
        let mut start = 0usize;
        let mut i = 0usize;
        while i < ends.len() {
            // Take as many frames as fit in the current segment (at least
            // one: a record larger than a segment gets a segment of its own).
            let mut end = ends[i];
            let mut j = i + 1;
            let room = self.segment_bytes.saturating_sub(self.len);
            if (end - start) as u64 > room && self.len > HEADER as u64 {
                self.rotate()?;
                continue;
            }
            while j < ends.len() && (ends[j] - start) as u64 <= room {
                end = ends[j];
                j += 1;
            }
            self.file
                .write_all(&frames[start..end])
                .map_err(|e| JournalError::io("write", &self.path, e))?;
            self.len += (end - start) as u64;
            self.next_seq += (j - i) as u64;
            start = end;
            i = j;
        }
        Ok(())
    }

    /// Makes everything written so far durable.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if self.failed() {
            return Err(JournalError::Failed);
        }
        let result = self
            .file
            .sync_data()
            .map_err(|e| JournalError::io("fsync", &self.path, e));
        if result.is_err() {
            self.fail();
        }
        result
    }

    /// Records that everything written so far is acknowledged (written,
    /// and under a durable policy fsynced): a repair keeps it.
    pub fn acknowledge(&mut self) {
        // The path is copied only when a rotation changed it: this runs
        // after every append (or batch).
        if self.mark.base != self.base {
            self.mark.base = self.base;
            self.mark.path.clone_from(&self.path);
        }
        self.mark.len = self.len;
        self.mark.next_seq = self.next_seq;
        self.status
            .acknowledged
            .store(self.next_seq, Ordering::Release);
    }

    /// Cuts the log back to the mark (module header) and clears the
    /// failed state. Nothing acknowledged is touched. If a step fails the
    /// tail stays failed; the repair can be tried again.
    ///
    /// Segments a rotation created after the mark are taken off from the
    /// last one back, each in three steps that leave a log recovery
    /// accepts if the process dies between them: the segment is emptied
    /// to its header, then the segment before it loses its seal (an
    /// interrupted rotation, as recovery sees it), then the empty segment
    /// is removed.
    pub fn repair(&mut self) -> Result<(), JournalError> {
        if !self.failed() {
            return Ok(());
        }
        let mark = self.mark.clone();
        segment::remove_temporaries(&self.dir)?;
        let mut segments = segment::list(&self.dir)?;
        while let Some(last) = segments.pop().filter(|s| s.base > mark.base) {
            cut(&last.path, HEADER as u64, self.durable)?;
            // Its seal, if the rotation got as far as writing it.
            if let Some(before) = segments.last() {
                if let Some(at) = seal_at(&before.path, last.base)? {
                    cut(&before.path, at, self.durable)?;
                }
            }
            fs::remove_file(&last.path).map_err(|e| {
                JournalError::io("remove the unacknowledged segment", &last.path, e)
            })?;
            if self.durable {
                segment::sync_dir(&self.dir)?;
            }
        }
        // The segment still open when no rotation happened since the mark
        // (cutting it needs no path: the directory may be the trouble).
        if mark.path != self.path {
            self.file = OpenOptions::new()
                .append(true)
                .open(&mark.path)
                .map_err(|e| JournalError::io("open for append", &mark.path, e))?;
        }
        let file = &self.file;
        file.set_len(mark.len)
            .and_then(|()| {
                if self.durable {
                    file.sync_all()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| {
                JournalError::io("cut back to the last acknowledged record", &mark.path, e)
            })?;
        self.path = mark.path;
        self.base = mark.base;
        self.len = mark.len;
        self.next_seq = mark.next_seq;
        self.status.failed.store(false, Ordering::Release);
        Ok(())
    }

    /// Closes the current segment and continues in a new one. The new
    /// segment is created (whole, and durable under a durable policy)
    /// before the old one is sealed, so a crash in between leaves an
    /// unsealed segment followed by an empty one, which recovery accepts
    /// and seals, never a sealed segment without its successor.
    fn rotate(&mut self) -> Result<(), JournalError> {
        if self.durable {
            self.file
                .sync_data()
                .map_err(|e| JournalError::io("fsync", &self.path, e))?;
        }
        let (path, file) = segment::create(&self.dir, self.next_seq, self.durable)?;
        self.file
            .write_all(&frame::seal(self.next_seq))
            .map_err(|e| JournalError::io("seal", &self.path, e))?;
        if self.durable {
            self.file
                .sync_data()
                .map_err(|e| JournalError::io("fsync", &self.path, e))?;
        }
        self.file = file;
        self.path = path;
        self.base = self.next_seq;
        self.len = HEADER as u64;
        Ok(())
    }
}

/// Cuts the file at `path` to `len` bytes, durably if `durable`.
fn cut(path: &std::path::Path, len: u64, durable: bool) -> Result<(), JournalError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| JournalError::io("open for repair", path, e))?;
    file.set_len(len)
        .and_then(|()| if durable { file.sync_all() } else { Ok(()) })
        .map_err(|e| JournalError::io("cut back to the last acknowledged record", path, e))
}

/// Where the seal naming `next` starts in the segment at `path`, if the
/// segment ends with one.
fn seal_at(path: &std::path::Path, next: u64) -> Result<Option<u64>, JournalError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).map_err(|e| JournalError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| JournalError::io("stat", path, e))?
        .len();
    let Some(at) = len.checked_sub(frame::SEAL as u64) else {
        return Ok(None);
    };
    let mut end = [0u8; frame::SEAL];
    file.seek(SeekFrom::Start(at))
        .and_then(|_| file.read_exact(&mut end))
        .map_err(|e| JournalError::io("read", path, e))?;
    Ok((frame::decode(&end) == frame::Decoded::Seal { next }).then_some(at))
}

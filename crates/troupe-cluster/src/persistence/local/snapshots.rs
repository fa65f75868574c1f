//! Snapshot files: one per persistence id, `<escaped id>.snap` in the
//! journal's `snapshots/` directory, replaced atomically (written to a
//! temporary file, fsynced, renamed over the old one, the directory
//! fsynced), so a crash leaves either the old snapshot or the new one,
//! never a torn one. A writer thread does the IO, so an actor that saves a
//! snapshot pays only for encoding its state.
//!
//! ```text
//! magic "TRSNAP01" | seq_nr: u64 LE | position: u64 LE | token: u64 LE
//! len: u32 LE | crc32c(payload): u32 LE | payload (the encoded state)
//! ```

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};

use crate::persistence::error::PersistenceError;
use crate::persistence::journal::{Done, Snapshot};

const MAGIC: &[u8; 8] = b"TRSNAP01";
const HEADER: usize = 8 + 8 + 8 + 8 + 4 + 4;

/// The file name of `id`'s snapshot: letters, digits, `-` and `_` kept,
/// every other byte as `%XX`, so any id maps to one distinct portable name.
pub(super) fn file_name(id: &str) -> String {
    let mut name = String::with_capacity(id.len() + 5);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            name.push(b as char);
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name.push_str(".snap");
    name
}

fn io(op: &'static str, path: &Path, e: std::io::Error) -> PersistenceError {
    PersistenceError::SnapshotIo {
        op,
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// Reads the snapshot at `path`, if there is one.
pub(super) fn read(path: &Path) -> Result<Option<Snapshot>, PersistenceError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path, e)),
    };
    let corrupt = |reason: &str| PersistenceError::CorruptSnapshot {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(corrupt("not a snapshot file (bad magic or too short)"));
    }
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let len = u32_at(32) as usize;
    if bytes.len() != HEADER + len {
        return Err(corrupt(&format!(
            "{} bytes of state, the header says {len}",
            bytes.len() - HEADER
        )));
    }
    let state = &bytes[HEADER..];
    if crc32c::crc32c(state) != u32_at(36) {
        return Err(corrupt("checksum mismatch"));
    }
    Ok(Some(Snapshot {
        seq_nr: u64_at(8),
        position: u64_at(16),
        token: u64_at(24),
        state: state.to_vec(),
    }))
}

/// Writes `snapshot` to `path` atomically (module header).
fn write(dir: &Path, path: &Path, snapshot: &Snapshot) -> Result<(), PersistenceError> {
    let mut bytes = Vec::with_capacity(HEADER + snapshot.state.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&snapshot.seq_nr.to_le_bytes());
    bytes.extend_from_slice(&snapshot.position.to_le_bytes());
    bytes.extend_from_slice(&snapshot.token.to_le_bytes());
    bytes.extend_from_slice(&(snapshot.state.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&snapshot.state).to_le_bytes());
    bytes.extend_from_slice(&snapshot.state);
    let tmp = path.with_extension("snap.tmp");
    let mut file = File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
    file.write_all(&bytes).map_err(|e| io("write", &tmp, e))?;
    file.sync_all().map_err(|e| io("fsync", &tmp, e))?;
    drop(file);
    fs::rename(&tmp, path).map_err(|e| io("rename", path, e))?;
    // The rename is durable once the directory is.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("fsync the directory of", path, e))
}

/// A snapshot to write, and whether it may still be written: the check
/// runs on the writer thread, just before the rename.
pub(super) struct Job {
    pub id: String,
    pub snapshot: Snapshot,
    pub still_current: Box<dyn FnOnce() -> bool + Send>,
    pub done: Done<u64>,
}

enum Work {
    Write(Job),
    /// Answered once every job queued before it is done.
    Flush(Sender<()>),
}

/// The thread writing snapshots, in the order they were saved.
pub(super) struct Writer {
    queue: Option<Sender<Work>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    pub fn start(dir: PathBuf) -> Result<Writer, PersistenceError> {
        let (queue, work) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("troupe-snapshots".into())
            .spawn(move || run(&dir, &work))
            .map_err(|e| io("start the writer thread for", Path::new("snapshots"), e))?;
        Ok(Writer {
            queue: Some(queue),
            thread: Some(thread),
        })
    }

    pub fn save(&self, job: Job) {
        if let Some(q) = &self.queue {
            if let Err(mpsc::SendError(Work::Write(job))) = q.send(Work::Write(job)) {
                (job.done)(Err(PersistenceError::SnapshotIo {
                    op: "queue",
                    path: PathBuf::from(job.id),
                    reason: "the snapshot writer has stopped".into(),
                }));
            }
        }
    }

    /// Waits until every snapshot saved so far is written (or refused).
    pub fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        if let Some(q) = &self.queue {
            if q.send(Work::Flush(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Queued snapshots are written before the journal goes away.
        self.queue.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(dir: &Path, work: &Receiver<Work>) {
    for w in work {
        match w {
            Work::Flush(answer) => {
                let _ = answer.send(());
            }
            Work::Write(job) => {
                let path = dir.join(file_name(&job.id));
                let result = if !(job.still_current)() {
                    Err(PersistenceError::SnapshotIo {
                        op: "keep",
                        path,
                        reason: "a newer activation holds the id, or a newer snapshot exists"
                            .into(),
                    })
                } else {
                    write(dir, &path, &job.snapshot).map(|()| job.snapshot.seq_nr)
                };
                (job.done)(result);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_and_distinct() {
        assert_eq!(file_name("acct-1_a"), "acct-1_a.snap");
        assert_eq!(file_name("a/b"), "a%2Fb.snap");
        assert_ne!(file_name("a%2Fb"), file_name("a/b"));
    }

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.snap");
        let s = Snapshot {
            seq_nr: 5,
            position: 9,
            token: 2,
            state: b"state".to_vec(),
        };
        write(dir.path(), &path, &s).unwrap();
        assert_eq!(read(&path).unwrap(), Some(s));
        let mut bytes = fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            read(&path),
            Err(PersistenceError::CorruptSnapshot { .. })
        ));
        assert_eq!(read(&dir.path().join("none.snap")).unwrap(), None);
    }
}

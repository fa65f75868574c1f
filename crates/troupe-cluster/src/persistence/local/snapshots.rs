//! Snapshot files: one per persistence id in the journal's `snapshots/`
//! directory, replaced atomically (written to a temporary file, fsynced,
//! renamed over the old one, the directory fsynced), so a crash leaves
//! either the old snapshot or the new one, never a torn one. A writer
//! thread does the IO, so an actor that saves a snapshot pays only for
//! encoding its state.
//!
//! ```text
//! magic "TRSNAP02" | seq_nr: u64 LE | position: u64 LE | token: u64 LE
//! id_len: u16 LE | id | state_len: u32 LE | state | crc: u32 LE
//! ```
//!
//! `crc` is the CRC-32C of every byte before it, header included: an
//! altered sequence number or position would otherwise make recovery
//! replay from the wrong place. The persistence id is stored and checked
//! on load, so a file copied in from another entity (or a name shared by
//! two ids) is refused instead of mixing two states.
//!
//! # File names
//!
//! An id's file name is its bytes with letters, digits, `-` and `_` kept
//! and every other byte as `%XX`, then `.snap`, when that is at most
//! [`PLAIN_NAME`] bytes. A longer one (an id of up to
//! [`MAX_ID_BYTES`](crate::MAX_ID_BYTES), escaped, can be three times
//! that, past the 255 bytes a file name may have) keeps the first
//! [`PREFIX`] bytes of the escaped form, for an operator to recognise, and
//! adds `~` and the first 128 bits of the id's SHA-256 in hex: at most 106
//! bytes with the temporary file's suffix, for any id. `~` never appears
//! in an escaped id, so the two forms never meet.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};

use sha2::{Digest, Sha256};

use crate::persistence::error::PersistenceError;
use crate::persistence::journal::{Done, Snapshot};

const MAGIC: &[u8; 8] = b"TRSNAP02";
/// The magic of the format before the checksum covered the header.
const OLD_MAGIC: &[u8; 8] = b"TRSNAP01";
/// Bytes before the id: magic, seq_nr, position, token, id_len.
const FIXED: usize = 8 + 8 + 8 + 8 + 2;

/// The longest escaped name (with `.snap`) used as it is.
const PLAIN_NAME: usize = 100;
/// The escaped bytes a hashed name keeps.
const PREFIX: usize = 64;

/// The file name of `id`'s snapshot (module header).
pub(super) fn file_name(id: &str) -> String {
    let mut name = String::with_capacity(id.len() + 5);
    let mut cut = None;
    for b in id.bytes() {
        if name.len() <= PREFIX {
            cut = Some(name.len());
        }
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            name.push(b as char);
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    if name.len() + ".snap".len() <= PLAIN_NAME {
        name.push_str(".snap");
        return name;
    }
    // Cut where an escape starts, never inside one.
    name.truncate(cut.unwrap_or(0));
    let digest = Sha256::digest(id.as_bytes());
    name.push('~');
    for b in &digest[..16] {
        name.push_str(&format!("{b:02x}"));
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

/// The bytes of `snapshot` of `id` in the file format (module header).
fn encode(id: &str, snapshot: &Snapshot) -> Result<Vec<u8>, PersistenceError> {
    let state_len =
        u32::try_from(snapshot.state.len()).map_err(|_| PersistenceError::TooLarge {
            persistence_id: id.to_string(),
            what: "snapshot",
            size: snapshot.state.len(),
            limit: u32::MAX as usize,
        })?;
    let mut bytes = Vec::with_capacity(FIXED + id.len() + 4 + snapshot.state.len() + 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&snapshot.seq_nr.to_le_bytes());
    bytes.extend_from_slice(&snapshot.position.to_le_bytes());
    bytes.extend_from_slice(&snapshot.token.to_le_bytes());
    bytes.extend_from_slice(&(id.len() as u16).to_le_bytes());
    bytes.extend_from_slice(id.as_bytes());
    bytes.extend_from_slice(&state_len.to_le_bytes());
    bytes.extend_from_slice(&snapshot.state);
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    Ok(bytes)
}

/// Reads the snapshot of `id` at `path`, if there is one, checking that
/// it is whole and that it is `id`'s.
pub(super) fn read(path: &Path, id: &str) -> Result<Option<Snapshot>, PersistenceError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path, e)),
    };
    let corrupt = |reason: String| PersistenceError::CorruptSnapshot {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() >= 8 && &bytes[..8] == OLD_MAGIC {
        return Err(corrupt(
            "written in format TRSNAP01, whose header no checksum covered; this build \
             reads TRSNAP02 (remove the file: recovery then replays the journal)"
                .into(),
        ));
    }
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(corrupt("not a snapshot file (bad magic at byte 0)".into()));
    }
    if bytes.len() < FIXED + 4 + 4 {
        return Err(corrupt(format!(
            "{} bytes, shorter than any snapshot ({} bytes at least)",
            bytes.len(),
            FIXED + 8
        )));
    }
    let end = bytes.len() - 4;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    if crc32c::crc32c(&bytes[..end]) != u32_at(end) {
        return Err(corrupt(format!(
            "checksum mismatch (the checksum at byte {end} does not match bytes 0 to {})",
            end - 1
        )));
    }
    let id_len = u16::from_le_bytes([bytes[32], bytes[33]]) as usize;
    let state_at = FIXED + id_len + 4;
    if state_at > end {
        return Err(corrupt(format!(
            "the id's length at byte 32 ({id_len}) runs past the end of the file"
        )));
    }
    let state_len = u32_at(FIXED + id_len) as usize;
    if state_at + state_len != end {
        return Err(corrupt(format!(
            "{} bytes of state, the length at byte {} says {state_len}",
            end - state_at,
            FIXED + id_len
        )));
    }
    let stored = &bytes[FIXED..FIXED + id_len];
    if stored != id.as_bytes() {
        return Err(corrupt(format!(
            "it holds the snapshot of {:?}, not of {id:?} (copied from another \
             entity?); remove it to recover {id:?} from the journal",
            String::from_utf8_lossy(stored)
        )));
    }
    Ok(Some(Snapshot {
        seq_nr: u64_at(8),
        position: u64_at(16),
        token: u64_at(24),
        state: bytes[state_at..end].to_vec(),
    }))
}

/// Writes `snapshot` of `id` to `path` atomically (module header).
fn write(dir: &Path, path: &Path, id: &str, snapshot: &Snapshot) -> Result<(), PersistenceError> {
    let bytes = encode(id, snapshot)?;
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
                    write(dir, &path, &job.id, &job.snapshot).map(|()| job.snapshot.seq_nr)
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
    fn every_allowed_id_has_a_short_distinct_name() {
        let mut seen = std::collections::HashSet::new();
        for len in 1..=crate::MAX_ID_BYTES {
            for id in [
                ".".repeat(len),
                "a".repeat(len),
                format!("{}~", "b".repeat(len - 1)),
            ] {
                let name = file_name(&id);
                assert!(name.len() + ".tmp".len() <= 106, "{len}: {name}");
                assert!(seen.insert(name), "{len}: two ids share a name");
            }
        }
        // A hashed name keeps the start of the escaped id, cut between
        // escapes.
        let name = file_name(&".".repeat(200));
        assert!(name.starts_with("%2E%2E"), "{name}");
        assert!(
            name.split('~').next().unwrap().len().is_multiple_of(3),
            "{name}"
        );
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
        write(dir.path(), &path, "x", &s).unwrap();
        assert_eq!(read(&path, "x").unwrap(), Some(s));
        let good = fs::read(&path).unwrap();
        for at in 0..good.len() {
            let mut bytes = good.clone();
            bytes[at] ^= 1;
            fs::write(&path, &bytes).unwrap();
            assert!(
                matches!(
                    read(&path, "x"),
                    Err(PersistenceError::CorruptSnapshot { .. })
                ),
                "byte {at}"
            );
        }
        fs::write(&path, &good).unwrap();
        let Err(PersistenceError::CorruptSnapshot { reason, .. }) = read(&path, "y") else {
            panic!("another id's snapshot loaded")
        };
        assert!(reason.contains("\"x\""), "{reason}");
        assert_eq!(read(&dir.path().join("none.snap"), "x").unwrap(), None);
    }
}

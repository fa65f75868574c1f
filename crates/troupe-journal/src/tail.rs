//! The segment file being appended to: writing whole frames, rotating to a
//! new segment when one fills, and the *failed* state after a write or
//! fsync error (every later write is refused, so nothing is acknowledged
//! behind a partial frame). Shared by the journal (direct appends) and the
//! group-commit writer thread.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::error::JournalError;
use crate::frame;
use crate::segment::{self, HEADER};

/// The file being appended to.
pub(crate) struct Tail {
    pub dir: PathBuf,
    pub file: File,
    pub path: PathBuf,
    pub len: u64,
    pub next_seq: u64,
    pub failed: bool,
    pub segment_bytes: u64,
    pub durable: bool,
}

impl Tail {
    /// Writes `frames` (whole frames for records `first..`, ending at
    /// `ends`), rotating segments as they fill. Marks the tail failed on
    /// any error.
    pub fn write(&mut self, frames: &[u8], ends: &[usize]) -> Result<(), JournalError> {
        if self.failed {
            return Err(JournalError::Failed);
        }
        let result = self.write_inner(frames, ends);
        if result.is_err() {
            self.failed = true;
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
        if self.failed {
            return Err(JournalError::Failed);
        }
        let result = self
            .file
            .sync_data()
            .map_err(|e| JournalError::io("fsync", &self.path, e));
        if result.is_err() {
            self.failed = true;
        }
        result
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
        self.len = HEADER as u64;
        Ok(())
    }
}

//! The segment file being appended to: writing whole frames, rotating to a
//! new segment when one fills, and the *failed* state after a write or
//! fsync error (every later write is refused, so nothing is acknowledged
//! behind a partial frame). Shared by the journal (direct appends) and the
//! group-commit writer thread.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::JournalError;
use crate::segment;

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
            if (end - start) as u64 > room && self.len > 0 {
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

    fn rotate(&mut self) -> Result<(), JournalError> {
        if self.durable {
            self.file
                .sync_data()
                .map_err(|e| JournalError::io("fsync", &self.path, e))?;
        }
        let path = self.dir.join(segment::file_name(self.next_seq));
        self.file = create_segment(&path)?;
        if self.durable {
            segment::sync_dir(&self.dir)?;
        }
        self.path = path;
        self.len = 0;
        Ok(())
    }
}

/// Creates a new, empty segment file for appending.
pub(crate) fn create_segment(path: &Path) -> Result<File, JournalError> {
    OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .map_err(|e| JournalError::io("create segment", path, e))
}

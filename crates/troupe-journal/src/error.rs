//! What can go wrong with a journal, named precisely enough to act on: the
//! file and operation for IO errors, the segment and byte offset for
//! corruption.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// A journal failure.
#[derive(Debug, Clone)]
pub enum JournalError {
    /// An IO operation failed (full disk, read-only directory, permissions).
    Io {
        /// What was being done ("write", "fsync", "create segment", ...).
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The OS error (shared, so the error can reach every waiting appender).
        source: Arc<io::Error>,
    },
    /// A record that is not the torn tail of the last segment failed its
    /// check, or a segment is missing, emptied or cut (see the crate docs):
    /// the log is damaged and nothing after it can be trusted.
    Corrupt {
        /// The segment file.
        segment: PathBuf,
        /// Byte offset of the bad record's header in that file.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A record larger than the journal accepts.
    TooLarge {
        /// The record's size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Another journal (in this process or another) has the directory
    /// open for writing; two writers would interleave their records.
    Locked {
        /// The journal's directory.
        dir: PathBuf,
    },
    /// An earlier write failed; the journal refuses further appends rather
    /// than risk acknowledging a record behind a partial one.
    /// [`Journal::repair`](crate::Journal::repair) (or reopening) recovers.
    Failed,
}

impl JournalError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        JournalError::Io {
            op,
            path: path.into(),
            source: Arc::new(source),
        }
    }
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalError::Io { op, path, source } => {
                write!(f, "journal: {op} {} failed: {source}", path.display())
            }
            JournalError::Corrupt {
                segment,
                offset,
                reason,
            } => write!(
                f,
                "journal: damaged log: {} at byte {offset}: {reason}",
                segment.display()
            ),
            JournalError::TooLarge { len, max } => {
                write!(
                    f,
                    "journal: record of {len} bytes exceeds the limit of {max}"
                )
            }
            JournalError::Locked { dir } => write!(
                f,
                "journal: {} is already open for writing elsewhere",
                dir.display()
            ),
            JournalError::Failed => f.write_str(
                "journal: an earlier write failed; repair or reopen the journal to recover",
            ),
        }
    }
}

impl std::error::Error for JournalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JournalError::Io { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

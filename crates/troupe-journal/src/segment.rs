//! Segment files: `<first sequence number, 20 digits>.log` in the journal's
//! directory, so that names sort in log order and a record's segment is
//! found from its sequence number alone.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::JournalError;

/// A segment file and the sequence number of its first record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Sequence number of the first record in the file.
    pub base: u64,
    /// The file.
    pub path: PathBuf,
}

/// The file name of the segment starting at `base`.
pub fn file_name(base: u64) -> String {
    format!("{base:020}.log")
}

/// The journal's segments in log order. Files that are not segments are
/// ignored (an operator's notes, editor backups).
pub fn list(dir: &Path) -> Result<Vec<Segment>, JournalError> {
    let entries = fs::read_dir(dir).map_err(|e| JournalError::io("list", dir, e))?;
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| JournalError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(digits) = name.strip_suffix(".log") else {
            continue;
        };
        if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(base) = digits.parse() {
            segments.push(Segment {
                base,
                path: entry.path(),
            });
        }
    }
    segments.sort_by_key(|s| s.base);
    Ok(segments)
}

/// The bytes of a segment, up to the length it has now. (Reading to the
/// end of file instead would never end on a device file, and could race
/// with an appender.)
pub fn read(path: &Path) -> Result<Vec<u8>, JournalError> {
    use std::io::Read;
    let file = fs::File::open(path).map_err(|e| JournalError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| JournalError::io("stat", path, e))?
        .len();
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(len)
        .read_to_end(&mut bytes)
        .map_err(|e| JournalError::io("read", path, e))?;
    Ok(bytes)
}

/// Makes a new segment's directory entry durable.
pub fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| JournalError::io("fsync directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_log_order() {
        assert_eq!(file_name(42), "00000000000000000042.log");
        assert!(file_name(9) < file_name(10));
        assert!(file_name(u64::MAX).len() == 24);
    }
}

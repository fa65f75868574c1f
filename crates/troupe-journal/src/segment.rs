//! Segment files: `<first sequence number, 20 digits>.log` in the journal's
//! directory, so that names sort in log order and a record's segment is
//! found from its sequence number alone.
//!
//! Every segment starts with a header that says which journal format wrote
//! it and which record it starts at:
//!
//! ```text
//! magic "TJNL" | version: u32 LE (1) | base: u64 LE | crc: u32 LE
//! ```
//!
//! `crc` is the CRC-32C of the 16 bytes before it. The header is what lets
//! the log tell a segment that was emptied or cut into its header (damage)
//! from one that is merely new, and a file renamed or copied in from
//! another journal (its base differs from its name). A segment is created
//! whole: its header is written to a temporary file, made durable, and
//! renamed into place, so a crash never leaves a segment without one.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::JournalError;

/// Bytes of a segment's header.
pub const HEADER: usize = 20;

const MAGIC: &[u8; 4] = b"TJNL";

/// The format this crate writes (and the only one it reads).
pub const VERSION: u32 = 1;

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

/// The header of the segment starting at `base`.
pub fn header(base: u64) -> [u8; HEADER] {
    let mut out = [0u8; HEADER];
    out[0..4].copy_from_slice(MAGIC);
    out[4..8].copy_from_slice(&VERSION.to_le_bytes());
    out[8..16].copy_from_slice(&base.to_le_bytes());
    let crc = crc32c::crc32c(&out[..16]);
    out[16..20].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Checks that `bytes` (the contents of `path`) start with the header of a
/// segment starting at `base`; the error names what is wrong at byte 0.
pub fn check_header(path: &Path, bytes: &[u8], base: u64) -> Result<(), JournalError> {
    let corrupt = |reason: String| JournalError::Corrupt {
        segment: path.to_path_buf(),
        offset: 0,
        reason,
    };
    if bytes.len() < HEADER {
        return Err(corrupt(format!(
            "no segment header: the file is {} bytes, and every segment starts with a \
             {HEADER}-byte header (the segment was emptied or cut)",
            bytes.len()
        )));
    }
    if &bytes[0..4] != MAGIC {
        return Err(corrupt(
            "no segment header (bad magic): not a troupe-journal segment, or one written \
             before segment headers (format 1)"
                .into(),
        ));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    if crc32c::crc32c(&bytes[..16]) != u32_at(16) {
        return Err(corrupt("segment header checksum mismatch".into()));
    }
    let version = u32_at(4);
    if version != VERSION {
        return Err(corrupt(format!(
            "segment format {version}, this build reads format {VERSION}"
        )));
    }
    let stored = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    if stored != base {
        return Err(corrupt(format!(
            "the header says the segment starts at record {stored}, its file name says \
             {base} (a segment renamed, or copied in from another journal)"
        )));
    }
    Ok(())
}

/// The journal's segments in log order. Files that are not segments are
/// ignored (an operator's notes, editor backups, a rotation's temporary
/// file).
pub fn list(dir: &Path) -> Result<Vec<Segment>, JournalError> {
    let entries = fs::read_dir(dir).map_err(|e| JournalError::io("list", dir, e))?;
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| JournalError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(base) = name.to_str().and_then(parse_name) else {
            continue;
        };
        segments.push(Segment {
            base,
            path: entry.path(),
        });
    }
    segments.sort_by_key(|s| s.base);
    Ok(segments)
}

fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The temporary file a segment is created as before its rename.
fn temporary(path: &Path) -> PathBuf {
    path.with_extension("log.tmp")
}

/// Removes what a rotation that crashed before its rename left behind.
pub fn remove_temporaries(dir: &Path) -> Result<(), JournalError> {
    let entries = fs::read_dir(dir).map_err(|e| JournalError::io("list", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| JournalError::io("list", dir, e))?;
        let name = entry.file_name();
        let is_temporary = name
            .to_str()
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(parse_name)
            .is_some();
        if is_temporary {
            let path = entry.path();
            fs::remove_file(&path)
                .map_err(|e| JournalError::io("remove the temporary segment", &path, e))?;
        }
    }
    Ok(())
}

/// Creates the segment starting at `base` in `dir`, whole (module header):
/// its header written to a temporary file, made durable if `durable`,
/// renamed into place and the directory synced. Returns its path and the
/// file, open for appending.
pub fn create(dir: &Path, base: u64, durable: bool) -> Result<(PathBuf, File), JournalError> {
    let path = dir.join(file_name(base));
    let tmp = temporary(&path);
    let failed = |e| JournalError::io("create segment", &path, e);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&tmp)
        .map_err(failed)?;
    file.write_all(&header(base)).map_err(failed)?;
    if durable {
        file.sync_data().map_err(failed)?;
    }
    drop(file);
    // Never over an existing segment: rename would replace it.
    if path.exists() {
        let _ = fs::remove_file(&tmp);
        return Err(failed(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "a segment of that name exists already",
        )));
    }
    fs::rename(&tmp, &path).map_err(failed)?;
    if durable {
        sync_dir(dir)?;
    }
    let file = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| JournalError::io("open for append", &path, e))?;
    Ok((path, file))
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
        assert_eq!(parse_name(&file_name(77)), Some(77));
        assert_eq!(parse_name("00000000000000000077.log.tmp"), None);
    }

    #[test]
    fn a_header_checks_itself_and_its_base() {
        let p = Path::new("seg");
        let h = header(7);
        check_header(p, &h, 7).unwrap();
        for bit in 0..HEADER * 8 {
            let mut bad = h;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(check_header(p, &bad, 7).is_err(), "bit {bit}");
        }
        assert!(check_header(p, &h, 8).is_err());
        assert!(check_header(p, &h[..HEADER - 1], 7).is_err());
        // Not a frame: its first four bytes are an impossible record length.
        let len = u32::from_le_bytes(h[0..4].try_into().unwrap()) as usize;
        assert!(len > crate::frame::MAX_RECORD);
    }
}

//! Reading a journal: every record from a sequence number on, across
//! segments, with the same rules as recovery. The walk over the segments
//! is shared by both, and it is where a missing segment is noticed:
//!
//! - the first segment must start at record 0 (the log is never cut at its
//!   front), so a deleted first segment is damage;
//! - each segment must start where the one before it ended;
//! - a segment closed by a rotation ends with a seal naming the next
//!   segment's first record, so a deleted (or renamed away) last segment
//!   leaves a sealed segment with no successor: damage, not a torn tail;
//! - every segment starts with a header, so an emptied one is damage too.
//!
//! One gap is allowed, because a crash can leave it: the new segment of a
//! rotation is created before the old one is sealed, so the segment before
//! the last may lack its seal if the last holds no record yet. (Opening
//! the journal writes the missing seal.) Anything else without a seal
//! before a later segment is a cut segment.

use std::path::{Path, PathBuf};

use crate::error::JournalError;
use crate::scan::{scan, Scanned};
use crate::segment::{self, file_name, Segment};

/// One record and its sequence number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Position in the log: 0 for the first record ever appended.
    pub seq: u64,
    /// The bytes appended.
    pub payload: Vec<u8>,
}

/// Reads the records of the journal in `dir` from sequence number `from`
/// on, one segment in memory at a time.
///
/// # Errors
///
/// If the directory cannot be read, a record other than the torn tail of
/// the last segment is damaged, or a segment is missing, emptied or cut
/// ([`JournalError::Corrupt`] names the segment and offset where the
/// evidence is).
pub fn read_from(dir: &Path, from: u64, mut each: impl FnMut(Record)) -> Result<u64, JournalError> {
    let mut delivered = 0u64;
    walk(dir, from, |seq, payload| {
        each(Record {
            seq,
            payload: payload.to_vec(),
        });
        delivered += 1;
    })?;
    Ok(delivered)
}

/// Where a walk over the whole log ended.
pub(crate) struct End {
    /// The last segment.
    pub last: Segment,
    /// How it ends.
    pub scanned: Scanned,
    /// Its length in bytes when it was read.
    pub len: u64,
    /// The segment before it, if a rotation was interrupted before sealing
    /// it: its path and the offset its seal belongs at (its end).
    pub unsealed: Option<(PathBuf, u64)>,
    /// The number of records in the log.
    pub next_seq: u64,
}

fn corrupt(segment: &Path, offset: u64, reason: String) -> JournalError {
    JournalError::Corrupt {
        segment: segment.to_path_buf(),
        offset,
        reason,
    }
}

/// Walks the segments of `dir` (module header), handing `each` every record
/// from `from` on. Segments whose records all precede `from` are not read
/// (opening the journal checked them). `None` for a log with no segment.
pub(crate) fn walk(
    dir: &Path,
    from: u64,
    mut each: impl FnMut(u64, &[u8]),
) -> Result<Option<End>, JournalError> {
    let mut segments = segment::list(dir)?;
    let Some(first) = segments.first() else {
        return Ok(None);
    };
    if first.base != 0 {
        return Err(corrupt(
            &first.path,
            0,
            format!(
                "the log's first segment starts at record {}: the segments holding records \
                 0 to {} are missing (the log is never cut at its front)",
                first.base,
                first.base - 1
            ),
        ));
    }
    let mut expected = 0u64;
    // A segment without a seal, waiting to see what follows it.
    let mut unsealed: Option<(PathBuf, u64)> = None;
    let mut i = 0;
    loop {
        let s = segments[i].clone();
        let last = i + 1 == segments.len();
        if s.base != expected {
            return Err(corrupt(
                &s.path,
                0,
                format!(
                    "segment starts at record {}, expected {expected}: {}, which held records \
                     {expected} to {}, is missing",
                    s.base,
                    file_name(expected),
                    s.base.saturating_sub(1)
                ),
            ));
        }
        if !last && unsealed.is_none() && segments[i + 1].base <= from {
            expected = segments[i + 1].base;
            i += 1;
            continue;
        }
        let bytes = segment::read(&s.path)?;
        let mut seq = s.base;
        let scanned = scan(&s.path, &bytes, s.base, last, |payload| {
            if seq >= from {
                each(seq, payload);
            }
            seq += 1;
        })?;
        expected = s.base + scanned.records;
        let interrupted = match unsealed.take() {
            Some((path, at)) if last && scanned.records == 0 => Some((path, at)),
            Some((path, at)) => {
                return Err(corrupt(
                    &path,
                    at,
                    format!(
                        "the segment ends at byte {at} without a seal, but {} after it holds \
                         records: the segment was cut, and records at its end may be missing",
                        file_name(s.base)
                    ),
                ))
            }
            None => None,
        };
        match scanned.sealed {
            Some((at, next)) if next != expected => {
                return Err(corrupt(
                    &s.path,
                    at,
                    format!(
                        "the seal says the next segment starts at record {next}, but this \
                         segment ends at record {expected}"
                    ),
                ))
            }
            Some((at, next)) if last => {
                // A writer may have rotated since the directory was listed:
                // it creates the next segment before it seals this one.
                let path = dir.join(file_name(next));
                if !path.exists() {
                    return Err(corrupt(
                        &s.path,
                        at,
                        format!(
                            "the segment is sealed: the log goes on at record {next} in {}, \
                             which is missing (deleted or renamed)",
                            file_name(next)
                        ),
                    ));
                }
                segments.push(Segment { base: next, path });
            }
            Some(_) => {}
            None if !last => unsealed = Some((s.path.clone(), scanned.valid_len)),
            None => {}
        }
        if i + 1 == segments.len() {
            return Ok(Some(End {
                last: s,
                scanned,
                len: bytes.len() as u64,
                unsealed: interrupted,
                next_seq: expected,
            }));
        }
        i += 1;
    }
}

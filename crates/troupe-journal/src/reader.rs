//! Reading a journal: every record from a sequence number on, across
//! segments, with the same torn-tail and corruption rules as recovery.

use std::path::Path;

use crate::error::JournalError;
use crate::scan::scan;
use crate::segment::{self, Segment};

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
/// If the directory cannot be read, or a record other than the torn tail
/// of the last segment is damaged ([`JournalError::Corrupt`] names the
/// segment and offset).
pub fn read_from(dir: &Path, from: u64, mut each: impl FnMut(Record)) -> Result<u64, JournalError> {
    let segments = segment::list(dir)?;
    let mut next = 0u64;
    let mut delivered = 0u64;
    for (i, Segment { base, path }) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        if let Some(following) = segments.get(i + 1) {
            if following.base <= from {
                // Every record of this segment precedes `from`; its
                // integrity was checked when the journal was opened.
                next = following.base;
                continue;
            }
        }
        if *base != next && i > 0 {
            return Err(JournalError::Corrupt {
                segment: path.clone(),
                offset: 0,
                reason: format!("segment starts at record {base}, expected {next}"),
            });
        }
        next = *base;
        let bytes = segment::read(path)?;
        scan(path, &bytes, last, |payload| {
            if next >= from {
                each(Record {
                    seq: next,
                    payload: payload.to_vec(),
                });
                delivered += 1;
            }
            next += 1;
        })?;
    }
    Ok(delivered)
}

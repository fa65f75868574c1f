//! Walking the records of one segment's bytes, and telling a torn tail from
//! damage.
//!
//! Only the last segment can have a torn tail: appends only ever go to it,
//! and a crash can leave it ending inside a record (cut short, or pages
//! that never reached the disk). So:
//! - in any segment but the last, every byte must belong to a valid record;
//! - in the last, the first invalid frame ends the log (the tail is torn)
//!   **unless** its header is intact and a valid record follows right after
//!   it: a record in the middle was damaged after it was written, and
//!   truncating there would silently drop the good records after it.

use std::path::Path;

use crate::error::JournalError;
use crate::frame::{decode, Decoded};

/// How a segment's bytes end.
#[derive(Debug, PartialEq, Eq)]
pub struct Scanned {
    /// Records found.
    pub records: u64,
    /// Bytes up to the end of the last valid record.
    pub valid_len: u64,
}

/// Walks the records in `bytes` (the contents of `path`), handing each
/// payload to `each`. `last` says whether a torn tail is allowed.
pub fn scan(
    path: &Path,
    bytes: &[u8],
    last: bool,
    mut each: impl FnMut(&[u8]),
) -> Result<Scanned, JournalError> {
    let mut offset = 0usize;
    let mut records = 0u64;
    while offset < bytes.len() {
        // (why the frame is bad, whether it can be a torn tail)
        let (reason, torn) = match decode(&bytes[offset..]) {
            Decoded::Record(payload, frame) => {
                each(payload);
                records += 1;
                offset += frame;
                continue;
            }
            Decoded::Truncated => ("the file ends inside the record".to_string(), true),
            Decoded::BadLength(len) => (format!("impossible record length {len}"), true),
            Decoded::BadChecksum { frame } => {
                let followed = offset + frame < bytes.len()
                    && matches!(decode(&bytes[offset + frame..]), Decoded::Record(..));
                ("checksum mismatch".to_string(), !followed)
            }
        };
        if last && torn {
            // Torn tail: everything from here on was never acknowledged.
            break;
        }
        return Err(JournalError::Corrupt {
            segment: path.to_path_buf(),
            offset: offset as u64,
            reason,
        });
    }
    Ok(Scanned {
        records,
        valid_len: offset as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode;

    fn log(records: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            encode(r, &mut out);
        }
        out
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_byte_of_the_last_record() {
        let full = log(&[b"one", b"two", b"three"]);
        let good = log(&[b"one", b"two"]).len();
        for cut in good..full.len() {
            let s = scan(Path::new("x"), &full[..cut], true, |_| {}).unwrap();
            assert_eq!(
                s,
                Scanned {
                    records: 2,
                    valid_len: good as u64
                },
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_torn_tail_in_an_earlier_segment_is_corruption() {
        let full = log(&[b"one", b"two"]);
        let err = scan(Path::new("seg"), &full[..full.len() - 1], false, |_| {}).unwrap_err();
        assert!(
            matches!(err, JournalError::Corrupt { offset: 11, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_flipped_bit_before_good_records_is_corruption_even_in_the_last_segment() {
        let mut bytes = log(&[b"one", b"two", b"three"]);
        bytes[11 + 8] ^= 0x10; // the payload of "two"
        let err = scan(Path::new("seg"), &bytes, true, |_| {}).unwrap_err();
        match err {
            JournalError::Corrupt { offset, reason, .. } => {
                assert_eq!(offset, 11);
                assert!(reason.contains("checksum"));
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn zeroed_pages_after_the_last_record_are_a_torn_tail() {
        let mut bytes = log(&[b"one"]);
        bytes.extend_from_slice(&[0u8; 4096]);
        let s = scan(Path::new("x"), &bytes, true, |_| {}).unwrap();
        assert_eq!(
            s,
            Scanned {
                records: 1,
                valid_len: 11
            }
        );
    }
}

//! Walking the records of one segment's bytes (after its header, see
//! `segment.rs`), and telling a torn tail from damage.
//!
//! Only the last segment can have a torn tail: appends only ever go to it,
//! and a crash can leave it ending inside a record (cut short, or pages
//! that never reached the disk). So:
//! - in any segment but the last, every byte must belong to a valid record;
//! - in the last, the first invalid frame is a torn tail only if **no valid
//!   frame starts anywhere after it**. A crash leaves nothing whole behind
//!   the point where writing stopped, so a valid record after a bad frame
//!   means the bad frame was damaged after it was written, and truncating
//!   there would silently drop acknowledged records. That is reported as
//!   [`JournalError::Corrupt`] at the bad frame.
//!
//! The bad frame's own header cannot be trusted to say where the next
//! record starts (its length may be the damaged part, and the record after
//! it may be damaged too), so every later byte position is tried. A valid
//! seal found there counts like a valid record: it was written after every
//! record before it. Trying a
//! position means checking a CRC over as many bytes as its length field
//! claims, which done directly costs O(n²) on a large torn region full of
//! plausible lengths. Long candidates are instead checked in constant time
//! from CRCs of prefixes of the region (see [`shift`]), so the search is
//! linear in the region's size.
//!
//! A false alarm needs a byte position in the torn region whose length
//! field fits in the rest of the file *and* whose stored CRC matches: a
//! 2⁻³² chance per such position for arbitrary bytes. Zeroes never match
//! (the CRC of a zero length is not zero), so zero-filled pages are always
//! a torn tail. No minimum payload size is demanded of the record found:
//! it would not change the 2⁻³² odds, and it would let damage followed
//! only by short records pass as a torn tail.

use std::path::Path;

use crate::error::JournalError;
use crate::frame::{decode, Decoded, HEADER, MAX_RECORD, SEAL};
use crate::segment;

/// How a segment's bytes end.
#[derive(Debug, PartialEq, Eq)]
pub struct Scanned {
    /// Records found.
    pub records: u64,
    /// Bytes up to the end of the last valid record (or of the seal).
    pub valid_len: u64,
    /// The segment's seal, if it has one: its byte offset, and the record
    /// it says the next segment starts at.
    pub sealed: Option<(u64, u64)>,
}

/// Checks the header of the segment `path` starting at record `base`, then
/// walks its records, handing each payload to `each`. `last` says whether
/// a torn tail is allowed.
pub fn scan(
    path: &Path,
    bytes: &[u8],
    base: u64,
    last: bool,
    each: impl FnMut(&[u8]),
) -> Result<Scanned, JournalError> {
    segment::check_header(path, bytes, base)?;
    scan_frames(path, bytes, segment::HEADER, last, each)
}

/// Walks the frames in `bytes` from `start` on (see [`scan`]). A seal ends
/// the walk; any byte after it is damage.
fn scan_frames(
    path: &Path,
    bytes: &[u8],
    start: usize,
    last: bool,
    mut each: impl FnMut(&[u8]),
) -> Result<Scanned, JournalError> {
    let mut offset = start;
    let mut records = 0u64;
    let mut sealed = None;
    while offset < bytes.len() {
        let mut reason = match decode(&bytes[offset..]) {
            Decoded::Record(payload, frame) => {
                each(payload);
                records += 1;
                offset += frame;
                continue;
            }
            Decoded::Seal { next } => {
                sealed = Some((offset as u64, next));
                offset += SEAL;
                if offset == bytes.len() {
                    break;
                }
                // Not a torn tail even in the last segment: a sealed
                // segment is never written again.
                return Err(JournalError::Corrupt {
                    segment: path.to_path_buf(),
                    offset: offset as u64,
                    reason: format!(
                        "{} bytes after the segment's seal (a sealed segment is never \
                         written again)",
                        bytes.len() - offset
                    ),
                });
            }
            Decoded::Truncated => "the record runs past the end of the file".to_string(),
            Decoded::BadLength(len) => format!("impossible record length {len}"),
            Decoded::BadChecksum { .. } => "checksum mismatch".to_string(),
        };
        if last {
            match next_valid_frame(bytes, offset + 1).found {
                // Torn tail: everything from here on was never acknowledged.
                None => break,
                Some(at) => reason.push_str(&format!(", and a valid record starts at byte {at}")),
            }
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
        sealed,
    })
}

/// Payloads up to this size are checked by computing their CRC directly;
/// longer ones from prefix CRCs. Small enough that direct checks cost a
/// bounded amount per byte position, large enough that the common short
/// candidates skip the prefix table.
const DIRECT: usize = 256;

/// The prefix table keeps the CRC of every `STRIDE`th prefix: a prefix
/// CRC then costs at most `STRIDE - 1` bytes of hashing, and the table
/// takes a sixteenth of the region's size in memory.
const STRIDE: usize = 64;

/// The result of [`next_valid_frame`].
#[derive(Debug)]
struct Search {
    /// Where the first valid frame starts.
    found: Option<usize>,
    /// Bytes run through the CRC to find out (what the search costs; the
    /// tests hold it to a linear bound).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "only the tests measure the search")
    )]
    hashed: usize,
}

/// Finds the first byte position at or after `from` where a complete,
/// valid frame starts.
fn next_valid_frame(bytes: &[u8], from: usize) -> Search {
    let mut hashed = 0usize;
    // Built only when a long candidate turns up: most torn tails have none.
    let mut prefixes: Option<Prefixes<'_>> = None;
    // Positions with room for at least a header.
    for p in from..bytes.len().saturating_sub(HEADER - 1) {
        let len = u32::from_le_bytes(bytes[p..p + 4].try_into().expect("4 bytes")) as usize;
        if len == u32::MAX as usize {
            hashed += SEAL - 4;
            if matches!(decode(&bytes[p..]), Decoded::Seal { .. }) {
                return Search {
                    found: Some(p),
                    hashed,
                };
            }
            continue;
        }
        if len > MAX_RECORD || len > bytes.len() - p - HEADER {
            // Not a complete frame: decode would say BadLength or Truncated.
            continue;
        }
        let valid = if len <= DIRECT {
            hashed += 4 + len;
            matches!(decode(&bytes[p..]), Decoded::Record(..))
        } else {
            let prefixes = prefixes.get_or_insert_with(|| {
                hashed += bytes.len() - from;
                Prefixes::new(bytes, from)
            });
            let stored = u32::from_le_bytes(bytes[p + 4..p + 8].try_into().expect("4 bytes"));
            let start = p + HEADER;
            let (before, cost_before) = prefixes.crc_up_to(start);
            let (through, cost_through) = prefixes.crc_up_to(start + len);
            hashed += 4 + cost_before + cost_through;
            // The frame's CRC covers its length bytes then its payload:
            // crc(len ‖ payload) = shift(crc(len), n) ^ crc(payload), and
            // crc(payload) = crc(prefix through it) ^ shift(crc(prefix
            // before it), n); `shift` is linear, so the two shifts merge.
            let length_crc = crc32c::crc32c(&bytes[p..p + 4]);
            shift::by(length_crc ^ before, len) ^ through == stored
        };
        if valid {
            return Search {
                found: Some(p),
                hashed,
            };
        }
    }
    Search {
        found: None,
        hashed,
    }
}

/// CRCs of the prefixes of `bytes[base..]`, sampled every [`STRIDE`] bytes.
struct Prefixes<'a> {
    bytes: &'a [u8],
    base: usize,
    /// `sampled[k]` is the CRC of `bytes[base..base + k * STRIDE]`.
    sampled: Vec<u32>,
}

impl<'a> Prefixes<'a> {
    fn new(bytes: &'a [u8], base: usize) -> Self {
        let mut sampled = Vec::with_capacity((bytes.len() - base) / STRIDE + 1);
        let mut crc = crc32c::crc32c(&[]);
        sampled.push(crc);
        for chunk in bytes[base..].chunks_exact(STRIDE) {
            crc = crc32c::crc32c_append(crc, chunk);
            sampled.push(crc);
        }
        Prefixes {
            bytes,
            base,
            sampled,
        }
    }

    /// The CRC of `bytes[base..end]`, and how many bytes it hashed.
    fn crc_up_to(&self, end: usize) -> (u32, usize) {
        let k = (end - self.base) / STRIDE;
        let from = self.base + k * STRIDE;
        (
            crc32c::crc32c_append(self.sampled[k], &self.bytes[from..end]),
            end - from,
        )
    }
}

/// What appending bytes does to a CRC-32C, without the bytes.
///
/// The CRC register is a polynomial over GF(2) modulo the CRC polynomial
/// P, and feeding it a zero bit multiplies it by x. Feeding it a message
/// from a given register value is linear in that value, and the initial
/// and final inversions of CRC-32C cancel out, which gives, for any `a`
/// and `b`: `crc(a ‖ b) = by(crc(a), b.len()) ^ crc(b)`, where `by(c, n)`
/// multiplies `c` by x^(8n) mod P.
mod shift {
    /// P without its x³² term, bit-reflected like the register: bit 31
    /// holds the coefficient of x⁰, bit 0 that of x³¹.
    const POLY: u32 = 0x82F6_3B78;

    /// `a · b mod P`, both in the reflected representation.
    const fn mul(mut a: u32, b: u32) -> u32 {
        let mut product = 0;
        let mut k = 0;
        while k < 32 {
            // The coefficient of x^k in b.
            if b & (0x8000_0000 >> k) != 0 {
                product ^= a;
            }
            // a · x: every coefficient moves up one power (down one bit);
            // an x³² that falls off is replaced by the rest of P.
            a = (a >> 1) ^ (POLY & (a & 1).wrapping_neg());
            k += 1;
        }
        product
    }

    /// Bits of a shift length: enough for a payload of `MAX_RECORD` bytes.
    const BITS: usize = 27;
    const _: () = assert!(crate::frame::MAX_RECORD >> BITS == 0);

    /// `POWERS[k]` is x^(8·2^k) mod P: the effect of 2^k zero bytes.
    const POWERS: [u32; BITS] = {
        let mut powers = [0; BITS];
        powers[0] = 0x8000_0000 >> 8; // x⁸
        let mut k = 1;
        while k < BITS {
            powers[k] = mul(powers[k - 1], powers[k - 1]);
            k += 1;
        }
        powers
    };

    /// `crc` multiplied by x^(8n) mod P (see the module header), in at
    /// most 27 multiplications whatever `n` is.
    pub fn by(mut crc: u32, n: usize) -> u32 {
        assert!(
            n >> BITS == 0,
            "shift of {n} bytes is beyond the largest frame"
        );
        for (k, power) in POWERS.iter().enumerate() {
            if (n >> k) & 1 == 1 {
                crc = mul(crc, *power);
            }
        }
        crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode;
    use proptest::prelude::*;

    fn log(records: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            encode(r, &mut out);
        }
        out
    }

    /// The frame offsets of `records` laid out by [`log`].
    fn offsets(records: &[&[u8]]) -> Vec<usize> {
        records
            .iter()
            .scan(0, |at, r| {
                let here = *at;
                *at += HEADER + r.len();
                Some(here)
            })
            .collect()
    }

    /// The offset and reason of the corruption `scan` reports for the last
    /// segment `bytes`.
    fn corrupt_at(bytes: &[u8]) -> Option<(u64, String)> {
        match scan_frames(Path::new("seg"), bytes, 0, true, |_| {}) {
            Err(JournalError::Corrupt { offset, reason, .. }) => Some((offset, reason)),
            Err(other) => panic!("{other}"),
            Ok(_) => None,
        }
    }

    /// The search the fast one must agree with: decode at every position.
    fn naive_next_valid_frame(bytes: &[u8], from: usize) -> Option<usize> {
        (from..bytes.len()).find(|&p| {
            matches!(
                decode(&bytes[p..]),
                Decoded::Record(..) | Decoded::Seal { .. }
            )
        })
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_byte_of_the_last_record() {
        let full = log(&[b"one", b"two", b"three"]);
        let good = log(&[b"one", b"two"]).len();
        for cut in good..full.len() {
            let s = scan_frames(Path::new("x"), &full[..cut], 0, true, |_| {}).unwrap();
            assert_eq!(
                s,
                Scanned {
                    records: 2,
                    valid_len: good as u64,
                    sealed: None,
                },
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_torn_tail_in_an_earlier_segment_is_corruption() {
        let full = log(&[b"one", b"two"]);
        let err =
            scan_frames(Path::new("seg"), &full[..full.len() - 1], 0, false, |_| {}).unwrap_err();
        assert!(
            matches!(err, JournalError::Corrupt { offset: 11, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_flipped_bit_before_good_records_is_corruption_even_in_the_last_segment() {
        let mut bytes = log(&[b"one", b"two", b"three"]);
        bytes[11 + 8] ^= 0x10; // the payload of "two"
        let (offset, reason) = corrupt_at(&bytes).unwrap();
        assert_eq!(offset, 11);
        assert!(reason.contains("checksum"), "{reason}");
        assert!(
            reason.contains("valid record starts at byte 22"),
            "{reason}"
        );
    }

    #[test]
    fn every_bit_flip_in_a_middle_record_of_the_last_segment_is_corruption() {
        // Header and payload alike. Flips in the length used to pass as a
        // torn tail: the declared length is impossible, runs past the end
        // of the file, or ends inside a later record.
        let records: [&[u8]; 5] = [b"zero", b"the one in the middle", b"two", b"3", b"four"];
        let at = offsets(&records)[1];
        let good = log(&records);
        for bit in 0..(HEADER + records[1].len()) * 8 {
            let mut bytes = good.clone();
            bytes[at + bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                corrupt_at(&bytes).map(|(offset, _)| offset),
                Some(at as u64),
                "bit {bit}"
            );
        }
    }

    #[test]
    fn two_adjacent_damaged_records_before_good_ones_are_corruption() {
        let records: [&[u8]; 5] = [b"zero", b"one", b"two", b"three", b"four"];
        let at = offsets(&records);
        let mut bytes = log(&records);
        bytes[at[1] + 3] ^= 0x80; // "one": an impossible length
        bytes[at[2] + 9] ^= 0x01; // "two": a payload bit
        let (offset, reason) = corrupt_at(&bytes).unwrap();
        assert_eq!(offset, at[1] as u64);
        assert!(
            reason.contains(&format!("starts at byte {}", at[3])),
            "{reason}"
        );
    }

    #[test]
    fn damage_followed_only_by_empty_records_is_corruption() {
        // Why the search demands no minimum payload: empty records are
        // records too.
        let records: [&[u8]; 4] = [b"zero", b"one", b"", b""];
        let at = offsets(&records);
        let mut bytes = log(&records);
        bytes[at[1]] ^= 0x02;
        assert_eq!(corrupt_at(&bytes).unwrap().0, at[1] as u64);
    }

    #[test]
    fn damage_before_a_long_record_is_found_through_prefix_crcs() {
        // The record after the damage is longer than DIRECT, so only the
        // prefix-CRC check can find it.
        let long = vec![0x5a; 10 * DIRECT + 7];
        let records: [&[u8]; 3] = [b"zero", b"one", &long];
        let at = offsets(&records);
        let mut bytes = log(&records);
        bytes[at[1] + 2] ^= 0x10; // "one": a length of a megabyte
        let (offset, reason) = corrupt_at(&bytes).unwrap();
        assert_eq!(offset, at[1] as u64);
        assert!(
            reason.contains(&format!("starts at byte {}", at[2])),
            "{reason}"
        );
    }

    #[test]
    fn zeroed_pages_after_the_last_record_are_a_torn_tail() {
        let mut bytes = log(&[b"one"]);
        bytes.extend_from_slice(&[0u8; 4096]);
        let s = scan_frames(Path::new("x"), &bytes, 0, true, |_| {}).unwrap();
        assert_eq!(
            s,
            Scanned {
                records: 1,
                valid_len: 11,
                sealed: None,
            }
        );
    }

    #[test]
    fn zeroes_after_a_cut_record_are_a_torn_tail() {
        // A record cut short, then pages that never reached the disk.
        let full = log(&[b"one", b"two, cut short"]);
        let mut bytes = full[..11 + 12].to_vec();
        bytes.extend_from_slice(&[0u8; 3 * 4096]);
        let s = scan_frames(Path::new("x"), &bytes, 0, true, |_| {}).unwrap();
        assert_eq!(s.valid_len, 11);
        // Why zeroes cannot pass for a record: an empty record's CRC (of
        // four zero length bytes) is not zero.
        assert_ne!(crate::frame::checksum(b""), 0);
    }

    #[test]
    fn damage_to_the_very_last_record_is_indistinguishable_from_a_torn_tail() {
        // The rule's blind spot: nothing valid follows, so it is cut.
        let mut bytes = log(&[b"one", b"two", b"three"]);
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        let s = scan_frames(Path::new("x"), &bytes, 0, true, |_| {}).unwrap();
        assert_eq!(s.records, 2);
    }

    #[test]
    fn a_seal_ends_the_segment_and_nothing_may_follow_it() {
        let mut bytes = log(&[b"one", b"two"]);
        let sealed_at = bytes.len();
        bytes.extend_from_slice(&crate::frame::seal(2));
        for last in [false, true] {
            let s = scan_frames(Path::new("x"), &bytes, 0, last, |_| {}).unwrap();
            assert_eq!(s.records, 2);
            assert_eq!(s.sealed, Some((sealed_at as u64, 2)));
            assert_eq!(s.valid_len, bytes.len() as u64);
        }
        let mut after = bytes.clone();
        after.push(0);
        let err = scan_frames(Path::new("x"), &after, 0, true, |_| {}).unwrap_err();
        assert!(
            matches!(err, JournalError::Corrupt { offset, .. } if offset as usize == bytes.len()),
            "{err}"
        );
    }

    #[test]
    fn damage_before_a_seal_is_corruption_not_a_torn_tail() {
        let records: [&[u8]; 3] = [b"zero", b"one", b"two"];
        let at = offsets(&records);
        let mut bytes = log(&records);
        bytes.extend_from_slice(&crate::frame::seal(3));
        bytes[at[2] + 9] ^= 0x01;
        assert_eq!(corrupt_at(&bytes).unwrap().0, at[2] as u64);
    }

    #[test]
    fn the_search_costs_linear_work_on_a_region_full_of_plausible_lengths() {
        // Every fourth position claims a 32 KiB payload that fits in the
        // region: checked directly, that is 32 KiB of hashing per position
        // (8192 bytes per byte of region); from prefix CRCs it is bounded.
        let region: Vec<u8> = std::iter::repeat_n(0x8000u32.to_le_bytes(), 64 << 10)
            .flatten()
            .collect();
        let search = next_valid_frame(&region, 0);
        assert_eq!(search.found, None);
        let bound = region.len() * (1 + HEADER + DIRECT + 2 * STRIDE);
        assert!(
            search.hashed <= bound,
            "{} bytes hashed for a region of {}",
            search.hashed,
            region.len()
        );
    }

    #[test]
    fn a_shift_appends_zeroes_to_a_crc() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for split in [0, 1, 3, 64, 255, 256, 1000, 4999, 5000] {
            let (a, b) = data.split_at(split);
            assert_eq!(
                shift::by(crc32c::crc32c(a), b.len()) ^ crc32c::crc32c(b),
                crc32c::crc32c(&data),
                "split at {split}"
            );
        }
        for n in [0, 1, 7, 8, 1 << 20, MAX_RECORD] {
            assert_eq!(
                shift::by(0xdead_beef, n),
                crc32c::crc32c_combine(0xdead_beef, 0, n),
                "{n} bytes"
            );
        }
    }

    /// Pieces of a generated segment.
    #[derive(Clone, Debug)]
    enum Piece {
        /// Arbitrary bytes.
        Noise(Vec<u8>),
        /// A valid frame.
        Frame(Vec<u8>),
        /// A frame with a plausible length and a wrong checksum.
        Forged(Vec<u8>, u32),
        /// A valid frame with one bit flipped.
        Flipped(Vec<u8>, usize),
        /// A seal.
        Seal(u64),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        let payload = prop_oneof![
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec(any::<u8>(), DIRECT - 2..DIRECT + 600),
        ];
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300).prop_map(Piece::Noise),
            payload.clone().prop_map(Piece::Frame),
            (payload.clone(), any::<u32>()).prop_map(|(p, c)| Piece::Forged(p, c)),
            (payload, any::<usize>()).prop_map(|(p, b)| Piece::Flipped(p, b)),
            any::<u64>().prop_map(Piece::Seal),
        ]
    }

    fn lay_out(pieces: &[Piece]) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Noise(bytes) => out.extend_from_slice(bytes),
                Piece::Frame(payload) => encode(payload, &mut out),
                Piece::Seal(next) => out.extend_from_slice(&crate::frame::seal(*next)),
                Piece::Forged(payload, crc) => {
                    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                    out.extend_from_slice(&crc.to_le_bytes());
                    out.extend_from_slice(payload);
                }
                Piece::Flipped(payload, bit) => {
                    let start = out.len();
                    encode(payload, &mut out);
                    let bit = bit % ((out.len() - start) * 8);
                    out[start + bit / 8] ^= 1 << (bit % 8);
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn the_search_agrees_with_decoding_every_position(
            pieces in prop::collection::vec(piece(), 0..8),
            from in 0usize..2000,
        ) {
            let bytes = lay_out(&pieces);
            let from = from.min(bytes.len());
            prop_assert_eq!(
                next_valid_frame(&bytes, from).found,
                naive_next_valid_frame(&bytes, from)
            );
        }
    }
}

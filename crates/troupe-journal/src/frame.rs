//! The record frame: `len: u32 LE | crc: u32 LE | payload[len]`, where `crc`
//! is the CRC-32C (Castagnoli) of the length's four bytes followed by the
//! payload. Covering the length too means a flipped length bit is caught
//! even when the bytes it points at happen to be a valid payload.
//!
//! A segment that was closed by a rotation ends with a **seal**, shaped
//! like a frame whose length is the impossible `u32::MAX`:
//!
//! ```text
//! 0xFFFF_FFFF: u32 LE | crc: u32 LE | next: u64 LE
//! ```
//!
//! `crc` is the CRC-32C of the marker's four bytes followed by `next`, the
//! sequence number the next segment starts at. A seal says "the log goes
//! on in segment `next`": without it, a deleted last segment would leave
//! the one before it looking like a complete log.

/// Bytes before the payload.
pub const HEADER: usize = 8;

/// The largest payload accepted (64 MiB): a length beyond it in a file is
/// damage, not a record.
pub const MAX_RECORD: usize = 64 << 20;

/// The length field of a seal (module header).
const SEAL_MARK: u32 = u32::MAX;

/// Bytes of a seal.
pub const SEAL: usize = 16;

/// The seal of a segment whose successor starts at record `next`.
pub fn seal(next: u64) -> [u8; SEAL] {
    let mut out = [0u8; SEAL];
    out[0..4].copy_from_slice(&SEAL_MARK.to_le_bytes());
    out[8..16].copy_from_slice(&next.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[0..4]), &out[8..16]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The checksum stored in a frame for `payload`.
pub fn checksum(payload: &[u8]) -> u32 {
    let len = (payload.len() as u32).to_le_bytes();
    crc32c::crc32c_append(crc32c::crc32c(&len), payload)
}

/// Appends the frame of `payload` to `out`.
pub fn encode(payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// What the bytes at a position hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A valid record and the size of its whole frame.
    Record(&'a [u8], usize),
    /// A valid seal ([`SEAL`] bytes): the log goes on at record `next`.
    Seal {
        /// The sequence number the next segment starts at.
        next: u64,
    },
    /// The buffer ends inside the frame: a record cut short.
    Truncated,
    /// The header declares an impossible length.
    BadLength(u32),
    /// The header is whole and the payload present, but the checksum fails.
    BadChecksum {
        /// Size of the frame the header declares.
        frame: usize,
    },
}

/// Decodes the frame at the start of `buf`.
pub fn decode(buf: &[u8]) -> Decoded<'_> {
    if buf.len() < HEADER {
        return Decoded::Truncated;
    }
    let len = u32::from_le_bytes(buf[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
    if len == SEAL_MARK {
        if buf.len() < SEAL {
            return Decoded::Truncated;
        }
        let next = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes"));
        if seal(next)[4..8] != buf[4..8] {
            return Decoded::BadChecksum { frame: SEAL };
        }
        return Decoded::Seal { next };
    }
    if len as usize > MAX_RECORD {
        return Decoded::BadLength(len);
    }
    let frame = HEADER + len as usize;
    if buf.len() < frame {
        return Decoded::Truncated;
    }
    let payload = &buf[HEADER..frame];
    if checksum(payload) != crc {
        return Decoded::BadChecksum { frame };
    }
    Decoded::Record(payload, frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_every_single_bit_flip() {
        let mut buf = Vec::new();
        encode(b"hello, journal", &mut buf);
        assert_eq!(decode(&buf), Decoded::Record(b"hello, journal", buf.len()));
        for bit in 0..buf.len() * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(
                !matches!(decode(&bad), Decoded::Record(..)),
                "flip of bit {bit} went unnoticed"
            );
        }
    }

    #[test]
    fn a_seal_round_trips_and_rejects_every_single_bit_flip() {
        let good = seal(1234);
        assert_eq!(decode(&good), Decoded::Seal { next: 1234 });
        for bit in 0..SEAL * 8 {
            let mut bad = good;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(
                !matches!(decode(&bad), Decoded::Seal { .. } | Decoded::Record(..)),
                "flip of bit {bit} went unnoticed"
            );
        }
        for cut in 0..SEAL {
            assert_eq!(decode(&good[..cut]), Decoded::Truncated, "cut at {cut}");
        }
    }

    #[test]
    fn a_cut_frame_is_truncated_at_every_length() {
        let mut buf = Vec::new();
        encode(&[7u8; 100], &mut buf);
        for cut in 0..buf.len() {
            assert_eq!(decode(&buf[..cut]), Decoded::Truncated, "cut at {cut}");
        }
    }

    #[test]
    fn zeroed_bytes_are_not_a_record_and_empty_records_are() {
        assert_eq!(decode(&[0u8; 16]), Decoded::BadChecksum { frame: 8 });
        let mut buf = Vec::new();
        encode(b"", &mut buf);
        assert_eq!(decode(&buf), Decoded::Record(b"", 8));
        let mut huge = vec![0xff; 16];
        huge[0] = 0xfe;
        huge[4..8].copy_from_slice(&[0; 4]);
        assert_eq!(decode(&huge), Decoded::BadLength(u32::MAX - 1));
    }
}

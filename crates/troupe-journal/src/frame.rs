//! The record frame: `len: u32 LE | crc: u32 LE | payload[len]`, where `crc`
//! is the CRC-32C (Castagnoli) of the length's four bytes followed by the
//! payload. Covering the length too means a flipped length bit is caught
//! even when the bytes it points at happen to be a valid payload.

/// Bytes before the payload.
pub const HEADER: usize = 8;

/// The largest payload accepted (64 MiB): a length beyond it in a file is
/// damage, not a record.
pub const MAX_RECORD: usize = 64 << 20;

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
        huge[4..8].copy_from_slice(&[0; 4]);
        assert_eq!(decode(&huge), Decoded::BadLength(u32::MAX));
    }
}

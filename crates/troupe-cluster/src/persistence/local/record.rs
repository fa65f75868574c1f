//! The records the local journal writes into its troupe-journal log, one
//! per append (so the events of one command survive a crash together or
//! not at all). A fence record (one per token acquisition) is no longer
//! written, since taking a token writes nothing (`local.rs` says why), but
//! a log that holds some is still read:
//!
//! ```text
//! kind: u8 (1 events, 2 fence) | id_len: u16 LE | id bytes | token: u64 LE
//! events: first_seq_nr: u64 LE | count: u32 LE | count x (len: u32 LE | bytes)
//! ```
//!
//! The persistence id comes first so the index rebuild and a replay skip
//! other ids' records after reading a few bytes, without decoding events.

use crate::persistence::error::PersistenceError;

const EVENTS: u8 = 1;
const FENCE: u8 = 2;

/// A decoded record, borrowing the log's bytes.
pub(super) struct Record<'a> {
    pub id: &'a [u8],
    pub token: u64,
    pub body: Body<'a>,
}

pub(super) enum Body<'a> {
    Fence,
    /// Events from `first_seq_nr`, `count` of them, encoded in `bytes`.
    Events {
        first_seq_nr: u64,
        count: u32,
        bytes: &'a [u8],
    },
}

fn header(kind: u8, id: &str, token: u64, extra: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + 2 + id.len() + 8 + extra);
    out.push(kind);
    out.extend_from_slice(&(id.len() as u16).to_le_bytes());
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(&token.to_le_bytes());
    out
}

/// A fence record: `token` is `id`'s from now on (what earlier versions
/// wrote at every acquisition).
#[cfg(test)]
pub(super) fn fence(id: &str, token: u64) -> Vec<u8> {
    header(FENCE, id, token, 0)
}

/// An events record.
pub(super) fn events(id: &str, token: u64, first_seq_nr: u64, events: &[Vec<u8>]) -> Vec<u8> {
    let size: usize = events.iter().map(|e| 4 + e.len()).sum();
    let mut out = header(EVENTS, id, token, 12 + size);
    out.extend_from_slice(&first_seq_nr.to_le_bytes());
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    for e in events {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    out
}

fn bad(reason: &str) -> PersistenceError {
    PersistenceError::Decode {
        persistence_id: String::new(),
        what: "record",
        reason: reason.to_string(),
    }
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], PersistenceError> {
    if bytes.len() < n {
        return Err(bad("record ends early"));
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(head)
}

fn u64_at(bytes: &mut &[u8]) -> Result<u64, PersistenceError> {
    let b = take(bytes, 8)?;
    Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

fn u32_at(bytes: &mut &[u8]) -> Result<u32, PersistenceError> {
    let b = take(bytes, 4)?;
    Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// Decodes a record's header and locates its events.
pub(super) fn decode(mut bytes: &[u8]) -> Result<Record<'_>, PersistenceError> {
    let kind = take(&mut bytes, 1)?[0];
    let len = take(&mut bytes, 2)?;
    let len = u16::from_le_bytes([len[0], len[1]]) as usize;
    let id = take(&mut bytes, len)?;
    let token = u64_at(&mut bytes)?;
    let body = match kind {
        FENCE => Body::Fence,
        EVENTS => {
            let first_seq_nr = u64_at(&mut bytes)?;
            let count = u32_at(&mut bytes)?;
            Body::Events {
                first_seq_nr,
                count,
                bytes,
            }
        }
        other => return Err(bad(&format!("unknown record kind {other}"))),
    };
    Ok(Record { id, token, body })
}

/// Calls `each` with every event of an events record's `bytes`.
pub(super) fn each_event(
    mut bytes: &[u8],
    count: u32,
    mut each: impl FnMut(u32, &[u8]) -> Result<(), PersistenceError>,
) -> Result<(), PersistenceError> {
    for i in 0..count {
        let len = u32_at(&mut bytes)? as usize;
        each(i, take(&mut bytes, len)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        let bytes = events("acct-1", 7, 3, &[b"a".to_vec(), b"bc".to_vec()]);
        let r = decode(&bytes).unwrap();
        assert_eq!((r.id, r.token), (&b"acct-1"[..], 7));
        let Body::Events {
            first_seq_nr,
            count,
            bytes,
        } = r.body
        else {
            panic!("not events")
        };
        assert_eq!((first_seq_nr, count), (3, 2));
        let mut got = Vec::new();
        each_event(bytes, count, |_, e| {
            got.push(e.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(got, [b"a".to_vec(), b"bc".to_vec()]);
    }

    #[test]
    fn truncated_record_is_an_error() {
        let bytes = events("x", 1, 1, &[b"abc".to_vec()]);
        let r = decode(&bytes[..bytes.len() - 1]).unwrap();
        let Body::Events { count, bytes, .. } = r.body else {
            panic!("not events")
        };
        assert!(each_event(bytes, count, |_, _| Ok(())).is_err());
        assert!(decode(&fence("x", 1)[..5]).is_err());
    }
}

//! The server's limits, checked before anything is sent: a NATS server
//! closes the whole connection of a client that sends a message over its
//! `max_payload` or a protocol line over its `max_control_line`, losing
//! every request in flight on it (every entity of the node). So nothing
//! the journal sends may exceed either.
//!
//! - `max_payload` (1 MB by default) is in the server's INFO, which the
//!   client keeps ([`async_nats::Client::server_info`], replaced at every
//!   reconnect, since the journal may be on another server then): each
//!   record and snapshot is measured as the server counts it (headers and
//!   payload) against the current value before it is published.
//! - `max_control_line` (4,096 bytes by default) is not in INFO. The
//!   longest line the journal writes is bounded instead, by capping what
//!   goes into it: an id at [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) (255
//!   bytes, at most 765 escaped) and an entity type at
//!   [`MAX_ENTITY_TYPE_BYTES`] (64). `LONGEST_LINE` is the worst case,
//!   with a reply subject of up to `REPLY_ALLOWANCE` bytes (an inbox);
//!   a compile-time assertion keeps it under half the default.

use async_nats::HeaderMap;

use super::PersistenceError;

/// The longest entity type a JetStream journal accepts, in bytes (letters,
/// digits, `-` and `_`): it is part of every subject and of the stream and
/// bucket names (which the server caps at 255).
pub const MAX_ENTITY_TYPE_BYTES: usize = 64;

/// The most the escaping of an id can make of it: three bytes per byte.
const MAX_ESCAPED_ID: usize = 3 * crate::MAX_ID_BYTES;

/// The most a reply subject (the client's inbox) is assumed to take.
const REPLY_ALLOWANCE: usize = 256;

/// The longest subject the journal sends to: a direct get of a snapshot
/// key, `$JS.API.DIRECT.GET.KV_troupe-snapshots-<type>.$KV.troupe-snapshots-<type>.<id>`
/// (the journal's own subjects, `troupe.journal.<type>.<id>`, and the
/// direct get of one, are shorter).
const LONGEST_SUBJECT: usize = "$JS.API.DIRECT.GET.KV_troupe-snapshots-".len()
    + MAX_ENTITY_TYPE_BYTES
    + ".$KV.troupe-snapshots-".len()
    + MAX_ENTITY_TYPE_BYTES
    + 1
    + MAX_ESCAPED_ID;

/// The longest protocol line: `HPUB <subject> <reply> <header size>
/// <total size>\r\n`, sizes up to 20 digits.
const LONGEST_LINE: usize = "HPUB ".len() + LONGEST_SUBJECT + 1 + REPLY_ALLOWANCE + 2 * 21 + 2;

/// The server's default `max_control_line`, which [`LONGEST_LINE`] stays
/// under.
const DEFAULT_MAX_CONTROL_LINE: usize = 4096;

// Checked when the crate compiles: the longest line (about 1,300 bytes)
// fits the default with half of it to spare, so a server configured below
// the default still carries it unless cut by more than half.
const _: () = assert!(2 * LONGEST_LINE < DEFAULT_MAX_CONTROL_LINE);

/// Bytes a header map takes on the wire: the version line, one line per
/// value, the blank line.
pub(super) fn header_bytes(headers: &HeaderMap) -> usize {
    let mut n = "NATS/1.0\r\n".len() + 2;
    for (name, values) in headers.iter() {
        for value in values {
            n += AsRef::<str>::as_ref(name).len() + 2 + value.as_str().len() + 2;
        }
    }
    n
}

/// Refuses a message of `size` bytes (headers and payload, as the server
/// counts it) over the server's `max_payload` as the client knows it now.
pub(super) fn check_payload(
    client: &async_nats::Client,
    persistence_id: &str,
    what: &'static str,
    size: usize,
) -> Result<(), PersistenceError> {
    let limit = client.server_info().max_payload;
    // 0: the client has not had the server's INFO yet (it always has
    // once `connect` returned); nothing to check against.
    if limit > 0 && size > limit {
        return Err(PersistenceError::TooLarge {
            persistence_id: persistence_id.to_string(),
            what,
            size,
            limit,
        });
    }
    Ok(())
}

/// Whether `entity_type` can name a journal: 1 to
/// [`MAX_ENTITY_TYPE_BYTES`] of letters, digits, `-` and `_`.
pub(super) fn entity_type_fits(entity_type: &str) -> bool {
    !entity_type.is_empty()
        && entity_type.len() <= MAX_ENTITY_TYPE_BYTES
        && entity_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_counts_what_the_client_writes() {
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Expected-Last-Subject-Sequence", "12");
        let wire = "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 12\r\n\r\n";
        assert_eq!(header_bytes(&headers), wire.len());
    }

    #[test]
    fn entity_types_are_short_and_plain() {
        assert!(entity_type_fits("account-2_b"));
        assert!(entity_type_fits(&"a".repeat(MAX_ENTITY_TYPE_BYTES)));
        assert!(!entity_type_fits(&"a".repeat(MAX_ENTITY_TYPE_BYTES + 1)));
        assert!(!entity_type_fits(""));
        assert!(!entity_type_fits("a.b"));
    }
}

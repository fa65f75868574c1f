//! Ids as NATS subject tokens and key-value keys: the journal's subject per
//! persistence id and sharding's remembered entities both need any id in
//! a form NATS accepts, and back; and the one limit on an id's length that
//! every place an id is carried (a subject, a key, a file name) can hold.

/// The longest persistence id or entity id, in bytes (UTF-8), that troupe
/// accepts: 255.
///
/// Why this number: an id travels as a NATS subject token (escaped, up to
/// three bytes per byte) inside a protocol line the server caps at 4,096
/// bytes by default (`max_control_line`; a longer one closes the whole
/// connection), as a key-value key, and as part of a file name on local
/// disk (255 bytes on most file systems). 255 bytes escape to at most 765,
/// which leaves room for every prefix and reply subject on the line. An id
/// over it is refused where it enters (a journal call, a region's `tell`)
/// with an error naming the limit, before anything is written or sent.
pub const MAX_ID_BYTES: usize = 255;

/// Whether `id` is one troupe accepts: 1 to [`MAX_ID_BYTES`] bytes.
pub(crate) fn id_fits(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID_BYTES
}

/// The id's bytes outside `A-Z a-z 0-9 - _` as `=XX`: a subject token and
/// a key-value key.
#[cfg_attr(not(feature = "nats"), allow(dead_code))]
pub(crate) fn escape(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("={b:02X}"));
        }
    }
    out
}

/// The id [`escape`] made `escaped` from; `None` if it is not one.
#[cfg_attr(not(feature = "nats"), allow(dead_code))]
pub(crate) fn unescape(escaped: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(escaped.len());
    let mut rest = escaped.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'=' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_go_there_and_back() {
        for id in ["acct-1", "a.b c/d=é", "", "=", "_-"] {
            let e = escape(id);
            assert!(
                e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_=".contains(&b)),
                "{e}"
            );
            assert_eq!(unescape(&e).as_deref(), Some(id));
        }
        assert_eq!(unescape("=Z1"), None);
        assert_eq!(unescape("=4"), None);
    }
}

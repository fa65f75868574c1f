//! The wire format: one frame per NATS message, a hand-written header
//! (version, kind, target or reply id, tag) around a postcard payload.
//!
//! ```text
//! tell:    [VERSION] [KIND_TELL]     varint(incarnation) varint(len) name   varint(len) tag   payload
//! reply:   [VERSION] [KIND_REPLY]    varint(reply id)                     payload
//! noreply: [VERSION] [KIND_NO_REPLY] varint(reply id)
//! batch:   [VERSION] [KIND_BATCH]    (varint(len) frame)*   frames of the other kinds
//! refused: [VERSION] [KIND_REFUSED]  varint(reply id)   reason (UTF-8, the rest)
//! ```
//!
//! A tell names the **incarnation** of the node it is for (the random id a
//! node draws each time it starts): a node delivers it only if that is its
//! own incarnation, so a ref to an actor of a node that has since been
//! restarted never reaches the new process. Incarnation 0 means "whichever
//! node serves the name now" (`Node::select`).
//!
//! A **batch** carries several frames for one subject in one NATS message:
//! the node's writer packs the frames that are already queued for the same
//! subject when it takes one (see `node/tasks.rs`), so a burst costs one
//! NATS message per batch while a lone frame goes out alone and at once.
//! [`frames`] yields the frames of a NATS message either way; a batch
//! inside a batch is refused. No NATS message the writer makes is larger
//! than the node's frame limit: `max_frame_size`, or the server's
//! `max_payload` if that is less.
//!
//! A **refused** frame answers an ask whose answer cannot be carried (too
//! large for the server, or not encodable): the ask fails at once with
//! `AskError::Refused` and the reason, instead of waiting for its timeout.
//!
//! What a batch can cost its receiver is bounded by its size: an entry
//! shorter than the smallest frame ([`MIN_FRAME_LEN`] bytes) is refused
//! with everything after it (one `Malformed`), and after
//! [`MAX_BAD_ENTRIES`] entries refused for their form (truncated, of
//! another version or kind, malformed, a batch inside) the rest of the
//! batch is one more `Malformed`. So a batch of empty or garbage entries
//! costs a few dead letters, not one per byte; the entries read are at
//! most one per `MIN_FRAME_LEN` + 1 bytes, as for well-formed frames.
//!
//! The header is parsed by [`decode_frame`] without trusting a single byte:
//! every length is checked against what is left, names and tags must be
//! UTF-8, and the frame as a whole must not exceed the configured maximum.
//! Anything wrong is a [`DeadLetterReason`], never a panic (the fuzz-style
//! tests in this file and in `tests/hostile.rs` feed it garbage).
//!
//! # Versions and compatibility
//!
//! [`VERSION`] changes when a frame of an existing kind changes its
//! layout: a node refuses every frame of another version (`BadVersion`),
//! so nodes of two versions share nothing. New *kinds* are added within a
//! version instead, and only for news whose loss leaves the old behaviour:
//! a node that does not know a kind refuses that frame alone (`Malformed`,
//! the rest of a batch is still read). `KIND_REFUSED` was added so in
//! version 2: an older asker counts it `Malformed` and its ask times out,
//! as it did before.
//!
//! Besides frames, a receiving node may answer on a message's **reply
//! subject** (see `node/refusal.rs`): the sender puts one on every message
//! it sends to an actor (`troupe.<cluster>.noreply.<node>.<asks>`), the
//! server answers there when nobody is subscribed (no responders), and the
//! receiving node there refuses frames back (a wrong incarnation, a wrong
//! tag, a payload it cannot decode, a message over its `max_frame_size`).
//! Only the sending node reads what comes back on its own reply subject,
//! so those answers have a first byte of their own and no version: a
//! node that does not know one counts it `Malformed`. A node of an older
//! build puts a reply subject on asks only; it gets refusals for those.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::dead_letters::DeadLetterReason;

/// The format version this build writes and reads. Version 2 added the
/// incarnation to tell frames; a version-1 frame is `BadVersion`.
pub const VERSION: u8 = 2;

const KIND_TELL: u8 = 0;
const KIND_REPLY: u8 = 1;
const KIND_NO_REPLY: u8 = 2;
const KIND_BATCH: u8 = 3;
const KIND_REFUSED: u8 = 4;

/// The longest reason a refused frame carries, in bytes (a longer one is
/// cut at a character boundary).
pub const MAX_REASON_BYTES: usize = 1024;

/// The smallest frame of any kind, in bytes: a version and a kind. A
/// batch entry shorter than this ends the batch (see the module docs).
pub const MIN_FRAME_LEN: usize = 2;

/// How many entries of a batch refused for their form are read one by
/// one; the rest of the batch after them is refused as one.
pub const MAX_BAD_ENTRIES: usize = 16;

/// A message type that can cross nodes: troupe's own (feature `serde`),
/// so that a crate defining messages needs troupe alone. `TAG` names the
/// type on the wire; a node refuses a frame whose tag differs from the
/// published actor's as an unknown tag.
pub use troupe::transport::RemoteMessage;

/// A frame, parsed and borrowed from the received bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A message for the published actor `name`, of type `tag`.
    Tell {
        /// The incarnation of the node the sender meant (0: any).
        incarnation: u64,
        /// The published name of the target.
        name: &'a str,
        /// The message type's tag.
        tag: &'a str,
        /// The postcard-encoded message.
        payload: &'a [u8],
    },
    /// The answer to the ask registered under `id` on the receiving node.
    Reply {
        /// The reply id the asking node chose.
        id: u64,
        /// The postcard-encoded answer.
        payload: &'a [u8],
    },
    /// The ask `id` will get no answer (the far actor dropped the request).
    NoReply {
        /// The reply id the asking node chose.
        id: u64,
    },
    /// The answer to ask `id` cannot be carried, for `reason`.
    Refused {
        /// The reply id the asking node chose.
        id: u64,
        /// Why, in the answering node's words.
        reason: &'a str,
    },
}

/// Parses a frame; `max` is the largest frame accepted, in bytes.
pub fn decode_frame(bytes: &[u8], max: usize) -> Result<Frame<'_>, DeadLetterReason> {
    if bytes.len() > max {
        return Err(DeadLetterReason::Oversized);
    }
    let mut r = Reader(bytes);
    let version = r.byte()?;
    if version != VERSION {
        return Err(DeadLetterReason::BadVersion);
    }
    match r.byte()? {
        KIND_TELL => {
            let incarnation = r.varint()?;
            let name = r.str()?;
            let tag = r.str()?;
            Ok(Frame::Tell {
                incarnation,
                name,
                tag,
                payload: r.0,
            })
        }
        KIND_REPLY => {
            let id = r.varint()?;
            Ok(Frame::Reply { id, payload: r.0 })
        }
        KIND_NO_REPLY => {
            let id = r.varint()?;
            if !r.0.is_empty() {
                return Err(DeadLetterReason::Malformed);
            }
            Ok(Frame::NoReply { id })
        }
        KIND_REFUSED => {
            let id = r.varint()?;
            let reason = std::str::from_utf8(r.0).map_err(|_| DeadLetterReason::Malformed)?;
            Ok(Frame::Refused { id, reason })
        }
        _ => Err(DeadLetterReason::Malformed),
    }
}

/// The frames one NATS message holds: the message itself, or each frame
/// of a batch, in order. An entry that is not a well-formed frame is an
/// `Err` with its reason, and the rest of the batch is still read when its
/// length could be.
pub fn frames(bytes: &[u8], max: usize) -> Frames<'_> {
    if bytes.len() > max {
        return Frames::One(Some(Err(DeadLetterReason::Oversized)));
    }
    match bytes {
        [VERSION, KIND_BATCH, rest @ ..] => Frames::Batch {
            rest: Reader(rest),
            bad: 0,
        },
        _ => Frames::One(Some(decode_frame(bytes, max))),
    }
}

/// The iterator of [`frames`].
pub enum Frames<'a> {
    /// A message that is one frame (or an error).
    One(Option<Result<Frame<'a>, DeadLetterReason>>),
    /// The rest of a batch.
    Batch {
        /// What is left to read.
        rest: Reader<'a>,
        /// How many entries were refused for their form so far.
        bad: usize,
    },
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, DeadLetterReason>;

    fn next(&mut self) -> Option<Self::Item> {
        let (r, bad) = match self {
            Frames::One(frame) => return frame.take(),
            Frames::Batch { rest, .. } if rest.0.is_empty() => return None,
            Frames::Batch { rest, bad } => (rest, bad),
        };
        if *bad >= MAX_BAD_ENTRIES {
            // Enough read of a batch no writer of this format made: the
            // rest of it is refused as one.
            r.0 = &[];
            return Some(Err(DeadLetterReason::Malformed));
        }
        let entry = match r.bytes() {
            Ok(entry) if entry.len() < MIN_FRAME_LEN => {
                // No frame is this short: not a batch a node wrote, and
                // nothing after it is read.
                r.0 = &[];
                return Some(Err(DeadLetterReason::Malformed));
            }
            Ok([VERSION, KIND_BATCH, ..]) => Err(DeadLetterReason::Malformed),
            Ok(entry) => decode_frame(entry, usize::MAX),
            Err(reason) => {
                // A length that overruns the batch: nothing after it
                // can be found.
                r.0 = &[];
                return Some(Err(reason));
            }
        };
        if entry.is_err() {
            *bad += 1;
        }
        Some(entry)
    }
}

/// Packs frames into one batch message (see the module docs).
#[derive(Debug)]
pub struct BatchWriter {
    out: Vec<u8>,
    frames: usize,
}

impl Default for BatchWriter {
    fn default() -> Self {
        BatchWriter {
            out: vec![VERSION, KIND_BATCH],
            frames: 0,
        }
    }
}

impl BatchWriter {
    /// An empty batch with room for `bytes` bytes of frames, so that
    /// filling it does not grow (and copy) its buffer.
    ///
    /// ```
    /// use troupe_remote::wire::{frames, BatchWriter, Frame};
    ///
    /// let mut batch = BatchWriter::with_capacity(64);
    /// batch.push(&troupe_remote::wire::encode_no_reply(7));
    /// batch.push(&troupe_remote::wire::encode_no_reply(8));
    /// let bytes = batch.finish();
    /// let ids: Vec<_> = frames(&bytes, 1024)
    ///     .map(|frame| match frame {
    ///         Ok(Frame::NoReply { id }) => id,
    ///         other => panic!("{other:?}"),
    ///     })
    ///     .collect();
    /// assert_eq!(ids, [7, 8]);
    /// ```
    pub fn with_capacity(bytes: usize) -> BatchWriter {
        let mut out = Vec::with_capacity(bytes.max(2));
        out.extend_from_slice(&[VERSION, KIND_BATCH]);
        BatchWriter { out, frames: 0 }
    }

    /// Appends one encoded frame.
    pub fn push(&mut self, frame: &[u8]) {
        put_varint(&mut self.out, frame.len() as u64);
        self.out.extend_from_slice(frame);
        self.frames += 1;
    }

    /// The batch's size in bytes if `frame` were appended.
    pub fn len_with(&self, frame: &[u8]) -> usize {
        self.out.len() + 10 + frame.len()
    }

    /// How many frames it holds.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The batch message.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Encodes a tell frame for `name` on the node incarnation `incarnation`
/// (0: whichever serves `name`) carrying `msg`.
pub fn encode_tell<M: RemoteMessage>(
    incarnation: u64,
    name: &str,
    msg: &M,
) -> Result<Vec<u8>, postcard::Error> {
    encode_tell_as(incarnation, name, M::TAG, msg)
}

/// [`encode_tell`] with the tag given: for a message whose type is erased
/// (sent through a ref that came inside a message).
pub fn encode_tell_as<T: Serialize + ?Sized>(
    incarnation: u64,
    name: &str,
    tag: &str,
    msg: &T,
) -> Result<Vec<u8>, postcard::Error> {
    encode_tell_sized(0, incarnation, name, tag, msg)
}

/// [`encode_tell_as`] into a vector made with room for `capacity` bytes
/// at least (a sender's guess from its last frame).
pub(crate) fn encode_tell_sized<T: Serialize + ?Sized>(
    capacity: usize,
    incarnation: u64,
    name: &str,
    tag: &str,
    msg: &T,
) -> Result<Vec<u8>, postcard::Error> {
    // Room for a small message's payload too, so that encoding it does not
    // grow the vector (a reallocation per message showed in profiles).
    let mut out = Vec::with_capacity(capacity.max(202 + name.len() + tag.len()));
    out.push(VERSION);
    out.push(KIND_TELL);
    put_varint(&mut out, incarnation);
    put_str(&mut out, name);
    put_str(&mut out, tag);
    postcard::to_io(msg, &mut out)?;
    // A guess from a big frame must not keep a small one's memory: the
    // frame waits in the outbound buffer with its whole allocation.
    if out.capacity() > 2 * out.len() + 256 {
        out.shrink_to_fit();
    }
    Ok(out)
}

/// Encodes the answer to ask `id`.
pub fn encode_reply<R: Serialize + ?Sized>(id: u64, value: &R) -> Result<Vec<u8>, postcard::Error> {
    let mut out = vec![VERSION, KIND_REPLY];
    put_varint(&mut out, id);
    postcard::to_io(value, &mut out)?;
    Ok(out)
}

/// Encodes "no answer will come" for ask `id`.
pub fn encode_no_reply(id: u64) -> Vec<u8> {
    let mut out = vec![VERSION, KIND_NO_REPLY];
    put_varint(&mut out, id);
    out
}

/// Encodes "the answer to ask `id` cannot be carried, for `reason`" (cut
/// to [`MAX_REASON_BYTES`]).
///
/// ```
/// use troupe_remote::wire::{decode_frame, encode_refused, Frame};
///
/// let bytes = encode_refused(9, "too big");
/// assert_eq!(decode_frame(&bytes, 64), Ok(Frame::Refused { id: 9, reason: "too big" }));
/// ```
pub fn encode_refused(id: u64, reason: &str) -> Vec<u8> {
    let reason = cut(reason, MAX_REASON_BYTES);
    let mut out = Vec::with_capacity(12 + reason.len());
    out.extend_from_slice(&[VERSION, KIND_REFUSED]);
    put_varint(&mut out, id);
    out.extend_from_slice(reason.as_bytes());
    out
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Decodes a whole payload: trailing bytes are an error too (a frame is
/// exactly one value), and running out of bytes is `Truncated`.
pub fn decode_payload<T: DeserializeOwned>(payload: &[u8]) -> Result<T, DeadLetterReason> {
    decode_payload_explained(payload).map_err(|(reason, _)| reason)
}

/// [`decode_payload`], with what went wrong in words beside the reason
/// (for a log line, or a refusal sent back to the sender).
///
/// ```
/// use troupe_remote::wire::decode_payload_explained;
/// use troupe_remote::DeadLetterReason;
///
/// let (reason, why) = decode_payload_explained::<(u8, u8)>(&[1, 2, 3]).unwrap_err();
/// assert_eq!(reason, DeadLetterReason::Undecodable);
/// assert!(why.contains("1 byte"), "{why}");
/// ```
pub fn decode_payload_explained<T: DeserializeOwned>(
    payload: &[u8],
) -> Result<T, (DeadLetterReason, String)> {
    match postcard::take_from_bytes::<T>(payload) {
        Ok((value, [])) => Ok(value),
        Ok((_, rest)) => Err((
            DeadLetterReason::Undecodable,
            format!("{} byte(s) left over after the message", rest.len()),
        )),
        Err(e @ postcard::Error::DeserializeUnexpectedEnd) => {
            Err((DeadLetterReason::Truncated, e.to_string()))
        }
        Err(e) => Err((DeadLetterReason::Undecodable, e.to_string())),
    }
}

/// [`decode_payload`] through a type-erased decoder (`decode`, given the
/// payload's postcard decoder): for a value whose type the caller does not
/// know (troupe's `transport` knows it). The same outcomes: trailing bytes
/// are `Undecodable`, running out of bytes is `Truncated`.
pub fn decode_payload_with<T>(
    payload: &[u8],
    decode: impl FnOnce(&mut dyn erased_serde::Deserializer<'_>) -> Result<T, erased_serde::Error>,
) -> Result<T, DeadLetterReason> {
    decode_payload_with_explained(payload, decode).map_err(|(reason, _)| reason)
}

/// [`decode_payload_with`], with what went wrong in words beside the
/// reason.
pub fn decode_payload_with_explained<T>(
    payload: &[u8],
    decode: impl FnOnce(&mut dyn erased_serde::Deserializer<'_>) -> Result<T, erased_serde::Error>,
) -> Result<T, (DeadLetterReason, String)> {
    let mut de = postcard::Deserializer::from_bytes(payload);
    let value = decode(&mut <dyn erased_serde::Deserializer>::erase(&mut de)).map_err(|e| {
        // The erased error keeps only postcard's message; running out of
        // bytes is told apart by it.
        let text = e.to_string();
        if text == postcard::Error::DeserializeUnexpectedEnd.to_string() {
            (DeadLetterReason::Truncated, text)
        } else {
            (DeadLetterReason::Undecodable, text)
        }
    })?;
    match de.finalize() {
        Ok([]) => Ok(value),
        Ok(rest) => Err((
            DeadLetterReason::Undecodable,
            format!("{} byte(s) left over after the message", rest.len()),
        )),
        Err(e) => Err((DeadLetterReason::Undecodable, e.to_string())),
    }
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over untrusted bytes.
#[derive(Debug)]
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// A cursor at the start of `bytes`.
    #[cfg_attr(not(feature = "node"), allow(dead_code))]
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader(bytes)
    }

    /// What is left.
    #[cfg_attr(not(feature = "node"), allow(dead_code))]
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.0
    }

    /// A length-prefixed byte string.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], DeadLetterReason> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| DeadLetterReason::Truncated)?;
        if len > self.0.len() {
            return Err(DeadLetterReason::Truncated);
        }
        let (bytes, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(bytes)
    }

    pub(crate) fn byte(&mut self) -> Result<u8, DeadLetterReason> {
        let (&b, rest) = self.0.split_first().ok_or(DeadLetterReason::Truncated)?;
        self.0 = rest;
        Ok(b)
    }

    pub(crate) fn varint(&mut self) -> Result<u64, DeadLetterReason> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            // The tenth byte may only carry the top bit of a u64.
            if shift == 63 && b > 1 {
                return Err(DeadLetterReason::Malformed);
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DeadLetterReason::Malformed)
    }

    pub(crate) fn str(&mut self) -> Result<&'a str, DeadLetterReason> {
        std::str::from_utf8(self.bytes()?).map_err(|_| DeadLetterReason::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Sample {
        n: u32,
        text: String,
    }

    impl RemoteMessage for Sample {
        const TAG: &'static str = "sample.v1";
    }

    fn sample() -> Sample {
        Sample {
            n: 7,
            text: "hello".into(),
        }
    }

    #[test]
    fn a_batch_yields_its_frames_in_order_and_refuses_bad_entries() {
        let one = encode_tell(7, "echo", &sample()).unwrap();
        let two = encode_no_reply(9);
        let mut nested = BatchWriter::default();
        nested.push(&one);
        let nested = nested.finish();
        let mut batch = BatchWriter::default();
        batch.push(&one);
        batch.push(&[VERSION, 42]);
        batch.push(&nested);
        batch.push(&two);
        assert_eq!(batch.frames(), 4);
        let bytes = batch.finish();
        let got: Vec<_> = frames(&bytes, 1 << 20).collect();
        assert_eq!(got.len(), 4);
        assert!(matches!(got[0], Ok(Frame::Tell { name: "echo", .. })));
        assert_eq!(got[1], Err(DeadLetterReason::Malformed));
        assert_eq!(got[2], Err(DeadLetterReason::Malformed));
        assert_eq!(got[3], Ok(Frame::NoReply { id: 9 }));
        // A single frame is one item; a batch over the limit is refused whole.
        assert_eq!(frames(&two, 1024).count(), 1);
        assert_eq!(
            frames(&bytes, 8).collect::<Vec<_>>(),
            vec![Err(DeadLetterReason::Oversized)]
        );
        // Cut anywhere: every entry before the cut decodes, then one error.
        for cut in 2..bytes.len() {
            let got: Vec<_> = frames(&bytes[..cut], 1 << 20).collect();
            assert!(got.iter().filter(|f| f.is_err()).count() <= 3, "{got:?}");
        }
    }

    #[test]
    fn what_a_batch_costs_is_bounded_by_its_size() {
        let good = encode_no_reply(1);
        // Empty or one-byte entries end the batch: the good frame before
        // them is read, then one refusal for the rest.
        for short in [&[][..], &[VERSION][..]] {
            let mut batch = BatchWriter::default();
            batch.push(&good);
            for _ in 0..100_000 {
                batch.push(short);
            }
            batch.push(&good);
            let bytes = batch.finish();
            let got: Vec<_> = frames(&bytes, usize::MAX).collect();
            assert_eq!(
                got,
                vec![
                    Ok(Frame::NoReply { id: 1 }),
                    Err(DeadLetterReason::Malformed)
                ]
            );
        }
        // Entries refused for their form: the first MAX_BAD_ENTRIES one by
        // one, then the rest as one.
        let mut batch = BatchWriter::default();
        for _ in 0..100_000 {
            batch.push(&[VERSION, 200, 1]);
        }
        let bytes = batch.finish();
        let got: Vec<_> = frames(&bytes, usize::MAX).collect();
        assert_eq!(got.len(), MAX_BAD_ENTRIES + 1);
        assert!(got.iter().all(|f| *f == Err(DeadLetterReason::Malformed)));
        // Good frames among fewer bad ones are all read.
        let mut batch = BatchWriter::default();
        for _ in 1..MAX_BAD_ENTRIES {
            batch.push(&[VERSION, 200, 1]);
            batch.push(&good);
        }
        let bytes = batch.finish();
        let read = frames(&bytes, usize::MAX).filter(Result::is_ok).count();
        assert_eq!(read, MAX_BAD_ENTRIES - 1);
    }

    #[test]
    fn tell_round_trips() {
        let bytes = encode_tell(u64::MAX, "echo", &sample()).unwrap();
        let Frame::Tell {
            incarnation,
            name,
            tag,
            payload,
        } = decode_frame(&bytes, 1024).unwrap()
        else {
            panic!("not a tell frame");
        };
        assert_eq!((incarnation, name, tag), (u64::MAX, "echo", "sample.v1"));
        assert_eq!(decode_payload::<Sample>(payload).unwrap(), sample());
    }

    #[test]
    fn replies_round_trip() {
        let bytes = encode_reply(u64::MAX, &"answer").unwrap();
        match decode_frame(&bytes, 1024).unwrap() {
            Frame::Reply { id, payload } => {
                assert_eq!(id, u64::MAX);
                assert_eq!(decode_payload::<String>(payload).unwrap(), "answer");
            }
            other => panic!("{other:?}"),
        }
        let bytes = encode_no_reply(300);
        assert_eq!(decode_frame(&bytes, 1024), Ok(Frame::NoReply { id: 300 }));
    }

    #[test]
    fn refused_frames_round_trip_cut_to_their_limit() {
        let bytes = encode_refused(u64::MAX, "too big for the server");
        assert_eq!(
            decode_frame(&bytes, 1024),
            Ok(Frame::Refused {
                id: u64::MAX,
                reason: "too big for the server"
            })
        );
        // A long reason is cut, never in the middle of a character.
        let long = "é".repeat(MAX_REASON_BYTES);
        let bytes = encode_refused(1, &long);
        let Ok(Frame::Refused { reason, .. }) = decode_frame(&bytes, usize::MAX) else {
            panic!("not a refused frame");
        };
        assert_eq!(reason.len(), MAX_REASON_BYTES);
        assert!(long.starts_with(reason));
        // A reason that is not UTF-8 is malformed.
        let mut bad = encode_refused(1, "x");
        bad.push(0xff);
        assert_eq!(decode_frame(&bad, 64), Err(DeadLetterReason::Malformed));
    }

    #[test]
    fn every_truncation_is_refused_not_panicking() {
        let bytes = encode_tell(1 << 40, "echo", &sample()).unwrap();
        for cut in 0..bytes.len() {
            let result = decode_frame(&bytes[..cut], 1024).and_then(|f| match f {
                Frame::Tell { payload, .. } => decode_payload::<Sample>(payload).map(|_| ()),
                _ => Ok(()),
            });
            assert_eq!(result, Err(DeadLetterReason::Truncated), "cut at {cut}");
        }
    }

    #[test]
    fn hostile_headers_are_reasons() {
        assert_eq!(decode_frame(&[], 16), Err(DeadLetterReason::Truncated));
        assert_eq!(decode_frame(&[9, 0], 16), Err(DeadLetterReason::BadVersion));
        assert_eq!(
            decode_frame(&[VERSION, 77], 16),
            Err(DeadLetterReason::Malformed)
        );
        assert_eq!(decode_frame(&[0; 17], 16), Err(DeadLetterReason::Oversized));
        // A length far beyond the frame.
        let mut huge = vec![VERSION, KIND_TELL, 0];
        put_varint(&mut huge, u64::MAX);
        assert_eq!(decode_frame(&huge, 64), Err(DeadLetterReason::Truncated));
        // An endless varint.
        let endless = [
            VERSION, KIND_REPLY, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert_eq!(decode_frame(&endless, 64), Err(DeadLetterReason::Malformed));
        // A name that is not UTF-8.
        assert_eq!(
            decode_frame(&[VERSION, KIND_TELL, 0, 1, 0xff, 0], 64),
            Err(DeadLetterReason::Malformed)
        );
    }

    #[test]
    fn trailing_bytes_are_undecodable() {
        let mut payload = postcard::to_stdvec(&sample()).unwrap();
        payload.push(0);
        assert_eq!(
            decode_payload::<Sample>(&payload),
            Err(DeadLetterReason::Undecodable)
        );
    }
}

//! What the two processes of the remote experiment say to each other, for
//! each transport, and the receiver's check of the one-way stream.
//!
//! troupe: one published echo actor taking [`BenchMsg`]. Raw NATS: one
//! subject, [`SUBJECT`], whose messages are `[kind] [seq: u64 LE] [payload]`
//! ([`raw`]); answers go to the message's reply subject.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use troupe::ReplyTo;
use troupe_remote::RemoteMessage;

/// The name the echo actor is published under.
pub const ECHO: &str = "bench-echo";

/// The sharded echo's entity type (its entity is [`ECHO`]).
pub const SHARDED: &str = "bench-echo";

/// The raw-NATS subject the echo process serves.
pub const SUBJECT: &str = "bench.echo";

/// What the echo actor takes. Payloads are `bytes::Bytes`, written by
/// postcard as one byte string and shared, not copied, between the
/// messages that carry the same one (what a user would do for any byte
/// payload sent many times).
#[derive(Debug, Serialize, Deserialize)]
pub enum BenchMsg {
    /// Answer with `seq` (a round trip).
    Ping(u64, Bytes, ReplyTo<u64>),
    /// One message of the one-way stream.
    Data(u64, Bytes),
    /// Answer with what the stream delivered so far (flow control and the
    /// final check).
    Mark(ReplyTo<Received>),
    /// Start a new stream.
    Reset,
    /// Answer with the echo node's batch statistics so far: frames, then
    /// the messages of each bucket (`troupe_remote::BatchStats`).
    Batches(ReplyTo<(u64, Vec<u64>)>),
}

impl RemoteMessage for BenchMsg {
    const TAG: &'static str = "troupe.bench.remote.v1";
}

/// What the receiver of a stream has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Received {
    /// Messages received.
    pub count: u64,
    /// Messages whose sequence number was not the next one expected (a
    /// loss, a duplicate or a reordering shows here).
    pub out_of_order: u64,
}

/// The receiver's check: every message exactly once and in order means
/// each carries the next sequence number, starting at 0.
#[derive(Debug, Default)]
pub struct StreamCheck {
    next: u64,
    seen: Received,
}

impl StreamCheck {
    /// Records the arrival of message `seq`.
    pub fn arrived(&mut self, seq: u64) {
        if seq != self.next {
            self.seen.out_of_order += 1;
        }
        self.next = seq.wrapping_add(1);
        self.seen.count += 1;
    }

    /// What was seen so far.
    pub fn seen(&self) -> Received {
        self.seen
    }

    /// Forgets everything (a new stream).
    pub fn reset(&mut self) {
        *self = StreamCheck::default();
    }

    /// Why a stream of `sent` messages did not arrive whole, if it did not.
    pub fn verdict(seen: Received, sent: u64) -> Option<String> {
        (seen.count != sent || seen.out_of_order != 0).then(|| {
            format!(
                "validation failed: {} of {sent} stream messages arrived, {} out of order",
                seen.count, seen.out_of_order
            )
        })
    }
}

/// The raw-NATS message layout.
pub mod raw {
    /// A round trip: the answer is the 8-byte sequence number.
    pub const PING: u8 = b'P';
    /// One stream message.
    pub const DATA: u8 = b'D';
    /// Flow control / final check: the answer is `count ++ out_of_order`.
    pub const MARK: u8 = b'M';
    /// Start a new stream (no answer).
    pub const RESET: u8 = b'R';

    /// `[kind] [seq] [payload]`.
    pub fn encode(kind: u8, seq: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + payload.len());
        out.push(kind);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// `(kind, seq)` of a message, if it has them.
    pub fn decode(bytes: &[u8]) -> Option<(u8, u64)> {
        let (&kind, rest) = bytes.split_first()?;
        let seq = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
        Some((kind, seq))
    }

    /// The 8-byte little-endian number of an answer.
    pub fn number(bytes: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_check_sees_losses_duplicates_and_reorderings() {
        let mut check = StreamCheck::default();
        (0..5).for_each(|s| check.arrived(s));
        assert_eq!(StreamCheck::verdict(check.seen(), 5), None);
        let mut lost = StreamCheck::default();
        [0, 1, 3, 4].into_iter().for_each(|s| lost.arrived(s));
        assert!(StreamCheck::verdict(lost.seen(), 5).is_some());
        let mut twice = StreamCheck::default();
        [0, 1, 1, 2].into_iter().for_each(|s| twice.arrived(s));
        assert_eq!(twice.seen().out_of_order, 1);
        let mut swapped = StreamCheck::default();
        [0, 2, 1, 3, 4].into_iter().for_each(|s| swapped.arrived(s));
        assert_eq!(swapped.seen().count, 5);
        assert!(StreamCheck::verdict(swapped.seen(), 5).is_some());
        swapped.reset();
        assert_eq!(swapped.seen(), Received::default());
    }

    #[test]
    fn raw_messages_round_trip() {
        let bytes = raw::encode(raw::DATA, 42, &[7; 100]);
        assert_eq!(bytes.len(), 109);
        assert_eq!(raw::decode(&bytes), Some((raw::DATA, 42)));
        assert_eq!(raw::decode(&bytes[..5]), None);
        assert_eq!(raw::number(&7u64.to_le_bytes(), 0), Some(7));
    }
}

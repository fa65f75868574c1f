//! The node's dead letters: every frame it refused and every message it
//! could not send, counted by reason and handed to listeners. (A decoded
//! message that reaches a stopped local actor is the actor system's own
//! dead letter, as for any local tell.)

use std::fmt;

/// Why a frame or a message went nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeadLetterReason {
    /// The frame ended before its header or payload did.
    Truncated,
    /// The frame is larger than the configured `max_frame_size` (received),
    /// or the encoded message is (sent: it was not sent). Counted by the
    /// sending node too when the receiving node refuses a message over
    /// its own `max_frame_size` back to it.
    Oversized,
    /// The frame's format version is not one this build reads.
    BadVersion,
    /// The header is not well formed (unknown kind, bad varint, non-UTF-8).
    Malformed,
    /// The frame's tag is not the receiving actor's message tag (a ref of
    /// another message type: a `select` of the wrong type, a proxy region
    /// of another type than the hosting ones). Counted by the receiving
    /// node, and by the sending node when the refusal comes back.
    UnknownTag,
    /// The payload does not decode as the receiving actor's message type
    /// (or has bytes left over: version skew, a variant the receiver's
    /// build lacks), or an answer does not decode. Counted by the
    /// receiving node, and by the sending node when the refusal comes
    /// back.
    Undecodable,
    /// No actor is published here under the frame's target name.
    UnknownName,
    /// An answer for an ask that is not pending here (it timed out, or the
    /// id was never handed out).
    UnknownReply,
    /// The message could not be encoded (a serializer error, or a
    /// `ReplyTo` serialized outside a remote send).
    EncodeFailed,
    /// The outbound buffer was full while connected to NATS.
    OutboundFull,
    /// The encoded message (or answer) is within `max_frame_size` but
    /// larger than the NATS server's `max_payload` (learned from the
    /// server at connect and at every reconnect): it was not sent, since
    /// the server would close the connection over it.
    OverMaxPayload,
    /// The server found nobody subscribed to the message's subject (no
    /// node serves the name now, or the actor is gone), and said so on
    /// the message's reply subject: what the message held is lost.
    /// Counted once per NATS message at the sending node (a message may
    /// hold several frames): a lower bound.
    NoResponders,
    /// The outbound buffer was full while not connected to NATS.
    Unreachable,
    /// The node has shut down.
    NodeStopped,
    /// A tell frame named another incarnation of this node: it was sent
    /// through a ref to a process that ran under this node's name before
    /// (this one was restarted since), and is not delivered.
    WrongIncarnation,
    /// A send through a ref whose actor is known to have terminated (a
    /// `Terminated` from its node, or its node said it is not there).
    Terminated,
    /// A send through a ref whose node incarnation is known to be down (it
    /// left, fell silent, or was restarted).
    NodeDown,
    /// A received message the NATS client dropped because a subscription's
    /// queue was full (a slow consumer). Counted from the client's events,
    /// which it may itself drop when they come too fast: a lower bound.
    SlowConsumer,
    /// A membership or liveness claim that the node it is about did not
    /// confirm when this node asked it directly: a leave, a heartbeat of a
    /// new node or of a new incarnation (a restart), or a `Terminated` of
    /// an actor its node still has. Ignored: it changes nothing here. A
    /// client that only publishes cannot make one stick (see
    /// docs/operations.md, "Who may talk to a node").
    Unconfirmed,
    /// A control message whose subject names another sending node than
    /// the node it speaks for (a `Terminated` of another node's actor, a
    /// watch for another node). Refused: a node speaks only for itself.
    WrongSender,
    /// Dropped because one of the node's bounded tables was full: a new
    /// node heard while `max_members` are up, a membership or liveness
    /// claim while as many are being confirmed as the node checks at once.
    OverCapacity,
    /// A message for a published actor that already had as many messages
    /// waiting as `RemoteConfig::inbound_limit` allows (messages, or bytes
    /// from other nodes): not delivered. Counted by the receiving node, and
    /// by the sending node when the refusal comes back (an ask in it then
    /// fails at once with `AskError::Refused`).
    MailboxFull,
}

impl fmt::Display for DeadLetterReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One refused frame or unsent message (the bytes are dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Why.
    pub reason: DeadLetterReason,
    /// The NATS subject it came in on or was meant for.
    pub subject: String,
}

#[cfg(feature = "node")]
pub(crate) use office::DeadLetters;

/// The node's counters and listeners.
#[cfg(feature = "node")]
mod office {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, RwLock};

    use super::{DeadLetter, DeadLetterReason};

    const REASONS: [DeadLetterReason; 22] = [
        DeadLetterReason::Truncated,
        DeadLetterReason::Oversized,
        DeadLetterReason::BadVersion,
        DeadLetterReason::Malformed,
        DeadLetterReason::UnknownTag,
        DeadLetterReason::Undecodable,
        DeadLetterReason::UnknownName,
        DeadLetterReason::UnknownReply,
        DeadLetterReason::EncodeFailed,
        DeadLetterReason::OutboundFull,
        DeadLetterReason::OverMaxPayload,
        DeadLetterReason::NoResponders,
        DeadLetterReason::Unreachable,
        DeadLetterReason::NodeStopped,
        DeadLetterReason::WrongIncarnation,
        DeadLetterReason::Terminated,
        DeadLetterReason::NodeDown,
        DeadLetterReason::SlowConsumer,
        DeadLetterReason::Unconfirmed,
        DeadLetterReason::WrongSender,
        DeadLetterReason::OverCapacity,
        DeadLetterReason::MailboxFull,
    ];

    type Listener = Arc<dyn Fn(&DeadLetter) + Send + Sync>;

    /// Counters by reason, plus listeners (tests use one as a probe).
    #[derive(Default)]
    pub(crate) struct DeadLetters {
        counts: [AtomicU64; REASONS.len()],
        listeners: RwLock<Vec<Listener>>,
        /// Whether any listener was added: a dead letter without
        /// listeners is an atomic add (a flood of junk is counted at that
        /// cost).
        listened: AtomicBool,
    }

    impl DeadLetters {
        pub(crate) fn record(&self, reason: DeadLetterReason, subject: &str) {
            let index = REASONS.iter().position(|r| *r == reason).unwrap_or(0);
            let total = self.counts[index].fetch_add(1, Ordering::Relaxed) + 1;
            tracing::debug!(?reason, subject, total, "remote dead letter");
            if !self.listened.load(Ordering::Acquire) {
                return;
            }
            let listeners = self
                .listeners
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if !listeners.is_empty() {
                let letter = DeadLetter {
                    reason,
                    subject: subject.to_string(),
                };
                for listener in listeners {
                    listener(&letter);
                }
            }
        }

        pub(crate) fn count(&self, reason: DeadLetterReason) -> u64 {
            let index = REASONS.iter().position(|r| *r == reason).unwrap_or(0);
            self.counts[index].load(Ordering::Relaxed)
        }

        pub(crate) fn total(&self) -> u64 {
            self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
        }

        pub(crate) fn subscribe(&self, listener: Listener) {
            self.listeners
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .push(listener);
            self.listened.store(true, Ordering::Release);
        }
    }
}

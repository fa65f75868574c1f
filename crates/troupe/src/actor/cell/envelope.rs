//! What a mailbox carries for a user message. Without the `tracing-spans`
//! feature it is the message itself (the helpers below are the identity
//! and compile away); with it, the message travels with the span that was
//! current where it was sent, and the handler runs in a span whose parent
//! is that one, so a request can be followed through `tell` and `ask`
//! across actors.

#[cfg(not(feature = "tracing-spans"))]
mod imp {
    /// A queued user message.
    pub(crate) type Envelope<M> = M;

    /// Unwraps a message that will not be handled (handed back, dead letter).
    #[inline(always)]
    pub(crate) fn open<M>(envelope: Envelope<M>) -> M {
        envelope
    }
}

#[cfg(feature = "tracing-spans")]
mod imp {
    /// A queued user message and the span it was sent from.
    pub(crate) struct Envelope<M> {
        pub(crate) msg: M,
        pub(crate) span: tracing::Span,
    }

    /// Wraps a message with the sender's current span. Until a subscriber
    /// is installed there is none to look up (one atomic load).
    #[inline]
    pub(crate) fn seal<M>(msg: M) -> Envelope<M> {
        let span = if tracing::dispatcher::has_been_set() {
            tracing::Span::current()
        } else {
            tracing::Span::none()
        };
        Envelope { msg, span }
    }

    /// Unwraps a message that will not be handled (handed back, dead letter).
    #[inline]
    pub(crate) fn open<M>(envelope: Envelope<M>) -> M {
        envelope.msg
    }
}

#[cfg(feature = "tracing-spans")]
pub(crate) use imp::seal;
pub(crate) use imp::{open, Envelope};

//! What a transport's codec sees of a reply handle: an [`ExportedReply`]
//! to keep when one is sent (decode the answer when it comes back, or fail
//! the ask), an [`ImportedReply`] to return when one is received (where the
//! answer goes). The reply type is erased: the codec is one object for
//! every message type.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::{ActorId, ActorSystem, AskError, ReplyTo};

/// A reply handle that was sent, held by the sending side's transport
/// until the answer comes back. Dropping it fails the ask with `NoReply`
/// (unless another handle of the same ask answers).
pub struct ExportedReply(Box<dyn ErasedHandle>);

/// The reply type, known where the handle was serialized, erased.
trait ErasedHandle: Send {
    fn decode(
        self: Box<Self>,
        answer: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<DecodedReply, erased_serde::Error>;
    fn unreachable(self: Box<Self>) -> bool;
    fn refuse(self: Box<Self>, reason: String) -> bool;
}

struct Handle<R>(ReplyTo<R>);

impl<R: DeserializeOwned + Send + 'static> ErasedHandle for Handle<R> {
    fn decode(
        self: Box<Self>,
        answer: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<DecodedReply, erased_serde::Error> {
        let value: R = erased_serde::deserialize(answer)?;
        let handle = self.0;
        Ok(DecodedReply(Box::new(move || handle.reply(value))))
    }

    fn unreachable(self: Box<Self>) -> bool {
        self.0.unreachable()
    }

    fn refuse(self: Box<Self>, reason: String) -> bool {
        self.0.refuse(reason)
    }
}

impl ExportedReply {
    /// The handle a `ReplyTo<R>` being serialized hands its codec.
    pub(super) fn of<R: DeserializeOwned + Send + 'static>(reply: ReplyTo<R>) -> Self {
        ExportedReply(Box::new(Handle(reply)))
    }

    /// Decodes the answer that came back. An answer that does not decode
    /// fails the ask with `NoReply` (the handle is dropped).
    pub fn decode(
        self,
        answer: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<DecodedReply, erased_serde::Error> {
        self.0.decode(answer)
    }

    /// Fails the ask with [`AskError::Unreachable`] (see
    /// [`ReplyTo::unreachable`]).
    pub fn unreachable(self) -> bool {
        self.0.unreachable()
    }

    /// Fails the ask with [`AskError::Refused`] and `reason` (see
    /// [`ReplyTo::refuse`]): for a sender that will not deliver the
    /// message it found this handle in.
    pub fn refuse(self, reason: impl Into<String>) -> bool {
        self.0.refuse(reason.into())
    }
}

/// A decoded answer, not yet given to the asker: a transport may still
/// check the rest of its frame first. Dropping it fails the ask with
/// `NoReply`.
pub struct DecodedReply(Box<dyn FnOnce() -> bool + Send>);

impl DecodedReply {
    /// Answers the ask (see [`ReplyTo::reply`]).
    pub fn reply(self) -> bool {
        (self.0)()
    }
}

/// Where the answer to a received reply handle goes: what a codec's
/// [`import_reply`](super::Codec::import_reply) returns.
pub struct ImportedReply {
    /// The system of the actor that gets the request.
    pub system: ActorSystem,
    /// That actor (named in the local handle's errors).
    pub target: ActorId,
    /// How long the local handle waits for the actor's answer.
    pub timeout: Duration,
    /// Called once, on the thread that answers, with the actor's answer
    /// or why there is none (it dropped the handle: `NoReply`; `timeout`
    /// passed: `Timeout`).
    pub answer: AnswerFn,
}

/// Where an [`ImportedReply`]'s answer goes: the answering actor's value,
/// type-erased, or why there is none.
pub type AnswerFn = Box<dyn FnOnce(Result<&dyn erased_serde::Serialize, AskError>) + Send>;

//! Reply handles on the wire (feature `serde`): [`ReplyTo`] implements
//! `Serialize` and `Deserialize`, so a crate that defines the messages of
//! actors on several processes derives both with
//! `troupe = { features = ["serde"] }` alone, without depending on any
//! transport:
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use troupe::ReplyTo;
//!
//! #[derive(Serialize, Deserialize)]
//! pub enum Greet {
//!     Hello(String, ReplyTo<String>),
//! }
//! ```
//!
//! What a handle becomes on the wire is the transport's business (for
//! `troupe-remote`: its node's reply subject and an id under which the
//! handle waits there). While a transport encodes or decodes one message
//! it installs a [`Codec`] on that thread with [`with_codec`], and the
//! impls hand the handle to it. Outside such a scope they fail with a
//! serde error: a reply handle written to a file could never be answered.
//!
//! The codec sees the handle's reply type only through type-erased values
//! (`erased_serde`): the impl here knows `R`, the transport does not, and
//! a codec is one object for every message type. Sending a handle gives
//! the codec an [`ExportedReply`] (decode the answer when it comes back,
//! or fail the ask); receiving one asks the codec for an [`ImportedReply`]
//! (where the answer goes), and this module makes the local handle the
//! receiving actor answers.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{ActorId, ActorSystem, AskError, ReplyTo};

/// The type-erased serde traits a [`Codec`] works with, re-exported so
/// that a transport uses the same version.
pub use erased_serde;

/// What a transport installs for one encode or decode (see the module
/// docs). Each method has a default that refuses, for a codec that only
/// encodes or only decodes.
pub trait Codec {
    /// A reply handle is being sent: keep `reply` until the answer (or
    /// word that none will come) arrives, and return what goes on the wire
    /// in the handle's place.
    fn export_reply(
        &self,
        reply: ExportedReply,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        drop(reply);
        Err("this transport scope does not send reply handles".into())
    }

    /// A reply handle is being received: read what
    /// [`export_reply`](Codec::export_reply) wrote on the sending side and
    /// say where the answer goes.
    fn import_reply(
        &self,
        wire: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<ImportedReply, erased_serde::Error> {
        let _ = wire;
        Err(serde::de::Error::custom(
            "this transport scope does not receive reply handles",
        ))
    }
}

thread_local! {
    /// The codec of the encode or decode running on this thread. Serde
    /// calls the impls below with no way to pass it, hence a thread-local.
    static CODEC: RefCell<Option<Rc<dyn Codec>>> = const { RefCell::new(None) };
}

/// Runs `f` (one encode or decode of a message) with `codec` installed for
/// the `ReplyTo` fields it meets; the previous codec, if any, is back
/// afterwards (also if `f` panics).
pub fn with_codec<T>(codec: Rc<dyn Codec>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Rc<dyn Codec>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CODEC.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(CODEC.with(|c| c.replace(Some(codec))));
    f()
}

/// The installed codec, cloned so that it is not borrowed while it runs
/// (it may encode or decode nested values itself).
fn current() -> Option<Rc<dyn Codec>> {
    CODEC.with(|c| c.borrow().clone())
}

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
}

impl ExportedReply {
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
/// [`import_reply`](Codec::import_reply) returns.
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
    pub answer: Box<dyn FnOnce(Result<&dyn erased_serde::Serialize, AskError>) + Send>,
}

/// Hands the handle to the installed codec (see the module docs).
impl<R: DeserializeOwned + Send + 'static> Serialize for ReplyTo<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(codec) = current() else {
            return Err(S::Error::custom(
                "a ReplyTo can only be serialized by a transport's send (troupe::transport)",
            ));
        };
        // The message (with this handle) is dropped after the send; the
        // shared handle answers the ask when the answer comes back.
        let exported = ExportedReply(Box::new(Handle(self.share())));
        let wire = codec.export_reply(exported).map_err(S::Error::custom)?;
        erased_serde::serialize(&*wire, serializer)
    }
}

/// Asks the installed codec where the answer goes (see the module docs).
impl<'de, R: Serialize + Send + 'static> Deserialize<'de> for ReplyTo<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(codec) = current() else {
            return Err(D::Error::custom(
                "a ReplyTo can only be deserialized by a transport's receive (troupe::transport)",
            ));
        };
        let mut wire = <dyn erased_serde::Deserializer>::erase(deserializer);
        let imported = codec.import_reply(&mut wire).map_err(D::Error::custom)?;
        let (reply, ask) = ReplyTo::<R>::pair(&imported.system, imported.target, imported.timeout);
        let answer = imported.answer;
        // Forwarded from the thread that answers (the actor's), without a
        // task per request.
        ask.on_answer(move |result| match result {
            Ok(value) => answer(Ok(&value)),
            Err(e) => answer(Err(e)),
        });
        Ok(reply)
    }
}

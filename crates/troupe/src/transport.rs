//! Reply handles and actor refs on the wire (feature `serde`): [`ReplyTo`]
//! and [`ActorRef`] implement `Serialize` and `Deserialize`, so a crate
//! that defines the messages of actors on several processes derives both
//! with `troupe = { features = ["serde"] }` alone, without depending on any
//! transport:
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use troupe::transport::RemoteMessage;
//! use troupe::{ActorRef, ReplyTo};
//!
//! #[derive(Serialize, Deserialize)]
//! pub enum Greet {
//!     Hello(String, ReplyTo<String>),
//!     // A ref inside a message: the receiver can tell it, ask it, watch it.
//!     Subscribe(ActorRef<Greeting>),
//! }
//! impl RemoteMessage for Greet {
//!     const TAG: &'static str = "greet.v1";
//! }
//!
//! #[derive(Serialize, Deserialize)]
//! pub struct Greeting(pub String);
//! impl RemoteMessage for Greeting {
//!     const TAG: &'static str = "greeting.v1";
//! }
//! ```
//!
//! What a handle or a ref becomes on the wire is the transport's business
//! (for `troupe-remote`: a reply subject and an id, a node and a token).
//! Outside a transport's encode or decode, serializing either fails with a
//! serde error: neither means anything in a file.
//!
//! How a transport takes part is hidden from these docs and is not a
//! stable API (it changes with `troupe-remote`, the one transport): while it
//! encodes or decodes one message it installs a `Codec` on that thread,
//! and the impls here hand each handle or ref to it, type-erased, since
//! the impls know `R` and `M` and the transport does not. Its files:
//! `transport/codec.rs` (the `Codec` trait and the thread-local it is
//! installed in), `transport/reply.rs` (what a codec sees of a reply
//! handle, and `ReplyTo`'s impls), `transport/refs.rs` (what it sees of a
//! ref, and `ActorRef`'s impls: a received ref that points elsewhere is an
//! [`ExternalTarget`](crate::ExternalTarget) of erased messages, put
//! behind an ordinary ref), `transport/stop_watch.rs` (`when_stopped`).

mod codec;
mod refs;
mod reply;
mod stop_watch;

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{ActorRef, ReplyTo};
use codec::current;

// The plumbing a transport uses (see the module docs): public for
// `troupe-remote`, hidden from the docs and not a stable API.
#[doc(hidden)]
pub use codec::{with_codec, Codec};
#[doc(hidden)]
pub use refs::{DecodedMessage, ExportedRef, ImportedRef, LocalEndpoint, Outgoing};
#[doc(hidden)]
pub use reply::{AnswerFn, DecodedReply, ExportedReply, ImportedReply};
#[doc(hidden)]
pub use stop_watch::when_stopped;

/// A message type that can cross processes.
///
/// `TAG` names the type on the wire: choose it once and keep it when the
/// Rust type is renamed or moved (a transport refuses a message whose tag
/// differs from the receiving actor's, and a ref whose tag differs from
/// the field's type). Change it when the serialized shape changes
/// incompatibly, e.g. `"shop.order.v2"`. A `ReplyTo<R>` or an
/// `ActorRef<M>` field travels as it is.
pub trait RemoteMessage: Serialize + DeserializeOwned + Send + 'static {
    /// The stable wire name of this type.
    const TAG: &'static str;
}

/// Hands the handle to the installed codec .
impl<R: DeserializeOwned + Send + 'static> Serialize for ReplyTo<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(codec) = current() else {
            return Err(S::Error::custom(
                "a ReplyTo can only be serialized by a transport's send (troupe::transport)",
            ));
        };
        // The message (with this handle) is dropped after the send; the
        // shared handle answers the ask when the answer comes back.
        let exported = ExportedReply::of(self.share());
        let wire = codec.export_reply(exported).map_err(S::Error::custom)?;
        erased_serde::serialize(&*wire, serializer)
    }
}

/// Asks the installed codec where the answer goes .
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

/// Hands the ref to the installed codec .
impl<M: RemoteMessage> Serialize for ActorRef<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(codec) = current() else {
            return Err(S::Error::custom(
                "an ActorRef can only be serialized by a transport's send (troupe::transport)",
            ));
        };
        let wire = codec
            .export_ref(ExportedRef::of(self))
            .map_err(S::Error::custom)?;
        erased_serde::serialize(&*wire, serializer)
    }
}

/// Asks the installed codec what the ref reaches .
impl<'de, M: RemoteMessage> Deserialize<'de> for ActorRef<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(codec) = current() else {
            return Err(D::Error::custom(
                "an ActorRef can only be deserialized by a transport's receive (troupe::transport)",
            ));
        };
        let mut wire = <dyn erased_serde::Deserializer>::erase(deserializer);
        match codec
            .import_ref(&mut wire, M::TAG)
            .map_err(D::Error::custom)?
        {
            ImportedRef::Local(actor) => match actor.downcast::<ActorRef<M>>() {
                Ok(actor) => Ok(*actor),
                Err(_) => Err(D::Error::custom(format!(
                    "a local ref that does not take {}",
                    M::TAG
                ))),
            },
            ImportedRef::Remote { system, target } => Ok(refs::remote_ref(&system, target)),
        }
    }
}

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
//! While a transport encodes or decodes one message it installs a
//! [`Codec`] on that thread with [`with_codec`], and the impls hand the
//! handle or the ref to it. Outside such a scope they fail with a serde
//! error: neither means anything in a file.
//!
//! The codec sees the reply type and the ref's message type only through
//! type-erased values (`erased_serde`): the impls here know `R` and `M`,
//! the transport does not, and a codec is one object for every message
//! type. Sending a handle gives the codec an [`ExportedReply`] (decode the
//! answer when it comes back, or fail the ask); receiving one asks it for
//! an [`ImportedReply`] (where the answer goes), and this module makes the
//! local handle the receiving actor answers. Sending a ref gives the codec
//! an [`ExportedRef`] (the external target it may recognise, or a
//! [`LocalEndpoint`] that decodes and delivers messages to a local actor);
//! receiving one asks it for an [`ImportedRef`] (a local ref back home, or
//! a [`RemoteEndpoint`] that this module puts behind an ordinary ref).

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{
    Actor, ActorId, ActorRef, ActorSystem, AskError, Context, ExternalTarget, Props, ReplyTo,
    Signal, Watcher,
};

/// The type-erased serde traits a [`Codec`] works with, re-exported so
/// that a transport uses the same version.
pub use erased_serde;

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

    /// An actor ref is being sent: return what goes on the wire in its
    /// place (see [`ExportedRef`]).
    fn export_ref(
        &self,
        actor: ExportedRef<'_>,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        let _ = actor;
        Err("this transport scope does not send actor refs".into())
    }

    /// An actor ref of message type `tag` is being received: read what
    /// [`export_ref`](Codec::export_ref) wrote and say what it reaches.
    fn import_ref(
        &self,
        wire: &mut dyn erased_serde::Deserializer<'_>,
        tag: &'static str,
    ) -> Result<ImportedRef, erased_serde::Error> {
        let _ = (wire, tag);
        Err(serde::de::Error::custom(
            "this transport scope does not receive actor refs",
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
    pub answer: AnswerFn,
}

/// Where an [`ImportedReply`]'s answer goes: the answering actor's value,
/// type-erased, or why there is none.
pub type AnswerFn = Box<dyn FnOnce(Result<&dyn erased_serde::Serialize, AskError>) + Send>;

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

/// An actor ref being sent, as a codec sees it.
pub struct ExportedRef<'a>(&'a dyn ErasedRef);

/// The ref's message type, known where the ref was serialized, erased.
trait ErasedRef {
    fn id(&self) -> ActorId;
    fn tag(&self) -> &'static str;
    fn external(&self) -> Option<&dyn Any>;
    fn is_external(&self) -> bool;
    fn local(&self) -> LocalEndpoint;
}

impl<M: RemoteMessage> ErasedRef for ActorRef<M> {
    fn id(&self) -> ActorId {
        ActorRef::id(self)
    }
    fn tag(&self) -> &'static str {
        M::TAG
    }
    fn external(&self) -> Option<&dyn Any> {
        self.cell.external()
    }
    fn is_external(&self) -> bool {
        ActorRef::is_external(self)
    }
    fn local(&self) -> LocalEndpoint {
        LocalEndpoint(Arc::new(self.clone()))
    }
}

impl ExportedRef<'_> {
    /// The ref's id in this system.
    pub fn id(&self) -> ActorId {
        self.0.id()
    }

    /// Its message type's [`RemoteMessage::TAG`].
    pub fn tag(&self) -> &'static str {
        self.0.tag()
    }

    /// For an external ref, what its target's [`ExternalTarget::as_any`]
    /// returns (a transport recognises its own refs by it); `None` for a
    /// local ref.
    pub fn external(&self) -> Option<&dyn Any> {
        self.0.external()
    }

    /// Whether the ref is external (another transport's, if
    /// [`external`](Self::external) does not recognise it).
    pub fn is_external(&self) -> bool {
        self.0.is_external()
    }

    /// For a local ref, what delivers messages to its actor: a transport
    /// keeps it to serve the ref from elsewhere.
    pub fn local(&self) -> LocalEndpoint {
        self.0.local()
    }
}

/// A local actor that other processes can reach, with its message type
/// erased: a transport decodes messages for it and delivers them. Cloning
/// it clones a handle to the same actor.
#[derive(Clone)]
pub struct LocalEndpoint(Arc<dyn ErasedLocal>);

trait ErasedLocal: Send + Sync {
    fn id(&self) -> ActorId;
    fn tag(&self) -> &'static str;
    fn decode(
        &self,
        input: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<DecodedMessage, erased_serde::Error>;
    fn when_stopped(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool;
    fn clone_ref(&self) -> Box<dyn Any + Send>;
}

impl<M: RemoteMessage> ErasedLocal for ActorRef<M> {
    fn id(&self) -> ActorId {
        ActorRef::id(self)
    }
    fn tag(&self) -> &'static str {
        M::TAG
    }
    fn decode(
        &self,
        input: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<DecodedMessage, erased_serde::Error> {
        let msg: M = erased_serde::deserialize(input)?;
        let actor = self.clone();
        Ok(DecodedMessage(Box::new(move || actor.tell(msg))))
    }
    fn when_stopped(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool {
        when_stopped(system, self, gone)
    }
    fn clone_ref(&self) -> Box<dyn Any + Send> {
        Box::new(self.clone())
    }
}

impl LocalEndpoint {
    /// The actor's id.
    pub fn id(&self) -> ActorId {
        self.0.id()
    }

    /// Its message type's [`RemoteMessage::TAG`].
    pub fn tag(&self) -> &'static str {
        self.0.tag()
    }

    /// Decodes one message for the actor (with the codec of the decode
    /// installed, for the handles and refs inside it); it is told when the
    /// result is, so a transport can check the rest of its frame first.
    pub fn decode(
        &self,
        input: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<DecodedMessage, erased_serde::Error> {
        self.0.decode(input)
    }

    /// Calls `gone` once the actor has stopped (see [`when_stopped`]).
    pub fn when_stopped(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool {
        self.0.when_stopped(system, gone)
    }

    /// The actor's ref (an `ActorRef<M>`, boxed): what
    /// [`ImportedRef::Local`] gives back when the ref comes home.
    pub fn actor_ref(&self) -> Box<dyn Any + Send> {
        self.0.clone_ref()
    }
}

/// A decoded message, not yet told to its actor. Dropping it drops the
/// message.
pub struct DecodedMessage(Box<dyn FnOnce() + Send>);

impl DecodedMessage {
    /// Tells the message to its actor.
    pub fn tell(self) {
        (self.0)()
    }
}

/// What a received ref reaches: what a codec's
/// [`import_ref`](Codec::import_ref) returns.
pub enum ImportedRef {
    /// A local actor's ref, back home: [`LocalEndpoint::actor_ref`].
    Local(Box<dyn Any + Send>),
    /// An actor elsewhere, reached through `endpoint`; the ref is made in
    /// `system`.
    Remote {
        /// The system the ref belongs to.
        system: ActorSystem,
        /// Where its messages go.
        endpoint: Arc<dyn RemoteEndpoint>,
    },
}

/// The sending side of a received ref, with the message type erased: the
/// transport's half of an [`ExternalTarget`] (see its methods, which these
/// mirror). This module puts it behind an ordinary `ActorRef<M>`.
pub trait RemoteEndpoint: Send + Sync + 'static {
    /// Sends one message (serializing it, with the codec of the encode
    /// installed by the endpoint itself).
    fn send(&self, msg: &dyn erased_serde::Serialize);
    /// See [`ExternalTarget::is_closed`].
    fn is_closed(&self) -> bool {
        false
    }
    /// See [`ExternalTarget::name`].
    fn name(&self) -> Option<&str> {
        None
    }
    /// See [`ExternalTarget::watch`].
    fn watch(&self, watcher: Watcher) {
        drop(watcher);
    }
    /// See [`ExternalTarget::unwatch`].
    fn unwatch(&self, watcher: ActorId) {
        let _ = watcher;
    }
    /// The endpoint itself, which [`ExportedRef::external`] returns when
    /// the ref is sent on.
    fn as_any(&self) -> &dyn Any;
}

/// A [`RemoteEndpoint`] behind an `ActorRef<M>`.
struct Endpoint<M> {
    endpoint: Arc<dyn RemoteEndpoint>,
    _msg: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> ExternalTarget<M> for Endpoint<M> {
    fn send(&self, msg: M) {
        self.endpoint.send(&msg);
    }
    fn is_closed(&self) -> bool {
        self.endpoint.is_closed()
    }
    fn name(&self) -> Option<&str> {
        self.endpoint.name()
    }
    fn watch(&self, watcher: Watcher) {
        self.endpoint.watch(watcher);
    }
    fn unwatch(&self, watcher: ActorId) {
        self.endpoint.unwatch(watcher);
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self.endpoint.as_any())
    }
}

/// Hands the ref to the installed codec (see the module docs).
impl<M: RemoteMessage> Serialize for ActorRef<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(codec) = current() else {
            return Err(S::Error::custom(
                "an ActorRef can only be serialized by a transport's send (troupe::transport)",
            ));
        };
        let wire = codec
            .export_ref(ExportedRef(self))
            .map_err(S::Error::custom)?;
        erased_serde::serialize(&*wire, serializer)
    }
}

/// Asks the installed codec what the ref reaches (see the module docs).
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
            ImportedRef::Remote { system, endpoint } => Ok(ActorRef::from_external(
                &system,
                Endpoint::<M> {
                    endpoint,
                    _msg: PhantomData,
                },
            )),
        }
    }
}

/// Calls `gone` once, after `actor` has stopped (at once if it already
/// has), from a small actor of `system` that watches it: how a transport
/// learns that an actor it serves to others is gone. False if that actor
/// could not be spawned (the system is shutting down).
pub fn when_stopped<M: Send + 'static>(
    system: &ActorSystem,
    actor: &ActorRef<M>,
    gone: Box<dyn FnOnce() + Send>,
) -> bool {
    // The factory may run again on a restart; the callback runs once.
    let gone = Arc::new(Mutex::new(Some(gone)));
    let target = actor.clone();
    system
        .spawn(Props::new(move || StopWatch {
            target: target.clone(),
            gone: gone.clone(),
        }))
        .is_ok()
}

type Gone = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// Watches one actor and calls `gone` when it stops, then stops.
struct StopWatch<M: Send + 'static> {
    target: ActorRef<M>,
    gone: Gone,
}

impl<M: Send + 'static> Actor for StopWatch<M> {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        // Delivers Terminated at once if the actor has already stopped.
        ctx.watch(&self.target);
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(..) = signal {
            let gone = self.gone.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(gone) = gone {
                gone();
            }
            ctx.stop();
        }
    }
}

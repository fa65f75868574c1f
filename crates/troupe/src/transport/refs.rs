//! What a transport's codec sees of an actor ref: an [`ExportedRef`] when
//! one is sent (the external target it may recognise, or a
//! [`LocalEndpoint`] that decodes and delivers messages to a local actor),
//! an [`ImportedRef`] to return when one is received (a local ref back
//! home, or an [`ExternalTarget`] of [`Outgoing`] messages that this module
//! puts behind an ordinary `ActorRef<M>`: the one trait of external refs,
//! with the message type erased).

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::stop_watch::when_stopped;
use super::RemoteMessage;
use crate::{ActorId, ActorRef, ActorSystem, ExternalTarget, Watcher};

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

impl<'a> ExportedRef<'a> {
    /// What an `ActorRef<M>` being serialized hands its codec.
    pub(super) fn of<M: RemoteMessage>(actor: &'a ActorRef<M>) -> Self {
        ExportedRef(actor)
    }

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
/// [`import_ref`](super::Codec::import_ref) returns.
pub enum ImportedRef {
    /// A local actor's ref, back home: [`LocalEndpoint::actor_ref`].
    Local(Box<dyn Any + Send>),
    /// An actor elsewhere, reached through `target`; the ref is made in
    /// `system`.
    Remote {
        /// The system the ref belongs to.
        system: ActorSystem,
        /// Where its messages go, type-erased (see [`Outgoing`]).
        target: Arc<dyn ExternalTarget<Outgoing>>,
    },
}

/// A message sent through a ref whose message type the transport does not
/// know (a ref received inside a message): it serializes as the message
/// itself. Boxed once per send, on that path only: a ref the transport
/// made with the type known sends the message as it is.
pub struct Outgoing(Box<dyn ErasedMessage>);

/// A message of any [`RemoteMessage`] type, erased.
trait ErasedMessage: erased_serde::Serialize + Send {}

impl<M: RemoteMessage> ErasedMessage for M {}

impl Serialize for Outgoing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        erased_serde::serialize(&*self.0, serializer)
    }
}

/// An [`ExternalTarget`] of [`Outgoing`] messages behind an `ActorRef<M>`.
struct Erased<M> {
    target: Arc<dyn ExternalTarget<Outgoing>>,
    _msg: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> ExternalTarget<M> for Erased<M> {
    fn send(&self, msg: M) {
        self.target.send(Outgoing(Box::new(msg)));
    }
    fn is_closed(&self) -> bool {
        self.target.is_closed()
    }
    fn name(&self) -> Option<&str> {
        self.target.name()
    }
    fn watch(&self, watcher: Watcher) {
        self.target.watch(watcher);
    }
    fn unwatch(&self, watcher: ActorId) {
        self.target.unwatch(watcher);
    }
    fn as_any(&self) -> Option<&dyn Any> {
        self.target.as_any()
    }
}

/// The ref a received [`ImportedRef::Remote`] becomes.
pub(super) fn remote_ref<M: RemoteMessage>(
    system: &ActorSystem,
    target: Arc<dyn ExternalTarget<Outgoing>>,
) -> ActorRef<M> {
    ActorRef::from_external(
        system,
        Erased::<M> {
            target,
            _msg: PhantomData,
        },
    )
}

//! `RemoteTarget`: the `ExternalTarget` behind a remote ref, and the
//! [`Endpoint`] it sends through (also what a ref received inside a message
//! sends through, behind troupe's own external target, with the message
//! type erased). It encodes on the sender's thread (registering any reply
//! handles, exporting any local refs inside the message) and queues the
//! frame for the writer; a failure is a dead letter with its reason (a
//! frame over the node's frame limit also fails its asks at once with
//! `AskError::Refused`, see `Outbound::send_to_actor`). A ref
//! whose actor is known to be gone (`node/liveness.rs`) sends nothing: the
//! message is a `Terminated` or `NodeDown` dead letter and its asks fail
//! with `Unreachable`. Watches go to `node/watch.rs`.

use std::any::Any;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_nats::Subject;
use serde::Serialize;
use troupe::transport::Outgoing;
use troupe::{ActorId, ExternalTarget, Watcher};

use super::{watch, Outbound};
use crate::address::Kind;
use crate::dead_letters::DeadLetterReason;
use crate::liveness::Liveness;
use crate::reply_to::{Answer, Exporter};
use crate::wire::{self, RemoteMessage};

/// Where a remote ref's messages go: its address, subject and tag.
pub(crate) struct Endpoint {
    /// The address and what this node knows of its actor.
    pub(super) liveness: Arc<Liveness>,
    pub(super) subject: Subject,
    pub(super) outbound: Outbound,
    /// The message type's tag.
    pub(super) tag: &'static str,
    /// The size of the last frame encoded here: the next one's buffer is
    /// made that big, so that a large message is not encoded into a
    /// vector that grows (and copies itself) several times.
    pub(super) last_frame: AtomicUsize,
}

impl Endpoint {
    /// Encodes `msg` and queues it (see the module docs). The caller drops
    /// the message afterwards: its reply handles were shared into this
    /// node's pending table while it was encoded.
    fn send_value<T: Serialize + ?Sized>(&self, msg: &T) {
        let shared = &self.outbound.shared;
        let address = &self.liveness.address;
        let exporter = Rc::new(Exporter::new(
            &shared.pending,
            &shared.reply_subject,
            &self.liveness,
        ));
        let capacity = self.last_frame.load(Ordering::Relaxed);
        let frame = self.outbound.scope_with(exporter.clone(), || {
            wire::encode_tell_sized(capacity, address.incarnation, &address.id, self.tag, msg)
        });
        if let Ok(frame) = &frame {
            self.last_frame.store(frame.len(), Ordering::Relaxed);
        }
        let registered = exporter.registered();
        // Known gone: nothing is sent. The message was encoded all the
        // same, only so that the asks inside it learn why (a dead ref is
        // the rare path; the live one pays one relaxed load for it).
        let sent = match (self.liveness.gone(), frame) {
            (Some(gone), _) => Err(gone.reason()),
            (None, Ok(frame)) => self
                .outbound
                .send_to_actor(&self.subject, &registered, frame),
            (None, Err(_)) => Err(DeadLetterReason::EncodeFailed),
        };
        if let Err(reason) = sent {
            shared.pending.fail(&registered, Answer::for_unsent(reason));
            self.outbound.dead_letter(reason, &self.subject);
        }
    }

    fn is_closed(&self) -> bool {
        self.outbound.tx.is_closed() || self.liveness.gone().is_some()
    }

    fn name(&self) -> Option<&str> {
        // An export token is a capability: it is not shown.
        let address = &self.liveness.address;
        (address.kind == Kind::Published).then_some(&*address.id)
    }

    fn watch(&self, watcher: Watcher) {
        watch::watch(&self.outbound, &self.liveness, watcher);
    }

    fn unwatch(&self, watcher: ActorId) {
        watch::unwatch(&self.outbound, &self.liveness.address, watcher);
    }
}

/// A ref received inside a message: troupe puts this behind an
/// `ActorRef<M>` of the field's type, which boxes each message as an
/// [`Outgoing`] (the message type erased).
impl ExternalTarget<Outgoing> for Endpoint {
    fn send(&self, msg: Outgoing) {
        self.send_value(&msg);
    }
    fn is_closed(&self) -> bool {
        Endpoint::is_closed(self)
    }
    fn name(&self) -> Option<&str> {
        Endpoint::name(self)
    }
    fn watch(&self, watcher: Watcher) {
        Endpoint::watch(self, watcher);
    }
    fn unwatch(&self, watcher: ActorId) {
        Endpoint::unwatch(self, watcher);
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// What a remote ref from a lookup sends through: its endpoint, with the
/// message type known (so its messages are encoded without erasure).
pub(crate) struct RemoteTarget<M> {
    pub(super) endpoint: Endpoint,
    pub(super) _msg: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> ExternalTarget<M> for RemoteTarget<M> {
    fn send(&self, msg: M) {
        self.endpoint.send_value(&msg);
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

    // The endpoint, as for a ref received in a message: a ref is written
    // from it whichever way it was made.
    fn as_any(&self) -> Option<&dyn Any> {
        Some(&self.endpoint)
    }
}

//! `RemoteTarget`: the `ExternalTarget` behind a remote ref. It encodes
//! on the sender's thread (registering any reply handles, exporting any
//! local refs inside the message) and queues the frame for the writer; a
//! failure is a dead letter with its reason. A ref whose actor is known to
//! be gone (`node/liveness.rs`) sends nothing: the message is a
//! `Terminated` or `NodeDown` dead letter and its asks fail with
//! `Unreachable`. Watches go to `node/watch.rs`.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use async_nats::Subject;
use troupe::{ActorId, ExternalTarget, Watcher};

use super::{watch, Outbound};
use crate::address::Kind;
use crate::dead_letters::DeadLetterReason;
use crate::liveness::Liveness;
use crate::reply_to::{self, Answer};
use crate::wire::{self, RemoteMessage};

/// What a remote ref sends through.
pub(crate) struct RemoteTarget<M> {
    /// The address and what this node knows of its actor.
    pub(super) liveness: Arc<Liveness>,
    pub(super) subject: Subject,
    pub(super) outbound: Outbound,
    pub(super) _msg: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> ExternalTarget<M> for RemoteTarget<M> {
    fn send(&self, msg: M) {
        let shared = &self.outbound.shared;
        let address = &self.liveness.address;
        let (frame, registered) = reply_to::encoding(
            &shared.pending,
            &shared.reply_subject,
            &self.liveness,
            || {
                self.outbound
                    .scope(|| wire::encode_tell(address.incarnation, &address.id, &msg))
            },
        );
        // The original reply handles go with the message; the shared ones
        // stay registered until answered.
        drop(msg);
        // Known gone: nothing is sent. The message was encoded all the
        // same, only so that the asks inside it learn why (a dead ref is
        // the rare path; the live one pays one relaxed load for it).
        let sent = match (self.liveness.gone(), frame) {
            (Some(gone), _) => Err(gone.reason()),
            // The (first) ask in the frame learns at once if nobody serves it.
            (None, Ok(frame)) => {
                self.outbound
                    .send(self.subject.clone(), registered.first().copied(), frame)
            }
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

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

//! `RemoteTarget`: the `ExternalTarget` behind a remote ref. It encodes
//! on the sender's thread (registering any reply handles, exporting any
//! local refs inside the message) and queues the frame for the writer; a
//! failure is a dead letter with its reason. Watches go to
//! `node/watch.rs`.

use std::any::Any;
use std::marker::PhantomData;

use async_nats::Subject;
use troupe::{ActorId, ExternalTarget, Watcher};

use super::refs::{self, Address, Kind};
use super::{watch, Outbound};
use crate::dead_letters::DeadLetterReason;
use crate::reply_to;
use crate::wire::{self, RemoteMessage};

/// What a remote ref sends through.
pub(crate) struct RemoteTarget<M> {
    pub(super) address: Address,
    pub(super) subject: Subject,
    pub(super) outbound: Outbound,
    pub(super) _msg: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> ExternalTarget<M> for RemoteTarget<M> {
    fn send(&self, msg: M) {
        let shared = &self.outbound.shared;
        let (frame, registered) =
            reply_to::encoding(&shared.pending, &shared.reply_subject, || {
                refs::scope(&self.outbound, || wire::encode_tell(&self.address.id, &msg))
            });
        // The original reply handles go with the message; the shared ones
        // stay registered until answered.
        drop(msg);
        // The (first) ask in the frame learns at once if nobody serves it.
        let sent = match frame {
            Ok(frame) => {
                self.outbound
                    .send(self.subject.clone(), registered.first().copied(), frame)
            }
            Err(_) => Err(DeadLetterReason::EncodeFailed),
        };
        if let Err(reason) = sent {
            shared.pending.cancel(&registered);
            self.outbound.dead_letter(reason, &self.subject);
        }
    }

    fn is_closed(&self) -> bool {
        self.outbound.tx.is_closed()
    }

    fn name(&self) -> Option<&str> {
        // An export token is a capability: it is not shown.
        (self.address.kind == Kind::Published).then_some(&*self.address.id)
    }

    fn watch(&self, watcher: Watcher) {
        watch::watch(&self.outbound, &self.address, watcher);
    }

    fn unwatch(&self, watcher: ActorId) {
        watch::unwatch(&self.outbound, &self.address, watcher);
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

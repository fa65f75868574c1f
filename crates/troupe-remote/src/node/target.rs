//! `RemoteTarget`: the `ExternalTarget` behind a looked-up ref. It encodes
//! on the sender's thread (registering any reply handles) and queues the
//! frame for the writer; a failure is a dead letter with its reason.

use std::marker::PhantomData;

use async_nats::Subject;
use troupe::ExternalTarget;

use super::Outbound;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to;
use crate::wire::{self, RemoteMessage};

/// What a looked-up ref sends through.
pub(super) struct RemoteTarget<M> {
    pub(super) name: String,
    pub(super) subject: Subject,
    pub(super) outbound: Outbound,
    pub(super) _msg: PhantomData<fn(M)>,
}

impl<M: RemoteMessage> ExternalTarget<M> for RemoteTarget<M> {
    fn send(&self, msg: M) {
        let shared = &self.outbound.shared;
        let (frame, registered) =
            reply_to::encoding(&shared.pending, &shared.reply_subject, || {
                wire::encode_tell(&self.name, &msg)
            });
        // The original reply handles go with the message; the shared ones
        // stay registered until answered.
        drop(msg);
        let sent = match frame {
            Ok(frame) => self.outbound.send(self.subject.clone(), frame),
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
        Some(&self.name)
    }
}

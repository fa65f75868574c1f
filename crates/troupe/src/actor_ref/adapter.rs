//! Message adapters: an `ActorRef<R>` whose messages are converted into the
//! owner's own message type and told to it
//! ([`Context::message_adapter`](crate::Context::message_adapter)).
//!
//! An actor hands out an adapter where another protocol expects a ref of
//! its own type (a reply address, a subscription), and receives those
//! messages as ordinary messages of its own, in its own mailbox.
//!
//! # Rules
//!
//! * The conversion runs on the sender's thread, inside `tell`: it must be
//!   quick and must not block (it usually wraps the value in a variant).
//! * An adapter stands for its owner: the same [`ActorId`], terminated when
//!   the owner is, watched as the owner (a watcher of an adapter gets
//!   `Terminated` with the owner's id when the owner stops). It cannot be
//!   used to stop the owner. It holds the
//!   owner's cell, not the actor: an adapter that outlives its owner only
//!   turns messages into dead letters.
//! * An adapter never reports itself full: a converted message that finds
//!   the owner's bounded mailbox full is handled by the owner's overflow
//!   policy, and one the policy refuses becomes a dead letter (it cannot be
//!   handed back, being of the owner's type now).

use std::sync::Arc;

use crate::actor::cell::{self, Cell, SystemMsg, TypedCell};
use crate::actor_ref::ActorRef;
use crate::dispatch::{Executor, NeverScheduled, Ran, Runnable, Task};
use crate::ids::{ActorId, DeadLetterReason};
use crate::kernel::Kernel;
use crate::mailbox::bound::Bound;
use crate::mailbox::{Offer, Request};

/// The conversion an adapter applies.
type Convert<R, M> = Box<dyn Fn(R) -> M + Send + Sync>;

/// The cell behind an adapter ref: no mailbox, no run state (module header).
struct AdapterCell<R, M: Send + 'static> {
    owner: Arc<dyn TypedCell<M>>,
    convert: Convert<R, M>,
}

impl<R: Send + 'static, M: Send + 'static> Runnable for AdapterCell<R, M> {
    unsafe fn run(&self, _me: Task) -> Ran {
        // Never scheduled: every offer is told to the owner at once and
        // answered `Owned` (see `NeverScheduled`).
        Ran {
            finished: true,
            messages: 0,
        }
    }
}

impl<R: Send + 'static, M: Send + 'static> Cell for AdapterCell<R, M> {
    fn id(&self) -> ActorId {
        self.owner.id()
    }

    fn name(&self) -> Option<&str> {
        self.owner.name()
    }

    fn system(&self) -> &Arc<Kernel> {
        self.owner.system()
    }

    fn executor(&self) -> &dyn Executor {
        &NeverScheduled
    }

    fn push_system(&self, msg: SystemMsg) -> Request {
        match msg {
            // Watching an adapter is watching its owner (module header).
            msg @ (SystemMsg::Watch(_) | SystemMsg::Unwatch(_)) => {
                let owner: Arc<dyn Cell> = self.owner.clone();
                cell::send_system(&owner, msg);
            }
            // A stop addressed to an adapter does not stop its owner; nothing
            // else is sent to a cell that never runs.
            other => drop(other),
        }
        Request::Owned
    }

    fn drain_closed(&self) {}

    fn is_closed(&self) -> bool {
        self.owner.is_closed()
    }
}

impl<R: Send + 'static, M: Send + 'static> TypedCell<R> for AdapterCell<R, M> {
    unsafe fn offer_user(&self, msg: *mut R) -> Offer {
        // The trait's contract: `msg` is valid, and given up on `Pushed`,
        // which is what this returns.
        // SAFETY: read once, as that contract allows.
        let msg = unsafe { std::ptr::read(msg) };
        cell::deliver(&self.owner, (self.convert)(msg));
        Offer::Pushed(Request::Owned)
    }

    fn bound(&self) -> Option<&Bound> {
        None
    }

    fn dead_letter(&self, msg: R, reason: DeadLetterReason) {
        self.owner.dead_letter((self.convert)(msg), reason);
    }

    fn len_hint(&self) -> usize {
        self.owner.len_hint()
    }
}

/// An adapter ref in front of `owner` (see the module header).
pub(crate) fn adapter<R: Send + 'static, M: Send + 'static>(
    owner: Arc<dyn TypedCell<M>>,
    convert: impl Fn(R) -> M + Send + Sync + 'static,
) -> ActorRef<R> {
    ActorRef {
        cell: Arc::new(AdapterCell {
            owner,
            convert: Box::new(convert),
        }),
    }
}

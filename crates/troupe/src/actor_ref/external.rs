//! External refs: an [`ActorRef`] backed by a sender that lives outside this
//! crate (for instance a remote node's transport), so that code holding the
//! ref uses the same `tell`, `try_tell` and `ask` whether the actor is here
//! or elsewhere.
//!
//! The extension point is the trait [`ExternalTarget`]: a non-blocking
//! `send`. [`ActorRef::from_external`] wraps it in an [`ExternalCell`], a
//! cell that has no mailbox and is never scheduled: every offer is handed to
//! the target at once and reported as owned, so the dispatcher never sees it.
//! Local refs are untouched: `tell` already goes through one dynamic call
//! on `TypedCell`, and an external ref is simply another implementation of
//! it, so the local path gains no branch.
//!
//! Death watch goes through the target too: `Context::watch` on an
//! external ref hands the target a [`Watcher`], which the target fires when
//! it learns that the actor behind it is gone (a remote transport: the far
//! actor stopped, or its node went down). The watcher's own cell keeps the
//! exactly-once promise: it signals `Terminated` only for an actor it still
//! watches, so a target may fire a watcher more than once, or after an
//! `unwatch`, without the actor seeing it twice.
//!
//! What an external ref does not do: it cannot be stopped with
//! `ActorSystem::stop` (a stop is not carried to the far side); see
//! docs/semantics.md, "Across nodes".

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::actor::cell::{Cell, SystemMsg, TypedCell};
use crate::actor_ref::ActorRef;
use crate::dispatch::{Executor, NeverScheduled, Ran, Runnable, Task};
use crate::ids::{ActorId, DeadLetterReason};
use crate::kernel::{ActorSystem, Kernel};
use crate::mailbox::bound::Bound;
use crate::mailbox::{Offer, Request};

/// The sending side of an actor that lives outside this actor system.
///
/// Implement it to put your own transport behind an ordinary [`ActorRef`]
/// (see [`ActorRef::from_external`]).
pub trait ExternalTarget<M: Send + 'static>: Send + Sync + 'static {
    /// Sends `msg`. Called on the sender's thread by `tell`, `try_tell` and
    /// `ask`: it must not block. A message it cannot deliver is its own to
    /// drop and to account for (a dead letter with a reason).
    fn send(&self, msg: M);

    /// Whether the actor behind this target is known to be gone for good;
    /// `try_tell` then hands the message back as `Closed`. The default says
    /// no.
    fn is_closed(&self) -> bool {
        false
    }

    /// The name the ref reports (and shows in `Debug`), if any.
    fn name(&self) -> Option<&str> {
        None
    }

    /// An actor watches the ref (`Context::watch`): fire `watcher` when the
    /// actor behind this target is known to be gone. Called on the
    /// watching actor's thread: it must not block. The default drops the
    /// watcher, so `Terminated` never comes.
    fn watch(&self, watcher: Watcher) {
        drop(watcher);
    }

    /// The actor `watcher` no longer watches the ref (`Context::unwatch`,
    /// or the watcher stopped). The default does nothing.
    fn unwatch(&self, watcher: ActorId) {
        let _ = watcher;
    }

    /// The target itself, for [`ActorRef::external_target`]: a transport
    /// that needs to recognise its own refs (to write one into a message,
    /// say) returns `Some(self)`. The default is `None`.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

/// An actor watching an external ref: what [`ExternalTarget::watch`] gets.
///
/// [`terminated`](Watcher::terminated) delivers
/// [`Signal::Terminated`](crate::Signal::Terminated) with the external
/// ref's id (and the name its target reports, [`ExternalTarget::name`]) to
/// the watching actor, at most once however often it is called, and not at
/// all after the actor unwatched the ref.
#[derive(Clone)]
pub struct Watcher {
    cell: Arc<dyn Cell>,
    watched: ActorId,
    name: Option<Arc<str>>,
}

impl Watcher {
    /// The watching actor.
    pub fn id(&self) -> ActorId {
        self.cell.id()
    }

    /// The watched (external) ref's id: what `Terminated` will carry.
    pub fn watched(&self) -> ActorId {
        self.watched
    }

    /// Tells the watcher that the watched actor is gone.
    pub fn terminated(&self) {
        let terminated = SystemMsg::Terminated(self.watched, self.name.clone());
        crate::actor::cell::send_system(&self.cell, terminated);
    }
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher")
            .field("watcher", &self.cell.id())
            .field("watched", &self.watched)
            .finish()
    }
}

impl<M: Send + 'static> ActorRef<M> {
    /// An `ActorRef` whose messages go to `target` instead of a local
    /// mailbox. It gets a fresh [`ActorId`] of `system`, and its asks use
    /// `system`'s scheduler for their timeouts.
    ///
    /// `tell` and `ask` hand the message to [`ExternalTarget::send`];
    /// `try_tell` does too unless [`ExternalTarget::is_closed`]. The ref is
    /// never "full" and `queued()` is 0: flow control is the target's.
    /// `Context::watch` and `unwatch` on the ref reach
    /// [`ExternalTarget::watch`] and [`ExternalTarget::unwatch`].
    pub fn from_external(system: &ActorSystem, target: impl ExternalTarget<M>) -> ActorRef<M> {
        let system = system.inner().clone();
        let cell = ExternalCell {
            id: system.next_id(),
            system,
            target,
            _msg: PhantomData,
        };
        ActorRef {
            cell: Arc::new(cell),
        }
    }
}

impl<M: Send + 'static> ActorRef<M> {
    /// The target behind this ref, if it is an external ref whose target
    /// is a `T` that answers [`ExternalTarget::as_any`]; `None` for local
    /// refs and other targets.
    pub fn external_target<T: 'static>(&self) -> Option<&T> {
        self.cell.external()?.downcast_ref::<T>()
    }

    /// Whether this ref was made by [`ActorRef::from_external`].
    pub fn is_external(&self) -> bool {
        self.cell.is_external()
    }
}

/// The cell behind an external ref: no mailbox, no run state.
struct ExternalCell<M, T> {
    id: ActorId,
    system: Arc<Kernel>,
    target: T,
    /// `fn(M)`: the cell sends `M`s, it does not own one (so it is
    /// `Send + Sync` whatever `M` is).
    _msg: PhantomData<fn(M)>,
}

impl<M: Send + 'static, T: ExternalTarget<M>> Runnable for ExternalCell<M, T> {
    unsafe fn run(&self, _me: Task) -> Ran {
        // Never scheduled: every offer is answered `Owned` (see
        // `NeverScheduled`); finishing at once is the harmless answer if it
        // ever were.
        Ran {
            finished: true,
            messages: 0,
        }
    }
}

impl<M: Send + 'static, T: ExternalTarget<M>> Cell for ExternalCell<M, T> {
    fn id(&self) -> ActorId {
        self.id
    }

    fn name(&self) -> Option<&str> {
        self.target.name()
    }

    fn system(&self) -> &Arc<Kernel> {
        &self.system
    }

    fn executor(&self) -> &dyn Executor {
        &NeverScheduled
    }

    fn push_system(&self, msg: SystemMsg) -> Request {
        match msg {
            SystemMsg::Watch(cell) => self.target.watch(Watcher {
                cell,
                watched: self.id,
                // Read once per watch (rare), so that every send does not
                // pay for a name it never needs.
                name: self.target.name().map(Arc::from),
            }),
            SystemMsg::Unwatch(watcher) => self.target.unwatch(watcher),
            // A stop is not carried to the far side; nothing else is sent
            // to a cell that never runs.
            other => drop(other),
        }
        Request::Owned
    }

    fn external(&self) -> Option<&dyn Any> {
        self.target.as_any()
    }

    fn is_external(&self) -> bool {
        true
    }

    fn drain_closed(&self) {}

    fn is_closed(&self) -> bool {
        self.target.is_closed()
    }
}

impl<M: Send + 'static, T: ExternalTarget<M>> TypedCell<M> for ExternalCell<M, T> {
    unsafe fn offer_user(&self, msg: *mut M) -> Offer {
        // The trait's contract: `msg` is valid, and given up on `Pushed`,
        // which is what this returns.
        // SAFETY: read once, as that contract allows.
        let msg = unsafe { std::ptr::read(msg) };
        self.target.send(msg);
        Offer::Pushed(Request::Owned)
    }

    fn bound(&self) -> Option<&Bound> {
        None
    }

    fn dead_letter(&self, msg: M, reason: DeadLetterReason) {
        drop(msg);
        self.system.dead_letter(
            self.id,
            self.target.name(),
            std::any::type_name::<M>(),
            reason,
        );
    }

    fn len_hint(&self) -> usize {
        0
    }
}

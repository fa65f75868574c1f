//! An actor's mailbox: the user-message queue, the system-message lane and
//! the state word that says who owns them.
//!
//! The pieces live in submodules: [`queue`] (the segmented MPSC FIFO of user
//! messages), [`bound`] (capacity, overflow policy and waiting producers of
//! a bounded mailbox), [`drop_oldest`] (the user queue of a `DropOldest`
//! mailbox, which takes the place of the segmented one), [`system_lane`]
//! (the lock-free stack of system messages) and [`state`] (the ownership
//! protocol of the state word); the loom, Miri and plain models of the whole
//! live in `models` (tests only). This module puts them together. It is
//! generic over the system-message type so that loom models can drive it
//! with plain integers.
//!
//! # Ground rules
//!
//! * Senders call [`Mailbox::offer_user`] (which reserves room in a bounded
//!   mailbox first, and may hand the message back, or under `DropOldest`
//!   hand back the oldest one it displaced) or [`Mailbox::push_system`], and
//!   act on the returned [`Request`]: schedule the actor, drain a closed
//!   mailbox, or nothing.
//! * A mailbox's user messages are in exactly one queue: the segmented
//!   queue, or, for a `DropOldest` mailbox, its [`drop_oldest`] queue (the
//!   segmented queue of such a mailbox stays empty). The consumer methods
//!   look at the segmented queue first, so an unbounded mailbox that has a
//!   message never looks further.
//! * Everything `unsafe` here but `offer_user` (whose contract is about the
//!   offered message) is an owner-only operation: the caller must own the
//!   mailbox in the sense of `state.rs` (it won the `SCHEDULED` bit and has
//!   not released it).
//! * System messages are always handled before user messages. The system
//!   lane is a one-pointer lock-free stack: system traffic (watch, stop,
//!   failure, termination) is rare and idle actors are many.

pub mod bound;
pub(crate) mod drop_oldest;
#[cfg(test)]
mod models;
pub(crate) mod queue;
pub(crate) mod state;
pub(crate) mod system_lane;

use bound::{Bound, MailboxConfig, Overflow};
use drop_oldest::DropOldestQueue;
use queue::SegQueue;
pub(crate) use state::Request;
use state::{MailboxState, PENDING, SYSTEM};
use std::mem::MaybeUninit;
use system_lane::SystemLane;

/// User queue + system lane + state word.
pub(crate) struct Mailbox<M, S> {
    /// Shared by all senders and the owner (see `state.rs`).
    pub(crate) state: MailboxState,
    /// Written by any sender, read by the owner.
    user: SegQueue<M>,
    /// Written by any sender, drained by the owner.
    system: SystemLane<S>,
    /// Present for bounded mailboxes only (one pointer on every other actor).
    bounded: Option<Box<Bounded<M>>>,
}

/// What a bounded mailbox adds to a mailbox, boxed (see `Mailbox::bounded`).
struct Bounded<M> {
    bound: Bound,
    /// `DropOldest` only: the queue of its user messages (see the ground
    /// rules above).
    drop_oldest: Option<DropOldestQueue<M>>,
}

impl<M> Bounded<M> {
    fn boxed(config: MailboxConfig) -> Option<Box<Self>> {
        match config {
            MailboxConfig::Unbounded => None,
            MailboxConfig::Bounded { capacity, overflow } => Some(Box::new(Bounded {
                bound: Bound::new(capacity, overflow),
                drop_oldest: (overflow == Overflow::DropOldest)
                    .then(|| DropOldestQueue::new(capacity)),
            })),
        }
    }
}

/// What became of a user message offered to a mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Queued (moved out of the sender's hands); act on the request. (A
    /// message it displaced under `DropOldest` went to the offer's
    /// `displaced` callback before this was returned.)
    Pushed(Request),
    /// The bounded mailbox is full; the message is still the sender's.
    Full,
}

impl<M, S> Mailbox<M, S> {
    /// A mailbox owned by its creator from the start (see `MailboxState::new_owned`).
    pub(crate) fn new_owned(config: MailboxConfig) -> Self {
        Mailbox {
            state: MailboxState::new_owned(),
            user: SegQueue::new(),
            system: SystemLane::new(),
            bounded: Bounded::boxed(config),
        }
    }

    /// An idle mailbox nobody owns.
    #[cfg(test)]
    pub(crate) fn new(config: MailboxConfig) -> Self {
        Mailbox {
            state: MailboxState::new(),
            user: SegQueue::new(),
            system: SystemLane::new(),
            bounded: Bounded::boxed(config),
        }
    }

    /// The bound of a bounded mailbox.
    pub(crate) fn bound(&self) -> Option<&Bound> {
        self.bounded.as_deref().map(|b| &b.bound)
    }

    /// Offers the user message at `src`: reserves a place in a bounded
    /// mailbox, then moves the message into the queue and requests a run.
    /// On `Full` the message is untouched. Under `DropOldest` there is
    /// always room: the oldest queued message, if the mailbox is full, is
    /// taken out and handed to `displaced` (before the run is requested).
    ///
    /// # Safety
    ///
    /// `src` points to a valid `M` that the caller owns; after `Pushed` it
    /// has been moved out (the caller must not use or drop it), after
    /// `Full` it is still the caller's.
    #[inline]
    pub(crate) unsafe fn offer_user(&self, src: *const M, displaced: impl FnOnce(M)) -> Offer {
        if let Some(bounded) = &self.bounded {
            // The policy sits next to `len`, which the reservation below
            // touches anyway: the test costs a Fail/DropNewest send no
            // other cache line.
            if bounded.bound.overflow == Overflow::DropOldest {
                // SAFETY: passed on from this function's contract.
                return unsafe { self.offer_drop_oldest(bounded, src, displaced) };
            }
            if !bounded.bound.try_reserve() {
                return Offer::Full;
            }
        }
        // SAFETY: passed on from this function's contract.
        unsafe { self.user.push_read(src) };
        Offer::Pushed(self.state.request(PENDING))
    }

    /// `offer_user` for a `DropOldest` mailbox: always `Pushed`. Out of
    /// line, so that the other mailboxes' send path stays as it was.
    ///
    /// # Safety
    ///
    /// As for `offer_user`.
    #[cold]
    #[inline(never)]
    unsafe fn offer_drop_oldest(
        &self,
        bounded: &Bounded<M>,
        src: *const M,
        displaced: impl FnOnce(M),
    ) -> Offer {
        let queue = bounded
            .drop_oldest
            .as_ref()
            .expect("a DropOldest mailbox has its queue (`Bounded::boxed`)");
        // `src` is a valid `M` that the caller gives up on `Pushed`
        // (this function's contract), and `Pushed` is all this returns: the
        // value is read once and moved into the queue.
        // SAFETY: by the argument just above.
        let msg = unsafe { std::ptr::read(src) };
        if let Some(oldest) = queue.push(&bounded.bound, msg) {
            // Dead-lettered before the run is requested: if that panics, the
            // new message waits for the next send instead of a schedule
            // that this send won and never handed over.
            displaced(oldest);
        }
        Offer::Pushed(self.state.request(PENDING))
    }

    /// Publishes a system message and requests a run.
    pub(crate) fn push_system(&self, msg: S) -> Request {
        self.system.push(msg);
        self.state.request(SYSTEM)
    }

    /// Owner only: clears the arrival flags and moves any system messages into
    /// `out`. Call it before looking at the user queue.
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (see `state.rs`).
    pub(crate) unsafe fn take_system(&self, out: &mut Vec<S>) {
        if self.state.take_flags() {
            self.system.take_all(out);
        }
    }

    /// Owner only: the oldest user message, if any.
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (see `state.rs`).
    #[inline]
    pub(crate) unsafe fn pop_user(&self) -> Option<M> {
        // the caller owns the mailbox (this function's contract), and
        // a popped message is initialised.
        // SAFETY: by the argument just above.
        unsafe { self.pop_user_uninit().map(|msg| msg.assume_init()) }
    }

    /// [`pop_user`](Self::pop_user), with the message still wrapped in
    /// `MaybeUninit` (it is initialised): see `ActorCell::invoke_next`.
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (see `state.rs`).
    #[inline(always)]
    pub(crate) unsafe fn pop_user_uninit(&self) -> Option<MaybeUninit<M>> {
        // the caller owns the mailbox (this function's contract), and
        // only the owner pops, so it is the queue's single consumer.
        // SAFETY: by the argument just above.
        match unsafe { self.user.pop_uninit() } {
            Some(msg) => {
                if let Some(bounded) = &self.bounded {
                    bounded.bound.release();
                }
                Some(msg)
            }
            None => self.pop_drop_oldest().map(MaybeUninit::new),
        }
    }

    /// Owner only: the oldest message of a `DropOldest` mailbox's queue.
    /// (Safe to call from anywhere; only the owner does, see
    /// `drop_oldest.rs`.)
    #[cold]
    #[inline(never)]
    fn pop_drop_oldest(&self) -> Option<M> {
        let bounded = self.bounded.as_deref()?;
        bounded.drop_oldest.as_ref()?.pop(&bounded.bound)
    }

    /// Whether the queue of a `DropOldest` mailbox holds a message (false
    /// for every other mailbox). The owner asks whenever it finds the
    /// segmented queue empty, so the kind test is inline (a load and a
    /// branch for an unbounded mailbox) and the lock stays out of line.
    #[inline(always)]
    fn drop_oldest_has_messages(&self) -> bool {
        self.bounded
            .as_deref()
            .and_then(|b| b.drop_oldest.as_ref())
            .is_some_and(|queue| !queue.is_empty())
    }

    /// About how many user messages are queued (any thread; a snapshot).
    pub(crate) fn len_hint(&self) -> usize {
        match self.bounded.as_deref() {
            Some(b) if b.drop_oldest.is_some() => b.bound.len(),
            _ => self.user.len_hint(),
        }
    }

    /// Owner only: whether the user queue looks empty.
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (see `state.rs`).
    #[inline]
    pub(crate) unsafe fn user_is_empty(&self) -> bool {
        // the caller owns the mailbox (this function's contract), and
        // only the owner reads the queue's head, so it is the single consumer.
        // SAFETY: by the argument just above.
        let segmented_empty = unsafe { self.user.is_empty() };
        segmented_empty && !self.drop_oldest_has_messages()
    }

    /// Owner only: tries to release ownership after finding nothing to do.
    /// `user_runnable` is false while the actor is suspended (its user
    /// messages wait). Returns false if work arrived: the caller still owns
    /// the mailbox and must look again.
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (see `state.rs`).
    #[inline]
    pub(crate) unsafe fn try_release(&self, user_runnable: bool) -> bool {
        // the caller owns the mailbox (this function's contract),
        // which is what `user_is_empty` requires.
        // SAFETY: by the argument just above.
        if user_runnable && !unsafe { self.user_is_empty() } {
            return false;
        }
        self.state.try_release()
    }
}

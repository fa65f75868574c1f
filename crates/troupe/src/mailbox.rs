//! An actor's mailbox: the user-message queue, the system-message lane and
//! the state word that says who owns them.
//!
//! The pieces live in submodules: [`queue`] (the segmented MPSC FIFO of user
//! messages), [`bound`] (capacity, overflow policy and waiting producers of
//! a bounded mailbox), [`system_lane`] (the lock-free stack of system
//! messages) and [`state`] (the ownership protocol of the state word); the
//! loom, Miri and plain models of the whole live in `models` (tests only).
//! This module puts them together. It is generic over the system-message
//! type so that loom models can drive it with plain integers.
//!
//! # Ground rules
//!
//! * Senders call [`Mailbox::offer_user`] (which reserves room in a bounded
//!   mailbox first, and may hand the message back) or
//!   [`Mailbox::push_system`], and act on the returned [`Request`]: schedule
//!   the actor, drain a closed mailbox, or nothing. [`Mailbox::push_user`]
//!   skips the bound; the models use it.
//! * Everything `unsafe` here is an owner-only operation: the caller must own
//!   the mailbox in the sense of `state.rs` (it won the `SCHEDULED` bit and has
//!   not released it).
//! * System messages are always handled before user messages. The system
//!   lane is a one-pointer lock-free stack: system traffic (watch, stop,
//!   failure, termination) is rare and idle actors are many.

pub mod bound;
#[cfg(test)]
mod models;
pub(crate) mod queue;
pub(crate) mod state;
pub(crate) mod system_lane;

use bound::{Bound, MailboxConfig, Overflow};
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
    bound: Option<Box<Bound>>,
}

/// What became of a user message offered to a mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Queued (moved out of the sender's hands); act on the request.
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
            bound: match config {
                MailboxConfig::Unbounded => None,
                MailboxConfig::Bounded { capacity, overflow } => {
                    Some(Box::new(Bound::new(capacity, overflow)))
                }
            },
        }
    }

    /// The bound of a bounded mailbox.
    pub(crate) fn bound(&self) -> Option<&Bound> {
        self.bound.as_deref()
    }

    /// Offers the user message at `src`: reserves a place in a bounded
    /// mailbox (under `DropOldest`, past a full one), then moves the message
    /// into the queue and requests a run. On `Full` the message is untouched.
    ///
    /// # Safety
    ///
    /// `src` points to a valid `M` that the caller owns; after `Pushed` it
    /// has been moved out (the caller must not use or drop it), after
    /// `Full` it is still the caller's.
    #[inline]
    pub(crate) unsafe fn offer_user(&self, src: *const M) -> Offer {
        if let Some(bound) = &self.bound {
            if !bound.try_reserve() {
                if bound.overflow != Overflow::DropOldest {
                    return Offer::Full;
                }
                bound.force_reserve();
            }
        }
        // SAFETY: passed on from this function's contract.
        unsafe { self.user.push_read(src) };
        Offer::Pushed(self.state.request(PENDING))
    }

    /// An idle mailbox nobody owns.
    #[allow(dead_code)] // used by the loom models
    pub(crate) fn new() -> Self {
        Mailbox {
            state: MailboxState::new(),
            user: SegQueue::new(),
            system: SystemLane::new(),
            bound: None,
        }
    }

    /// Publishes a user message and requests a run (no bound check: use
    /// `offer_user` for actor mailboxes).
    #[allow(dead_code)] // used by the loom models
    #[inline]
    pub(crate) fn push_user(&self, msg: M) -> Request {
        self.user.push(msg);
        self.state.request(PENDING)
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
        let msg = unsafe { self.user.pop_uninit() }?;
        if let Some(bound) = &self.bound {
            bound.release();
        }
        Some(msg)
    }

    /// Owner only: under `DropOldest`, the oldest message while the mailbox
    /// holds more than its capacity (the caller dead-letters it).
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (see `state.rs`).
    #[inline]
    pub(crate) unsafe fn pop_overflowed(&self) -> Option<M> {
        let bound = self.bound.as_deref()?;
        if bound.overflow == Overflow::DropOldest && bound.over_capacity() {
            // the caller owns the mailbox (this function's contract),
            // which is what `pop_user` requires.
            // SAFETY: by the argument just above.
            unsafe { self.pop_user() }
        } else {
            None
        }
    }

    /// About how many user messages are queued (any thread; a snapshot).
    pub(crate) fn len_hint(&self) -> usize {
        self.user.len_hint()
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
        unsafe { self.user.is_empty() }
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

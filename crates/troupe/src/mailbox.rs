//! An actor's mailbox: the user-message queue, the system-message lane and
//! the state word that says who owns them.
//!
//! The pieces live in submodules: `queue` (the segmented MPSC FIFO of user
//! messages) and `state` (the ownership protocol). This module puts them
//! together. It is generic over the system-message type so that loom models
//! can drive it with plain integers.
//!
//! # Ground rules
//!
//! * Senders call `Mailbox::push_user` / `Mailbox::push_system` and act on
//!   the returned `Request`: schedule the actor, drain a closed mailbox, or
//!   nothing.
//! * Everything `unsafe` here is an owner-only operation: the caller must own
//!   the mailbox in the sense of `state.rs` (it won the `SCHEDULED` bit and has
//!   not released it).
//! * System messages are always handled before user messages. The system
//!   lane (`system_lane`) is a one-pointer lock-free stack: system traffic
//!   (watch, stop, failure, termination) is rare and idle actors are many.

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
pub(crate) enum Offer<M> {
    /// Queued; act on the request.
    Pushed(Request),
    /// The bounded mailbox is full; the message is handed back.
    Full(M),
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

    /// Offers a user message: reserves a place in a bounded mailbox (under
    /// `DropOldest`, past a full one), then publishes and requests a run.
    #[inline]
    pub(crate) fn offer_user(&self, msg: M) -> Offer<M> {
        if let Some(bound) = &self.bound {
            if !bound.try_reserve() {
                if bound.overflow != Overflow::DropOldest {
                    return Offer::Full(msg);
                }
                bound.force_reserve();
            }
        }
        Offer::Pushed(self.push_user(msg))
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
        // SAFETY: the owner is the queue's single consumer (module ground rules).
        let msg = unsafe { self.user.pop() }?;
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
            // SAFETY: forwarded owner-only precondition.
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
        // SAFETY: the owner is the queue's single consumer (module ground rules).
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
        // SAFETY: forwarded owner-only precondition.
        if user_runnable && !unsafe { self.user_is_empty() } {
            return false;
        }
        self.state.try_release()
    }
}

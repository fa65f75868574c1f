//! The mailbox state word: one `AtomicU32` that decides who may consume a
//! mailbox and when an actor is handed to its dispatcher.
//!
//! # Bits
//!
//! | bit         | set by                                        | cleared by                    |
//! |-------------|-----------------------------------------------|-------------------------------|
//! | `SCHEDULED` | the sender whose CAS finds it clear           | the owner's releasing CAS     |
//! | `PENDING`   | a user-message sender that finds it set       | the owner, before it looks at the queue |
//! | `SYSTEM`    | every system-message sender                   | the owner, before it drains the system lane |
//! | `CLOSED`    | the owner, when the actor has stopped         | never                         |
//!
//! # Ground rules
//!
//! * **Ownership.** The thread that moves `SCHEDULED` from clear to set *owns*
//!   the mailbox: it alone may consume the queues (and, for an actor, touch its
//!   run state) until its releasing CAS succeeds. Only that idle→scheduled send
//!   hands the actor to the dispatcher; every other send only enqueues.
//! * **Publish, then request.** A sender publishes its message *before* it
//!   touches this word. If it finds the mailbox owned it sets `PENDING` (or
//!   `SYSTEM`) with a read-modify-write.
//! * **Check, then release by CAS.** The owner clears `PENDING`/`SYSTEM`,
//!   looks at its queues *as owner*, and releases with a CAS that expects the
//!   word to be exactly `SCHEDULED`. A message published after the owner's last
//!   look was followed by a `fetch_or` that either precedes the CAS in the
//!   word's modification order (the CAS fails, and the owner's acquire read of
//!   the flag makes the message visible) or follows it (the sender finds
//!   `SCHEDULED` clear and becomes the owner). No message is ever stranded in
//!   an idle mailbox, and emptiness is only ever checked by the owner.
//! * **Closed.** Once `CLOSED` is set the actor never runs again. A sender that
//!   acquires ownership of a closed mailbox drains it to dead letters itself.

use crate::sync::{AtomicU32, Ordering};

/// The mailbox is owned by a thread (queued to run, running, or being drained).
pub(crate) const SCHEDULED: u32 = 1;
/// A user message was published while the mailbox was owned.
pub(crate) const PENDING: u32 = 1 << 1;
/// The system lane may hold messages.
pub(crate) const SYSTEM: u32 = 1 << 2;
/// The actor has stopped for good.
pub(crate) const CLOSED: u32 = 1 << 3;

/// What a sender must do after publishing a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// Someone else owns the mailbox and will see the message.
    Owned,
    /// The caller now owns an open mailbox: hand the actor to its dispatcher.
    Schedule,
    /// The caller now owns a closed mailbox: drain it to dead letters.
    Drain,
}

/// The packed state word (see the module header).
pub(crate) struct MailboxState(AtomicU32);

impl MailboxState {
    /// An idle, open mailbox (the models start from one).
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        MailboxState(AtomicU32::new(0))
    }

    /// A new mailbox that starts owned by its creator (used at spawn, so the
    /// actor's first run, which calls `started`, is already scheduled).
    pub(crate) fn new_owned() -> Self {
        MailboxState(AtomicU32::new(SCHEDULED))
    }

    /// Called by a sender after publishing a message. `flag` is `PENDING` for
    /// a user message and `SYSTEM` for a system message.
    #[inline]
    pub(crate) fn request(&self, flag: u32) -> Request {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            if cur & SCHEDULED == 0 {
                // Acquire ownership; leave our flag set for a system message so
                // the owner (us, or whoever we hand the actor to) drains the lane.
                let keep = flag & SYSTEM;
                match self.0.compare_exchange_weak(
                    cur,
                    cur | SCHEDULED | keep,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) if cur & CLOSED != 0 => return Request::Drain,
                    Ok(_) => return Request::Schedule,
                    Err(actual) => cur = actual,
                }
            } else {
                let prev = self.0.fetch_or(flag, Ordering::AcqRel);
                if prev & SCHEDULED != 0 {
                    return Request::Owned;
                }
                // The owner released in between: try to become the owner.
                cur = prev | flag;
            }
        }
    }

    /// Owner only: clears `PENDING` and `SYSTEM` (when set) and reports
    /// whether `SYSTEM` was set, i.e. whether the system lane must be drained.
    #[inline]
    pub(crate) fn take_flags(&self) -> bool {
        let cur = self.0.load(Ordering::Acquire);
        if cur & (PENDING | SYSTEM) == 0 {
            return false;
        }
        self.0.fetch_and(!(PENDING | SYSTEM), Ordering::AcqRel) & SYSTEM != 0
    }

    /// Whether system messages wait (the owner checks between user messages,
    /// so that system messages go first).
    #[inline]
    pub(crate) fn system_pending(&self) -> bool {
        self.0.load(Ordering::Relaxed) & SYSTEM != 0
    }

    /// Owner only: tries to give up ownership of an open mailbox whose queues
    /// the owner found empty. Fails (and the caller still owns the mailbox) if
    /// a message arrived since the last `take_flags`.
    #[inline]
    pub(crate) fn try_release(&self) -> bool {
        self.0
            .compare_exchange(SCHEDULED, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Owner only: tries to give up ownership of a closed, drained mailbox.
    #[inline]
    pub(crate) fn try_release_closed(&self) -> bool {
        self.0
            .compare_exchange(
                SCHEDULED | CLOSED,
                CLOSED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Owner only: marks the mailbox closed (the owner keeps ownership).
    pub(crate) fn close(&self) {
        self.0.fetch_or(CLOSED, Ordering::AcqRel);
    }

    /// Whether nobody owns the mailbox (a snapshot, for tests).
    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        self.0.load(Ordering::Acquire) & SCHEDULED == 0
    }

    /// Whether the mailbox is closed (a hint for senders: it may close right after).
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.0.load(Ordering::Acquire) & CLOSED != 0
    }
}

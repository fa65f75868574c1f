//! Bounded mailboxes: a capacity, an overflow policy, and producers that
//! wait for room.
//!
//! # Design
//!
//! A bounded mailbox never holds more than `capacity` user messages, under
//! every policy, at every instant: the bound is applied when a message is
//! enqueued, never later by the consumer.
//!
//! * Under [`Overflow::Fail`] and [`Overflow::DropNewest`] the messages go
//!   through the mailbox's lock-free segmented queue, and `len` counts them.
//!   A sender *reserves* a place with a CAS that never takes `len` past
//!   `capacity`, then pushes; the owner releases the place after it pops. A
//!   sender that cannot reserve keeps its message (the caller applies the
//!   policy: hand it back, dead-letter it, or wait).
//! * Under [`Overflow::DropOldest`] the messages go through a queue under a
//!   mutex instead (`drop_oldest.rs`, which says why): a sender that finds it
//!   full takes the oldest message out and appends its own in one critical
//!   section, and dead-letters the displaced one right away. `len` is that
//!   queue's length, written under its lock.
//!
//! Producers that wait for room ([`crate::ActorRef::send_blocking`],
//! [`crate::ActorRef::send`]) register in `waiters` and retry when woken. When
//! the owner takes a message out and `has_waiters` says anyone waits, it wakes
//! *every* waiter: a waiter that found room on its own retry leaves a stale
//! entry behind, and waking only one could wake that stale entry and leave a
//! real waiter asleep next to a free place. Waiters only exist while
//! producers outrun the consumer, so the herd is small. Closing the mailbox
//! wakes them all too (they then fail with `Closed`). A `DropOldest` mailbox
//! always takes the message, so nobody ever waits on one.
//!
//! # No lost wake-up
//!
//! A waiter registers (under the mutex, setting `has_waiters`), then retries
//! its reservation before it sleeps. The owner frees a place (`len`
//! decrement), then reads `has_waiters`. Both sides use `SeqCst` for these
//! two steps, so either the waiter's retry sees the free place or the owner
//! sees the waiter.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::Waker;
use std::thread::Thread;

/// What a bounded mailbox does with a message that finds it full.
///
/// Every policy applies at enqueue, in the send that finds the mailbox
/// full: the mailbox never holds more than its capacity, and a message
/// dropped by the policy is counted as a
/// [`DeadLetterReason::MailboxFull`](crate::DeadLetterReason::MailboxFull)
/// dead letter before that send returns.
///
/// Which sends wait: [`tell`](crate::ActorRef::tell),
/// [`try_tell`](crate::ActorRef::try_tell) and [`ask`](crate::ActorRef::ask)
/// never wait, under any policy. [`send_blocking`](crate::ActorRef::send_blocking)
/// and [`send`](crate::ActorRef::send)`.await` wait for room under `Fail` and
/// `DropNewest`; under `DropOldest` there is always room (the oldest message
/// makes way), so they never wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// Refuse the new message: `try_tell` hands it back
    /// (`TrySendError::Full`), `tell` makes it a dead letter, `ask` fails
    /// with `AskError::MailboxFull`, and the waiting sends wait for room.
    /// This is the policy for producers that must be slowed down instead of
    /// losing messages: they use the waiting sends.
    Fail,
    /// Drop the new message to dead letters (`try_tell` reports success: the
    /// policy was applied); `ask` fails with `AskError::MailboxFull`; the
    /// waiting sends wait for room instead.
    DropNewest,
    /// Accept the new message and drop the oldest queued one to dead letters,
    /// in the same send: the queue keeps the newest `capacity` messages. An
    /// ask whose request is dropped this way fails with `AskError::NoReply`.
    /// The drop runs the dropped message's destructor on the sending thread.
    /// Its queue is a short critical section under a mutex rather than the
    /// lock-free queue of the other mailboxes (see `mailbox/drop_oldest.rs`).
    DropOldest,
}

/// Mailbox settings of an actor (see [`crate::Props::mailbox`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MailboxConfig {
    /// No limit: `tell` never blocks and never fails (the default).
    #[default]
    Unbounded,
    /// At most `capacity` queued user messages at any instant, under every
    /// policy (system messages are not counted); see [`Overflow`] for what
    /// a message that finds the mailbox full does, and which sends wait.
    Bounded {
        /// The limit (at least 1).
        capacity: usize,
        /// What a full mailbox does with one more message.
        overflow: Overflow,
    },
}

impl MailboxConfig {
    /// A bounded mailbox (a `capacity` of 0 is taken as 1).
    pub fn bounded(capacity: usize, overflow: Overflow) -> Self {
        MailboxConfig::Bounded {
            capacity: capacity.max(1),
            overflow,
        }
    }
}

/// A producer waiting for room.
pub(crate) enum RoomWaiter {
    Thread(Thread),
    Task(Waker),
}

impl RoomWaiter {
    fn wake(self) {
        match self {
            RoomWaiter::Thread(t) => t.unpark(),
            RoomWaiter::Task(w) => w.wake(),
        }
    }
}

/// The bookkeeping of a bounded mailbox.
pub(crate) struct Bound {
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    /// Queued messages. `Fail`, `DropNewest`: reserved places, incremented
    /// by senders (CAS), decremented by the owner. `DropOldest`: the length
    /// of its queue, stored under that queue's lock (`set_len`).
    len: AtomicUsize,
    /// Whether `waiters` may be non-empty (read by the owner on every pop).
    has_waiters: AtomicBool,
    waiters: Mutex<VecDeque<RoomWaiter>>,
}

impl Bound {
    pub(crate) fn new(capacity: usize, overflow: Overflow) -> Self {
        Bound {
            capacity: capacity.max(1),
            overflow,
            len: AtomicUsize::new(0),
            has_waiters: AtomicBool::new(false),
            waiters: Mutex::new(VecDeque::new()),
        }
    }

    /// Reserves a place; false if the mailbox is full.
    pub(crate) fn try_reserve(&self) -> bool {
        let mut len = self.len.load(Ordering::SeqCst);
        loop {
            if len >= self.capacity {
                return false;
            }
            match self
                .len
                .compare_exchange_weak(len, len + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(actual) => len = actual,
            }
        }
    }

    /// Owner: a message left the queue; wake the waiting producers.
    pub(crate) fn release(&self) {
        self.len.fetch_sub(1, Ordering::SeqCst);
        if self.has_waiters.load(Ordering::SeqCst) {
            self.wake_all();
        }
    }

    /// Registers a waiter; the caller must retry its reservation afterwards.
    pub(crate) fn register(&self, waiter: RoomWaiter) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        waiters.push_back(waiter);
        self.has_waiters.store(true, Ordering::SeqCst);
    }

    /// Wakes every waiter (on release, and when the mailbox closes).
    pub(crate) fn wake_all(&self) {
        let woken: VecDeque<RoomWaiter> = {
            let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            self.has_waiters.store(false, Ordering::SeqCst);
            std::mem::take(&mut *waiters)
        };
        for w in woken {
            w.wake();
        }
    }

    /// `DropOldest`: publishes its queue's length, from under the queue's
    /// lock (so the stores come in the queue's order). Only `queued()` and
    /// `len_hint` read it; nothing is synchronised through it.
    pub(crate) fn set_len(&self, len: usize) {
        self.len.store(len, Ordering::Relaxed);
    }

    /// Queued (reserved) messages, a snapshot.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

//! The user queue of a `DropOldest` mailbox: a FIFO under a mutex, in which
//! the producer that finds the mailbox full takes the oldest message out
//! itself, at enqueue.
//!
//! # Why not the segmented queue
//!
//! Under `DropOldest` the message that must leave is the *oldest*, and the
//! segmented queue (`queue.rs`) lets only its single consumer, the mailbox
//! owner, remove it. A producer that finds the mailbox full could then only
//! push past the capacity and leave the trimming to the owner, which trims
//! when it next takes a message: an owner stuck in a handler let the queue
//! grow without bound, exactly when the bound mattered, and the drops were
//! counted late. Letting producers pop the segmented queue would make its
//! head a contended CAS target and its blocks reclaimable under concurrent
//! readers (hazard pointers or epochs), a cost every mailbox's pop would pay
//! for a rare policy. So a `DropOldest` mailbox puts its user messages here
//! instead, and nowhere else: its segmented queue stays empty.
//!
//! # Ground rules
//!
//! * Every operation holds the mutex for a few instructions: take the
//!   oldest out if the queue is full, append, publish the length. The
//!   displaced message is handed back and dropped (dead-lettered) by the
//!   caller *after* the lock is released, so no user code (a `Drop`, a
//!   dead-letter listener that tells this very actor) ever runs under it.
//! * The queue never holds more than `capacity` messages: a full queue
//!   loses its oldest message in the same critical section that appends the
//!   new one. No slack.
//! * Only the mailbox owner [`pop`](DropOldestQueue::pop)s; producers
//!   [`push`](DropOldestQueue::push) and never make the queue shorter (a
//!   displacing push keeps it full). So a queue the owner found non-empty is
//!   still non-empty when it pops.
//! * The mailbox state word's protocol is unchanged: a producer appends
//!   (and unlocks) before it requests a run, and the owner looks at the
//!   queue (under the lock) after it has cleared the arrival flags, so an
//!   owner whose release fails because of that request finds the message.
//! * The length is also stored in the mailbox's `Bound` for `queued()`, a
//!   snapshot that synchronises nothing.
//!
//! The cost: a lock per send and per receive, on this policy only. The
//! unbounded and the other bounded mailboxes never touch this module.

use std::collections::VecDeque;

use super::bound::Bound;
use crate::sync::Mutex;

/// The bounded FIFO of a `DropOldest` mailbox (see the module header).
pub(crate) struct DropOldestQueue<M> {
    /// The most messages the queue holds.
    capacity: usize,
    queue: Mutex<VecDeque<M>>,
}

impl<M> DropOldestQueue<M> {
    /// An empty queue; allocates nothing until the first push.
    pub(crate) fn new(capacity: usize) -> Self {
        DropOldestQueue {
            capacity: capacity.max(1),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// Appends `msg`; if the queue was full, takes the oldest message out
    /// first and returns it (the caller dead-letters it). Any thread.
    pub(crate) fn push(&self, bound: &Bound, msg: M) -> Option<M> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let displaced = if queue.len() >= self.capacity {
            queue.pop_front()
        } else {
            if queue.len() == queue.capacity() {
                // Grow by doubling, as `push_back` would, but ask for no
                // more slots than the capacity: the bound is about memory too.
                let more = queue.capacity().max(4).min(self.capacity - queue.len());
                queue.reserve_exact(more);
            }
            None
        };
        queue.push_back(msg);
        bound.set_len(queue.len());
        displaced
    }

    /// The oldest message, if any. Only the mailbox owner calls it (it is
    /// safe for anyone; the owner-only rule is what keeps "non-empty" true
    /// between a look and a pop, see the module header).
    pub(crate) fn pop(&self, bound: &Bound) -> Option<M> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let msg = queue.pop_front();
        bound.set_len(queue.len());
        msg
    }

    /// Whether the queue is empty (under the lock, so an owner that has
    /// cleared the arrival flags sees every message requested before). Out
    /// of line: the owner's look at an empty mailbox, inlined in the run
    /// loop of every actor, only calls it for a `DropOldest` one.
    #[cold]
    #[inline(never)]
    pub(crate) fn is_empty(&self) -> bool {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mailbox::bound::Overflow;

    #[test]
    fn keeps_the_newest_and_never_holds_more_than_the_capacity() {
        let bound = Bound::new(3, Overflow::DropOldest);
        let q = DropOldestQueue::new(3);
        let mut displaced = Vec::new();
        for i in 0..10 {
            displaced.extend(q.push(&bound, vec![i]));
            assert!(bound.len() <= 3);
        }
        assert_eq!(displaced, (0..7).map(|i| vec![i]).collect::<Vec<_>>());
        assert_eq!(bound.len(), 3);
        for i in 7..10 {
            assert_eq!(q.pop(&bound), Some(vec![i]));
        }
        assert!(q.is_empty());
        assert_eq!(bound.len(), 0);
        q.push(&bound, vec![99]); // dropped with the queue (Miri checks for leaks)
    }

    #[test]
    fn allocates_no_more_slots_than_the_capacity() {
        let bound = Bound::new(5, Overflow::DropOldest);
        let q = DropOldestQueue::new(5);
        for i in 0..100 {
            q.push(&bound, i);
        }
        let queue = q.queue.lock().unwrap();
        assert_eq!(queue.len(), 5);
        assert!(queue.capacity() <= 5, "{} slots", queue.capacity());
    }
}

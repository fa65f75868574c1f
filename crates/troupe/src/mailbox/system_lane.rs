//! The system-message lane: a lock-free stack of system messages (Treiber's
//! stack) that the mailbox owner takes whole and reverses into FIFO order.
//!
//! # Ground rules
//!
//! * Any thread may [`push`](SystemLane::push). Only the mailbox owner calls
//!   [`take_all`](SystemLane::take_all).
//! * A node is private to its pusher until the CAS that links it as the new
//!   head (release); `take_all` swaps the whole list out (acquire), after
//!   which the taker owns every node it got.
//! * There is no single-node pop, so the ABA problem cannot arise: a pusher
//!   whose CAS succeeds has linked its node to exactly the current head, even
//!   if that head's address was freed and reused meanwhile.
//!
//! One pointer per actor, against 32 bytes for a mutex and a vector: system
//! messages are rare, idle actors are many.

use std::ptr;

use crate::sync::{AtomicPtr, Ordering};

struct Node<S> {
    msg: S,
    next: *mut Node<S>,
}

/// A lock-free multi-producer stack drained whole by one consumer.
pub(crate) struct SystemLane<S> {
    head: AtomicPtr<Node<S>>,
}

// SAFETY: messages move from pushers to the consumer (`S: Send`); the only
// shared state is the atomic head, and each node is owned by one thread at a
// time (its pusher, then the list, then the taker).
unsafe impl<S: Send> Send for SystemLane<S> {}
// SAFETY: `&SystemLane` only allows pushing (a message moves in, `S: Send`)
// and taking the whole list (the messages move to the taker, `S: Send`); the
// only shared state is the atomic head, and no `&S` is shared between threads.
unsafe impl<S: Send> Sync for SystemLane<S> {}

impl<S> SystemLane<S> {
    pub(crate) fn new() -> Self {
        SystemLane {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Pushes a message.
    pub(crate) fn push(&self, msg: S) {
        let node = Box::into_raw(Box::new(Node {
            msg,
            next: ptr::null_mut(),
        }));
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // `node` is private to this thread until the CAS below
            // publishes it.
            // SAFETY: by the argument just above.
            unsafe { (*node).next = head };
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Moves every message into `out`, oldest first.
    pub(crate) fn take_all(&self, out: &mut Vec<S>) {
        let mut node = self.head.swap(ptr::null_mut(), Ordering::Acquire);
        let start = out.len();
        while !node.is_null() {
            // the swap made this thread the owner of the whole list;
            // every node came from `Box::into_raw` in `push` and is visited
            // once.
            // SAFETY: by the argument just above.
            let boxed = unsafe { Box::from_raw(node) };
            node = boxed.next;
            out.push(boxed.msg);
        }
        // The stack yields newest first; system messages are handled in the
        // order they were sent.
        out[start..].reverse();
    }
}

impl<S> Drop for SystemLane<S> {
    fn drop(&mut self) {
        let mut rest = Vec::new();
        self.take_all(&mut rest);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn takes_in_push_order_and_drops_leftovers() {
        let lane = SystemLane::new();
        for i in 0..5 {
            lane.push(vec![i]);
        }
        let mut out = vec![vec![99]];
        lane.take_all(&mut out);
        assert_eq!(
            out,
            vec![vec![99], vec![0], vec![1], vec![2], vec![3], vec![4]]
        );
        lane.push(vec![7]); // dropped with the lane (Miri checks for leaks)
    }
}

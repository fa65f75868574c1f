//! Model tests of the mailbox: the segmented queue, the ownership protocol
//! of the state word, and a `DropOldest` mailbox's queue (a lock, producers
//! that displace the oldest message) under that same protocol.
//!
//! Each test body runs through [`model`]: under `RUSTFLAGS="--cfg loom"` loom
//! explores the thread interleavings (bounded preemptions, see `model`); in a
//! normal build the same body runs many times on real threads, which also
//! makes it a Miri target. Run the loom variant with
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --lib --release mailbox::models`.

use super::bound::{MailboxConfig, Overflow};
use super::queue::SegQueue;
use super::{Mailbox, Offer, Request};
use std::mem::ManuallyDrop;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::{Arc, Mutex};
#[cfg(loom)]
use loom::thread;

#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::{Arc, Mutex};
#[cfg(not(loom))]
use std::thread;

/// Runs `f` under loom's model checker, or repeatedly on real threads.
fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    crate::sync::loom_check(f);
    #[cfg(not(loom))]
    {
        let rounds = if cfg!(miri) { 5 } else { 200 };
        for _ in 0..rounds {
            f();
        }
    }
}

#[test]
fn queue_keeps_per_producer_fifo_across_blocks() {
    model(|| {
        let q = Arc::new(SegQueue::new());
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || {
                    q.push((p, 0));
                    q.push((p, 1));
                })
            })
            .collect();
        // Pop concurrently with the producers a bounded number of times (an
        // unbounded retry loop would be a spin loop to loom), then the rest.
        let mut next = [0; 2];
        let mut check = |(p, i): (usize, i32)| {
            assert_eq!(next[p], i, "producer {p} out of order");
            next[p] += 1;
        };
        for _ in 0..3 {
            // SAFETY: this thread is the queue's only consumer.
            if let Some(v) = unsafe { q.pop() } {
                check(v);
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        // SAFETY: this thread is still the queue's only consumer.
        while let Some(v) = unsafe { q.pop() } {
            check(v);
        }
        assert_eq!(next, [2, 2], "a value was lost");
        // SAFETY: this thread is still the queue's only consumer.
        assert!(unsafe { q.is_empty() });
    });
}

/// Counts its drops on a shared counter.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn queue_drops_unconsumed_values_exactly_once() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let q = Arc::new(SegQueue::new());
        let q2 = q.clone();
        let d2 = drops.clone();
        let t = thread::spawn(move || {
            for _ in 0..3 {
                q2.push(Counted(d2.clone()));
            }
        });
        // Pop while the producer may still be pushing: the value popped (if
        // any) is dropped here, the rest with the queue.
        // SAFETY: this thread is the queue's only consumer.
        drop(unsafe { q.pop() });
        t.join().unwrap();
        drop(q);
        // Every value dropped once: none leaked, none dropped twice (loom and
        // Miri also check for leaks and double frees of the blocks).
        assert_eq!(drops.load(Ordering::SeqCst), 3);
    });
}

/// A stand-in for the dispatcher and the actor's run: whoever acquires the
/// mailbox consumes it as the actor cell does, asserting it is alone.
struct Harness {
    mailbox: Mailbox<u32, u32>,
    owner_present: AtomicBool,
    handled: AtomicUsize,
    dead: AtomicUsize,
    /// User messages taken out by a sender under `DropOldest`.
    displaced: AtomicUsize,
    /// The user messages the owner handled, in order (only when a model
    /// checks the order: the lock is one more step for loom to explore).
    log: Option<Mutex<Vec<u32>>>,
}

impl Harness {
    fn with(config: MailboxConfig, log: bool) -> Arc<Self> {
        Arc::new(Harness {
            mailbox: Mailbox::new(config),
            owner_present: AtomicBool::new(false),
            handled: AtomicUsize::new(0),
            dead: AtomicUsize::new(0),
            displaced: AtomicUsize::new(0),
            log: log.then(|| Mutex::new(Vec::new())),
        })
    }

    /// A send, as `cell::offer` makes it: offer, then act on the request.
    fn offer(&self, msg: u32) {
        let msg = ManuallyDrop::new(msg);
        let displaced = |_oldest: u32| {
            self.displaced.fetch_add(1, Ordering::SeqCst);
        };
        // `msg` is owned here and never dropped here (`ManuallyDrop`).
        // SAFETY: by the argument just above.
        match unsafe { self.mailbox.offer_user(&*msg, displaced) } {
            Offer::Pushed(request) => self.act(request),
            Offer::Full => unreachable!("the models offer to mailboxes with room"),
        }
    }

    /// The user messages handled, in order.
    fn handled_in_order(&self) -> Vec<u32> {
        let log = self.log.as_ref().expect("a harness with a log");
        log.lock().unwrap().clone()
    }

    fn act(&self, request: Request) {
        match request {
            Request::Owned => {}
            Request::Schedule => self.run(),
            Request::Drain => self.drain_closed(),
        }
    }

    /// The cell's run loop, minus the actor.
    fn run(&self) {
        assert!(
            !self.owner_present.swap(true, Ordering::SeqCst),
            "two owners"
        );
        loop {
            let mut sys = Vec::new();
            // SAFETY: we own the mailbox (we won `SCHEDULED`).
            unsafe { self.mailbox.take_system(&mut sys) };
            self.handled.fetch_add(sys.len(), Ordering::SeqCst);
            // we own the mailbox (we won `SCHEDULED` and have not
            // released it).
            // SAFETY: by the argument just above.
            while let Some(msg) = unsafe { self.mailbox.pop_user() } {
                if let Some(log) = &self.log {
                    log.lock().unwrap().push(msg);
                }
                self.handled.fetch_add(1, Ordering::SeqCst);
            }
            self.owner_present.store(false, Ordering::SeqCst);
            // we still own the mailbox (not released yet); after a
            // successful release we touch nothing.
            // SAFETY: by the argument just above.
            if unsafe { self.mailbox.try_release(true) } {
                return;
            }
            assert!(
                !self.owner_present.swap(true, Ordering::SeqCst),
                "two owners"
            );
        }
    }

    /// The owner closes the mailbox as the cell's run loop does: it takes
    /// the system lane first (which clears the arrival flags), then the
    /// handler stops the actor (close), then the final release drains before
    /// it tries (`drain_closed`, the same order as `ActorCell::release_closed`).
    fn run_and_close(&self) {
        assert!(
            !self.owner_present.swap(true, Ordering::SeqCst),
            "two owners"
        );
        let mut sys = Vec::new();
        // SAFETY: we own the mailbox.
        unsafe { self.mailbox.take_system(&mut sys) };
        self.handled.fetch_add(sys.len(), Ordering::SeqCst);
        self.mailbox.state.close();
        self.owner_present.store(false, Ordering::SeqCst);
        self.drain_closed();
    }

    /// The drain of a closed mailbox (by its last owner or by a sender):
    /// drain, then try to release.
    fn drain_closed(&self) {
        loop {
            let mut sys = Vec::new();
            // SAFETY: we own the closed mailbox.
            unsafe { self.mailbox.take_system(&mut sys) };
            self.dead.fetch_add(sys.len(), Ordering::SeqCst);
            // we own the closed mailbox (we acquired it and have not
            // released it).
            // SAFETY: by the argument just above.
            while unsafe { self.mailbox.pop_user() }.is_some() {
                self.dead.fetch_add(1, Ordering::SeqCst);
            }
            if self.mailbox.state.try_release_closed() {
                return;
            }
        }
    }
}

/// A `DropOldest` mailbox of capacity 1: every second user message in a
/// model finds it full, so the displacing path races the owner's run and
/// release.
fn drop_oldest() -> MailboxConfig {
    MailboxConfig::bounded(1, Overflow::DropOldest)
}

/// Two senders race the owner's run: every message is handled (or, under
/// `DropOldest`, displaced by a sender), and the mailbox ends idle.
fn no_message_is_stranded(config: MailboxConfig) {
    model(move || {
        let h = Harness::with(config, false);
        let sender = {
            let h = h.clone();
            thread::spawn(move || {
                h.offer(1);
                h.act(h.mailbox.push_system(7));
            })
        };
        h.offer(2);
        sender.join().unwrap();
        // Every message was handled by some owner (or displaced), and the
        // mailbox is idle.
        assert_eq!(
            h.handled.load(Ordering::SeqCst) + h.displaced.load(Ordering::SeqCst),
            3
        );
        assert!(h.mailbox.state.is_idle(), "the mailbox was left owned");
        // all threads have finished and the mailbox is idle, so this
        // thread is the only one that could consume it.
        // SAFETY: by the argument just above.
        assert!(unsafe { h.mailbox.user_is_empty() });
        // SAFETY: as just above.
        let stranded = unsafe { h.mailbox.pop_user() };
        assert!(stranded.is_none(), "a message was stranded");
    });
}

#[test]
fn no_message_is_stranded_and_owners_never_overlap() {
    no_message_is_stranded(MailboxConfig::Unbounded);
}

#[test]
fn drop_oldest_strands_no_message_and_owners_never_overlap() {
    no_message_is_stranded(drop_oldest());
}

/// A sender races the owner's close: every message is handled, dead-
/// lettered by the close, or (under `DropOldest`) displaced by a sender.
fn messages_racing_a_close(config: MailboxConfig) {
    model(move || {
        let h = Harness::with(config, false);
        // The main thread starts as the owner (as a freshly spawned cell does).
        // `&1` points to a plain `u32` (`Copy`: reading it moves nothing
        // out), and the mailbox is empty, so nothing is displaced.
        // SAFETY: by the argument just above.
        let first = unsafe { h.mailbox.offer_user(&1, |_| unreachable!()) };
        assert_eq!(first, Offer::Pushed(Request::Schedule));
        let sender = {
            let h = h.clone();
            thread::spawn(move || {
                // The user message last: nothing after it can rescue it if
                // the owner's final release forgets to look at the queue.
                h.act(h.mailbox.push_system(3));
                h.offer(2);
            })
        };
        // Producers never empty a queue (a displacing send keeps it full),
        // so the owner's message is still there, or the one that displaced it.
        // SAFETY: we own the mailbox.
        assert!(unsafe { h.mailbox.pop_user() }.is_some());
        h.handled.fetch_add(1, Ordering::SeqCst);
        h.run_and_close();
        sender.join().unwrap();
        assert_eq!(
            h.handled.load(Ordering::SeqCst)
                + h.dead.load(Ordering::SeqCst)
                + h.displaced.load(Ordering::SeqCst),
            3,
            "a message was lost"
        );
        assert!(h.mailbox.state.is_closed());
    });
}

#[test]
fn messages_racing_a_close_are_handled_or_dead_lettered() {
    messages_racing_a_close(MailboxConfig::Unbounded);
}

#[test]
fn drop_oldest_messages_racing_a_close_are_handled_dead_lettered_or_displaced() {
    messages_racing_a_close(drop_oldest());
}

/// `DropOldest` at enqueue: two senders (one of them also the owner when it
/// wins the mailbox) fill a mailbox of capacity 1. No sender ever sees it
/// hold more than one message; every message is handled or displaced
/// exactly once; each sender's handled messages keep their order; the
/// message that entered last is never displaced, so it is handled.
#[test]
fn drop_oldest_bounds_at_enqueue_and_keeps_the_newest() {
    model(|| {
        let h = Harness::with(drop_oldest(), true);
        let at_most_one = |h: &Harness| {
            let queued = h.mailbox.bound().expect("bounded").len();
            assert!(queued <= 1, "{queued} queued in a mailbox of capacity 1");
        };
        let sender = {
            let h = h.clone();
            thread::spawn(move || {
                h.offer(10);
                at_most_one(&h);
                h.offer(11);
                at_most_one(&h);
            })
        };
        h.offer(20);
        at_most_one(&h);
        sender.join().unwrap();
        assert_eq!(
            h.handled.load(Ordering::SeqCst) + h.displaced.load(Ordering::SeqCst),
            3,
            "a message was lost or counted twice"
        );
        let handled = h.handled_in_order();
        if let (Some(a), Some(b)) = (
            handled.iter().position(|&m| m == 10),
            handled.iter().position(|&m| m == 11),
        ) {
            assert!(a < b, "one sender's messages out of order: {handled:?}");
        }
        assert!(
            handled.contains(&11) || handled.contains(&20),
            "the newest message was displaced: {handled:?}"
        );
        assert!(h.mailbox.state.is_idle(), "the mailbox was left owned");
        // all threads have finished and the mailbox is idle, so this
        // thread is the only one that could consume it.
        // SAFETY: by the argument just above.
        assert!(unsafe { h.mailbox.user_is_empty() });
        // SAFETY: as just above.
        let stranded = unsafe { h.mailbox.pop_user() };
        assert!(stranded.is_none(), "a message was stranded");
        assert_eq!(h.mailbox.bound().expect("bounded").len(), 0);
    });
}

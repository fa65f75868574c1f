//! Model tests of the mailbox: the segmented queue and the ownership
//! protocol of the state word.
//!
//! Each test body runs through [`model`]: under `RUSTFLAGS="--cfg loom"` loom
//! explores the thread interleavings (bounded preemptions, see `model`); in a
//! normal build the same body runs many times on real threads, which also
//! makes it a Miri target. Run the loom variant with
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --lib --release mailbox::models`.

use super::queue::SegQueue;
use super::{Mailbox, Request};

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::Arc;
#[cfg(loom)]
use loom::thread;

#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::Arc;
#[cfg(not(loom))]
use std::thread;

/// Runs `f` under loom's model checker, or repeatedly on real threads.
fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(3);
        }
        builder.check(f);
    }
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
}

impl Harness {
    fn new() -> Arc<Self> {
        Arc::new(Harness {
            mailbox: Mailbox::new(),
            owner_present: AtomicBool::new(false),
            handled: AtomicUsize::new(0),
            dead: AtomicUsize::new(0),
        })
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
            while unsafe { self.mailbox.pop_user() }.is_some() {
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

#[test]
fn no_message_is_stranded_and_owners_never_overlap() {
    model(|| {
        let h = Harness::new();
        let sender = {
            let h = h.clone();
            thread::spawn(move || {
                h.act(h.mailbox.push_user(1));
                h.act(h.mailbox.push_system(7));
            })
        };
        h.act(h.mailbox.push_user(2));
        sender.join().unwrap();
        // Every message was handled by some owner, and the mailbox is idle.
        assert_eq!(h.handled.load(Ordering::SeqCst), 3);
        assert!(h.mailbox.state.is_idle(), "the mailbox was left owned");
        // SAFETY: all threads have finished; nobody owns the mailbox.
        assert!(unsafe { h.mailbox.user_is_empty() });
    });
}

#[test]
fn messages_racing_a_close_are_handled_or_dead_lettered() {
    model(|| {
        let h = Harness::new();
        // The main thread starts as the owner (as a freshly spawned cell does).
        let first = h.mailbox.push_user(1);
        assert_eq!(first, Request::Schedule);
        let sender = {
            let h = h.clone();
            thread::spawn(move || {
                // The user message last: nothing after it can rescue it if
                // the owner's final release forgets to look at the queue.
                h.act(h.mailbox.push_system(3));
                h.act(h.mailbox.push_user(2));
            })
        };
        // SAFETY: we own the mailbox.
        assert!(unsafe { h.mailbox.pop_user() }.is_some());
        h.handled.fetch_add(1, Ordering::SeqCst);
        h.run_and_close();
        sender.join().unwrap();
        assert_eq!(
            h.handled.load(Ordering::SeqCst) + h.dead.load(Ordering::SeqCst),
            3,
            "a message was lost"
        );
        assert!(h.mailbox.state.is_closed());
    });
}

//! The user-message queue of a mailbox: an unbounded, segmented, lock-free
//! multi-producer single-consumer FIFO.
//!
//! # Design
//!
//! Messages live in fixed-size blocks of [`BLOCK_CAP`] slots linked into a
//! list, in the manner of the segmented queues of Michael & Scott's family
//! (one allocation per block of messages, not one per message). A global
//! *position* counts slots: position `p` lives in block `p / LAP`, slot
//! `p % LAP`. Each block has `LAP = BLOCK_CAP + 1` positions; the last one is
//! a *sentinel* that no message ever uses: while the tail sits on it, the
//! producer that filled the block's last slot is installing the next block and
//! other producers wait.
//!
//! # Ground rules
//!
//! * Any number of threads may [`push`](SegQueue::push). Only one thread at a
//!   time may call the consumer methods ([`pop`](SegQueue::pop),
//!   [`is_empty`](SegQueue::is_empty)); for a mailbox that is the thread that
//!   owns the `SCHEDULED` bit of the mailbox state word (see `mailbox/state.rs`).
//!   The consumer methods are `unsafe` to state exactly that.
//! * A producer claims a position with a CAS on `tail_pos`, then writes its
//!   slot and publishes it by setting the slot's `ready` flag (release). The
//!   consumer only reads a slot whose `ready` flag it observed (acquire).
//! * A slot that is claimed but not yet `ready` makes the queue look empty to
//!   the consumer. That is safe for a mailbox because the producer schedules
//!   the actor only *after* publishing (see `mailbox/state.rs`), so the message
//!   is never stranded.
//!
//! # State
//!
//! | field        | written by                              | read by            |
//! |--------------|-----------------------------------------|--------------------|
//! | `tail_pos`   | producers (CAS; installer's `fetch_add`) | producers         |
//! | `tail_block` | the first producer and block installers | producers          |
//! | `first_block`| the first producer (once)               | consumer (once)    |
//! | `head`       | consumer only                           | consumer only      |
//! | `consumed`   | consumer (relaxed, after each pop)      | anyone (estimates) |
//! | slot `value` | its claiming producer, then consumer    | consumer           |
//! | slot `ready` | its claiming producer (release)         | consumer (acquire) |
//! | block `next` | the installer of the next block         | consumer           |
//!
//! Blocks are allocated lazily (an actor that never receives a message owns
//! none) and freed by the consumer once it has read their last slot: by then
//! every producer that claimed a slot in the block has published it and no
//! longer touches the block, and the installer wrote `next` before publishing
//! the last slot.
//!
//! # Safety
//!
//! Every dereference of a block pointer is justified by the lifetime rule
//! above: a producer dereferences a block only after its CAS proved the block
//! is the current tail block with an unpublished slot of its own, so the block
//! cannot have been freed; the consumer frees a block only after reading all of
//! its slots.

use std::mem::MaybeUninit;
use std::ptr;

use crate::sync::{spin_hint, AtomicBool, AtomicPtr, AtomicUsize, Ordering, UnsafeCell};

/// Message slots per block. Small under loom so that models cross blocks.
#[cfg(not(loom))]
pub(crate) const BLOCK_CAP: usize = 31;
/// Message slots per block. Small under loom so that models cross blocks.
#[cfg(loom)]
pub(crate) const BLOCK_CAP: usize = 2;

/// Positions per block: the slots plus the sentinel position.
const LAP: usize = BLOCK_CAP + 1;

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    ready: AtomicBool,
}

struct Block<T> {
    slots: [Slot<T>; BLOCK_CAP],
    next: AtomicPtr<Block<T>>,
}

impl<T> Block<T> {
    fn boxed() -> Box<Self> {
        Box::new(Block {
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                ready: AtomicBool::new(false),
            }),
            next: AtomicPtr::new(ptr::null_mut()),
        })
    }
}

/// The consumer's cursor.
struct Head<T> {
    pos: usize,
    block: *mut Block<T>,
}

/// Unbounded MPSC FIFO of `T` (segmented; see the module header).
pub(crate) struct SegQueue<T> {
    tail_pos: AtomicUsize,
    /// The consumer's position, published (relaxed) after each pop so that
    /// anyone can estimate the length; never used for synchronisation.
    consumed: AtomicUsize,
    tail_block: AtomicPtr<Block<T>>,
    first_block: AtomicPtr<Block<T>>,
    head: UnsafeCell<Head<T>>,
}

// SAFETY: values of `T` move from producer threads to the consumer thread, so
// `T: Send` suffices; all shared state is atomics, and `head` is touched only by
// the single consumer (a ground rule enforced by the unsafe consumer methods).
unsafe impl<T: Send> Send for SegQueue<T> {}
// SAFETY: `&SegQueue` lets producers push (values move to the consumer, so
// `T: Send` suffices) and the one consumer pop (the unsafe consumer methods
// require a single consumer, so `head` is never touched by two threads); all
// other shared state is atomics, and no `&T` is ever shared between threads.
unsafe impl<T: Send> Sync for SegQueue<T> {}

impl<T> SegQueue<T> {
    /// An empty queue; allocates nothing until the first push.
    pub(crate) fn new() -> Self {
        SegQueue {
            tail_pos: AtomicUsize::new(0),
            consumed: AtomicUsize::new(0),
            tail_block: AtomicPtr::new(ptr::null_mut()),
            first_block: AtomicPtr::new(ptr::null_mut()),
            head: UnsafeCell::new(Head {
                pos: 0,
                block: ptr::null_mut(),
            }),
        }
    }

    /// Appends `value`. Lock-free except while another producer installs the
    /// next block (a handful of instructions), when it spins.
    #[allow(dead_code)] // used by the mailbox's tests and models
    pub(crate) fn push(&self, value: T) {
        let value = std::mem::ManuallyDrop::new(value);
        // `value` is a valid `T` owned here and never dropped here
        // (`ManuallyDrop`): `push_read` moves it into the queue.
        // SAFETY: by the argument just above.
        unsafe { self.push_read(&*value) }
    }

    /// Appends the value at `src`, moving it out: the caller must treat it
    /// as moved (not use or drop it) afterwards. The value is read once,
    /// straight into its slot and only after the slot is claimed: a sender
    /// that has just written the message (with stores of other widths than
    /// the copy's loads) then pays no store-to-load forwarding stall, which
    /// a by-value copy made early (LLVM's choice, varying with unrelated
    /// code) did on every send.
    ///
    /// # Safety
    ///
    /// `src` points to a valid `T` that the caller owns and gives up.
    pub(crate) unsafe fn push_read(&self, src: *const T) {
        let mut next_block: Option<Box<Block<T>>> = None;
        loop {
            let pos = self.tail_pos.load(Ordering::Acquire);
            let offset = pos % LAP;
            if offset == BLOCK_CAP {
                // Another producer is installing the next block.
                spin_hint();
                continue;
            }
            let mut block = self.tail_block.load(Ordering::Acquire);
            if block.is_null() {
                // The very first push: install the first block.
                let first = Box::into_raw(Block::boxed());
                match self.tail_block.compare_exchange(
                    ptr::null_mut(),
                    first,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        self.first_block.store(first, Ordering::Release);
                        block = first;
                    }
                    Err(current) => {
                        // `first` came from `Box::into_raw` above and
                        // was never shared: the CAS that would have published
                        // it failed.
                        // SAFETY: by the argument just above.
                        drop(unsafe { Box::from_raw(first) });
                        block = current;
                    }
                }
            }
            if offset + 1 == BLOCK_CAP && next_block.is_none() {
                // Allocate before claiming the last slot, so the window in which
                // other producers wait for the installation stays short.
                next_block = Some(Block::boxed());
            }
            if self
                .tail_pos
                .compare_exchange_weak(pos, pos + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                spin_hint();
                continue;
            }
            // the successful CAS claimed position `pos` in `block`: the
            // tail did not move between our load of `pos` and the CAS, and a
            // block is replaced as tail only after its last position is
            // claimed, so `block` is the block of `pos`. The consumer frees a
            // block only after reading all its slots, including ours, which we
            // have not published.
            // SAFETY: by the argument just above.
            let block_ref = unsafe { &*block };
            if offset + 1 == BLOCK_CAP {
                let next = Box::into_raw(next_block.take().expect("allocated above"));
                // Publish the next block before moving the tail past the sentinel,
                // and link it before publishing our slot, so the consumer finds
                // `next` as soon as it has read the last slot.
                self.tail_block.store(next, Ordering::Release);
                self.tail_pos.fetch_add(1, Ordering::Release);
                block_ref.next.store(next, Ordering::Release);
            }
            let slot = &block_ref.slots[offset];
            // Position `pos` is ours alone (claimed by the CAS), and the
            // consumer does not read the slot before `ready` is set. `src` is
            // valid and given up by the caller (this function's contract), so
            // reading it once moves the value into the slot.
            let write = |p: *mut MaybeUninit<T>| {
                // SAFETY: by the argument just above.
                unsafe { (*p).write(ptr::read(src)) };
            };
            slot.value.with_mut(write);
            slot.ready.store(true, Ordering::Release);
            return;
        }
    }

    /// Removes the oldest published message, or `None` if the queue is empty
    /// (or its oldest claimed slot is still being written).
    ///
    /// # Safety
    ///
    /// The caller must be the only consumer: no other thread may run `pop` or
    /// `is_empty` on this queue concurrently.
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        // the caller is the single consumer (this function's contract),
        // and a value `pop_uninit` returns was written by its producer
        // before the slot was published.
        // SAFETY: by the argument just above.
        unsafe { self.pop_uninit().map(|value| value.assume_init()) }
    }

    /// [`pop`](Self::pop), with the value still wrapped in `MaybeUninit`
    /// (it is initialised). Moved as a whole block of bytes, the value is
    /// copied the way it was stored; see `ActorCell::invoke_next` for why
    /// that matters.
    ///
    /// # Safety
    ///
    /// As for [`pop`](Self::pop).
    #[inline(always)]
    pub(crate) unsafe fn pop_uninit(&self) -> Option<MaybeUninit<T>> {
        self.head.with_mut(|head_ptr| {
            // SAFETY: the caller is the single consumer, so `head` is ours.
            let head = unsafe { &mut *head_ptr };
            if head.block.is_null() {
                head.block = self.first_block.load(Ordering::Acquire);
                if head.block.is_null() {
                    return None;
                }
            }
            let offset = head.pos % LAP;
            // `head.block` holds the position `head.pos`; the consumer
            // has not freed it since it still has unread slots.
            // SAFETY: by the argument just above.
            let block = unsafe { &*head.block };
            let slot = &block.slots[offset];
            if !slot.ready.load(Ordering::Acquire) {
                return None;
            }
            // `ready` (acquire) shows the producer's write is complete;
            // the slot is read exactly once because `head.pos` advances past
            // it.
            // SAFETY: by the argument just above.
            let value = slot.value.with(|p| unsafe { p.read() });
            head.pos += 1;
            if offset + 1 == BLOCK_CAP {
                // The last slot is read: move to the next block (linked before
                // that slot was published) and free this one.
                let next = block.next.load(Ordering::Acquire);
                debug_assert!(!next.is_null());
                let old = head.block;
                head.block = next;
                // Skip the sentinel position.
                head.pos += 1;
                // every slot of `old` has been read, so no producer
                // still touches it (see the module's lifetime rule), and the
                // tail has moved on to `next`; it came from `Box::into_raw`.
                // SAFETY: by the argument just above.
                drop(unsafe { Box::from_raw(old) });
            }
            self.consumed.store(head.pos, Ordering::Relaxed);
            Some(value)
        })
    }

    /// About how many messages are queued (claimed, not yet popped): a
    /// snapshot for load balancing, exact when nothing moves. Any thread.
    pub(crate) fn len_hint(&self) -> usize {
        let slots = |pos: usize| pos - pos / LAP;
        let tail = slots(self.tail_pos.load(Ordering::Relaxed));
        let head = slots(self.consumed.load(Ordering::Relaxed));
        tail.saturating_sub(head)
    }

    /// Whether the consumer would find nothing to pop right now.
    ///
    /// # Safety
    ///
    /// As for [`pop`](Self::pop): only the single consumer may call it.
    pub(crate) unsafe fn is_empty(&self) -> bool {
        self.head.with(|head_ptr| {
            // SAFETY: the caller is the single consumer, so `head` is ours.
            let head = unsafe { &*head_ptr };
            let block = if head.block.is_null() {
                self.first_block.load(Ordering::Acquire)
            } else {
                head.block
            };
            if block.is_null() {
                return true;
            }
            // `block` is the consumer's current block (or the first
            // one, not yet reached): it still has unread slots, including
            // `head.pos`, and a block is freed only by the consumer after its
            // last slot is read, so it is live.
            // SAFETY: by the argument just above.
            let slot = unsafe { &(*block).slots[head.pos % LAP] };
            !slot.ready.load(Ordering::Acquire)
        })
    }
}

impl<T> Drop for SegQueue<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` proves no producer or other consumer is active.
        while unsafe { self.pop() }.is_some() {}
        // What is left is the current block (and nothing after it: a successor
        // exists only once the current block's last slot is published, which
        // `pop` would then have read). Claimed-but-unpublished slots cannot
        // exist either, as no producer is active.
        self.head.with_mut(|head_ptr| {
            // `&mut self` proves no producer or other consumer is
            // active, so this is the only access to `head`.
            // SAFETY: by the argument just above.
            let head = unsafe { &mut *head_ptr };
            let block = if head.block.is_null() {
                self.first_block.load(Ordering::Relaxed)
            } else {
                head.block
            };
            if !block.is_null() {
                // the block came from `Box::into_raw` and nothing else
                // refers to it any more.
                // SAFETY: by the argument just above.
                drop(unsafe { Box::from_raw(block) });
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_across_blocks() {
        let q = SegQueue::new();
        for i in 0..1000 {
            q.push(i);
        }
        assert_eq!(q.len_hint(), 1000);
        for i in 0..1000 {
            // SAFETY: this test is the only consumer.
            assert_eq!(unsafe { q.pop() }, Some(i));
            assert_eq!(q.len_hint(), 999 - i);
        }
        // SAFETY: this test is the only consumer.
        assert!(unsafe { q.is_empty() });
        // SAFETY: this test is the only consumer.
        assert_eq!(unsafe { q.pop() }, None);
    }

    #[test]
    fn interleaved_push_pop_and_drop_with_items() {
        let q = SegQueue::new();
        for round in 0..100 {
            for i in 0..7 {
                q.push(vec![round, i]);
            }
            for i in 0..5 {
                // SAFETY: this test is the only consumer.
                assert_eq!(unsafe { q.pop() }, Some(vec![round, i]));
            }
            // The last two of the round come out in order too.
            for _ in 0..2 {
                // SAFETY: this test is the only consumer.
                assert!(unsafe { q.pop() }.is_some());
            }
        }
        q.push(vec![1]);
        q.push(vec![2]); // dropped with the queue: Miri checks nothing leaks
    }

    #[test]
    fn concurrent_producers_keep_per_producer_fifo() {
        let q = Arc::new(SegQueue::new());
        let producers = 3;
        let per = if cfg!(miri) { 50 } else { 20_000 };
        let handles: Vec<_> = (0..producers)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..per {
                        q.push((p, i));
                    }
                })
            })
            .collect();
        let mut next = vec![0; producers];
        let mut got = 0;
        while got < producers * per {
            // SAFETY: this thread is the only consumer.
            if let Some((p, i)) = unsafe { q.pop() } {
                assert_eq!(next[p], i, "producer {p} out of order");
                next[p] += 1;
                got += 1;
            } else {
                std::thread::yield_now();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: this thread is the only consumer.
        assert!(unsafe { q.is_empty() });
    }
}

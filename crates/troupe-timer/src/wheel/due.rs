//! The timers due at `now` that have not been handed out yet, as a queue of
//! keys rather than a linked list.
//!
//! # Why keys
//!
//! Handing out a linked list means loading each place to learn the next
//! one: a chain of dependent cache misses when a tick's timers are scattered
//! over a large slab. With the keys in a `Vec`, every place's address is
//! known up front, so the processor overlaps the loads of the next timers
//! with the work on the current one. The keys mostly come ready-made from
//! the read-ahead (`read_ahead.rs`), which walked the tick's list earlier.
//!
//! # Ground rules
//!
//! A timer in the queue is linked in no list. Cancelling it just frees its
//! place: its key goes stale, and [`Due::pop`] skips stale keys. So the
//! pending timers in the queue are exactly those whose key is still valid,
//! in the queue's order. The `Vec` is reused from tick to tick (it changes
//! hands with the read-ahead's buffers): no allocation per timer.

use std::mem;

use crate::slab::{Slab, TimerKey};

#[derive(Debug, Default)]
pub(crate) struct Due {
    /// Keys in the order the timers are to be handed out.
    keys: Vec<TimerKey>,
    /// The first key not yet handed out or skipped.
    next: usize,
}

impl Due {
    /// Queues a pending timer that is linked nowhere.
    pub(crate) fn push(&mut self, key: TimerKey) {
        self.keys.push(key);
    }

    /// The place of the next pending timer, taken off the queue.
    pub(crate) fn pop<T>(&mut self, slab: &Slab<T>) -> Option<u32> {
        while let Some(&key) = self.keys.get(self.next) {
            self.next += 1;
            if let Some(index) = slab.index_of(key) {
                return Some(index);
            }
        }
        None
    }

    /// Whether a pending timer is still queued.
    pub(crate) fn has_pending<T>(&self, slab: &Slab<T>) -> bool {
        self.pending(slab).next().is_some()
    }

    /// The places of the pending timers still queued, in order.
    pub(crate) fn pending<'a, T>(&'a self, slab: &'a Slab<T>) -> impl Iterator<Item = u32> + 'a {
        self.keys[self.next..]
            .iter()
            .filter_map(|&key| slab.index_of(key))
    }

    /// Empties the queue and returns its buffer (empty, capacity kept), for
    /// the next tick's keys to be collected in.
    pub(crate) fn take_buffer(&mut self) -> Vec<TimerKey> {
        self.next = 0;
        let mut keys = mem::take(&mut self.keys);
        keys.clear();
        keys
    }

    /// Keys the buffer has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.keys.capacity()
    }

    /// Empties the queue (which has nothing pending left).
    pub(crate) fn reset(&mut self) {
        self.keys.clear();
        self.next = 0;
    }

    /// Makes `keys` the queue; it must be empty now.
    pub(crate) fn set(&mut self, keys: Vec<TimerKey>) {
        debug_assert!(self.next == self.keys.len());
        self.keys = keys;
        self.next = 0;
    }

    /// Reverses the keys pushed since `mark`.
    pub(crate) fn reverse_since(&mut self, mark: usize) {
        self.keys[mark..].reverse();
    }
}

//! Read-ahead: walks the lists of the next few ticks while the current
//! tick's timers are handed out, and keeps their keys, so that a tick's
//! timers are known (and mostly in cache) by the time it is due.
//!
//! # Why
//!
//! A slot's timers form a linked list, and walking a list is a chain of
//! dependent loads: the next index is only known once the current place has
//! been read. When timers are inserted in deadline order (the scheduler's
//! common case, "now + one second" again and again) a list's places are
//! neighbours in the slab and the walk streams. When deadlines are random,
//! neighbours in a list are far apart in a slab of many megabytes, every
//! step is a cache and TLB miss, and a single walk has one miss in flight
//! at a time: about 200 ns per timer on the reference machine, all waiting.
//!
//! The lists of the next [`WINDOW`] ticks are independent chains, though.
//! Every [`WINDOW`] timers handed out, each of them advances by one place,
//! so [`WINDOW`] misses are in flight instead of one, and each step records
//! the place's key. When a tick comes due, its keys are ready: they become
//! the `due` queue (see `due.rs`), whose loads the processor can overlap,
//! and only the part of the list not yet walked is walked then. Each tick
//! hands out about as many timers as the next one holds, so in a steady
//! state a list has been walked by the time it is due.
//!
//! # Ground rules
//!
//! Read-ahead only reads the slab. A cursor's keys describe its list as it
//! was, so they are used only if the list has gained no timer since the
//! cursor started (the wheel counts pushes per level-0 slot: the
//! *version*); timers cancelled since just leave stale keys, which `due`
//! skips. A cursor that meets a place that is no longer its tick's timer
//! gives up, and the wheel walks that list itself. Nothing here changes
//! what fires or when.

use crate::slab::{List, Slab, TimerKey, NIL};

use super::geometry::Geometry;

/// Ticks read ahead (a power of two, below level 0's 64 slots): enough
/// chains to keep the core's line fill buffers busy.
pub(crate) const WINDOW: usize = 8;

/// How far one upcoming tick's list has been walked.
#[derive(Debug)]
struct Cursor {
    /// The tick whose list this is (0: none; the window is always after 0).
    tick: u64,
    /// The list's version when the cursor started on it.
    version: u32,
    /// The next place to read, or [`NIL`] at the end of the list.
    next: u32,
    /// The list changed under the cursor: its keys are of no use.
    gave_up: bool,
    /// The keys of the places read so far, in list order.
    keys: Vec<TimerKey>,
}

/// Cursor `r` walks the list of the tick in `(now, now + WINDOW]` that is
/// `r` modulo [`WINDOW`], so a cursor carries on while its tick stays in the
/// window and starts over on a new tick's list when its tick is reached.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    cursors: [Cursor; WINDOW],
    /// Calls to [`step`](Self::step) since the last batch of reads.
    calls: usize,
    /// `now` at which every cursor was found done: nothing to step until
    /// time moves on.
    done_at: Option<u64>,
}

impl ReadAhead {
    pub(crate) fn new() -> Self {
        ReadAhead {
            cursors: std::array::from_fn(|_| Cursor {
                tick: 0,
                version: 0,
                next: NIL,
                gave_up: true,
                keys: Vec::new(),
            }),
            calls: 0,
            done_at: None,
        }
    }

    /// Called once per timer handed out: every [`WINDOW`] calls, reads one
    /// more place of each upcoming tick's list. Batching the reads issues
    /// [`WINDOW`] independent loads back to back, which the processor
    /// overlaps; spread one per call they would sit too far apart in the
    /// instruction stream to overlap.
    pub(crate) fn step<T>(
        &mut self,
        slab: &Slab<T>,
        first: &[List],
        versions: &[u32],
        geometry: Geometry,
        now: u64,
    ) {
        self.calls += 1;
        if self.calls < WINDOW || self.done_at == Some(now) {
            return;
        }
        self.calls = 0;
        let Some(window_start) = now.checked_add(1) else {
            return;
        };
        let mut busy = false;
        for (turn, cursor) in self.cursors.iter_mut().enumerate() {
            let offset = (turn as u64).wrapping_sub(window_start) & (WINDOW as u64 - 1);
            let Some(tick) = window_start.checked_add(offset) else {
                continue;
            };
            if cursor.tick != tick {
                // A new tick entered the window: start on its level-0 list.
                let slot = geometry.slot_of(0, tick);
                cursor.tick = tick;
                cursor.version = versions[slot];
                cursor.next = first[slot].head;
                cursor.gave_up = false;
                cursor.keys.clear();
            }
            if cursor.gave_up || cursor.next == NIL {
                continue;
            }
            busy = true;
            match slab.peek(cursor.next, now) {
                Some((deadline, next, key)) if deadline == tick => {
                    cursor.keys.push(key);
                    cursor.next = next;
                }
                _ => cursor.gave_up = true,
            }
        }
        if !busy {
            self.done_at = Some(now);
        }
    }

    /// Keys the cursors' buffers have room for.
    pub(crate) fn capacity(&self) -> usize {
        self.cursors.iter().map(|c| c.keys.capacity()).sum()
    }

    /// Hands over the keys read from `tick`'s list, in exchange for `spare`
    /// (an empty buffer), if the list is still at `version`; returns the
    /// place to go on walking from ([`NIL`]: the keys are the whole list).
    pub(crate) fn take(
        &mut self,
        tick: u64,
        version: u32,
        spare: &mut Vec<TimerKey>,
    ) -> Option<u32> {
        let cursor = &mut self.cursors[(tick % WINDOW as u64) as usize];
        if cursor.tick != tick || cursor.gave_up || cursor.version != version {
            return None;
        }
        std::mem::swap(&mut cursor.keys, spare);
        cursor.gave_up = true;
        Some(cursor.next)
    }
}

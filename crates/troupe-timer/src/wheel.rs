//! [`Wheel`]: the hierarchical timing wheel itself: where a timer is linked,
//! how time moves, and how due timers come out in order.
//!
//! # Design
//!
//! ## Ground rules
//!
//! * Pure: time is the `tick` the caller passes to [`Wheel::advance_to`] or
//!   [`Wheel::pop_expired`]; nothing here reads a clock, sleeps or spawns.
//! * A timer is one slab place ([`crate::slab`]); the wheel decides which
//!   list that place is linked into and records the level in the place.
//!
//! ## State
//!
//! * `now`: every timer due at or before `now` has been handed out, except
//!   those waiting in `due`.
//! * `due`: timers due exactly at `now` not handed out yet, oldest first
//!   (the rest of the tick [`Wheel::pop_expired`] is working through), as
//!   a queue of keys (`wheel/due.rs`); they are linked in no list.
//! * `read_ahead`: the keys of the next few ticks' lists, collected ahead
//!   of time (`wheel/read_ahead.rs`); `versions` counts the timers ever
//!   linked into each level-0 list, so stale collections are recognised.
//! * `slots`: one list per slot of every level (see `wheel/geometry.rs`);
//!   `occupied` has a bit per non-empty list.
//!
//! ## Invariants
//!
//! 1. A pending timer due at `d` is in `due` if `d <= now` (then
//!    `d == now`); else on level 0 in slot `d mod S` if it was placed there
//!    (`d - now < S` when placed, hence still); else on its upper level
//!    `upper_level(now, d)`, in slot `slot_of(level, d)`. An upper timer
//!    may have come within `S` of `now` since it was placed; it moves down
//!    when `now` reaches its slot's first tick. `cancel` reads the level
//!    from the place and finds the list in O(1).
//! 2. Order. The pending timers due at some `d > now` are in at most two
//!    lists: the upper list of `d` (one list, because the upper level
//!    depends only on `d` and `now`) and level 0's slot for `d`. Every timer
//!    in the first was inserted before every timer in the second (a timer
//!    inserted later is placed no higher), and each list is in insertion
//!    order (appends). A cascade therefore *prepends* the timers it moves
//!    down, walking its list backwards, and a tick's `due` list is the
//!    cascaded timers due then followed by level 0's slot.
//! 3. Upper timers are ordered by level: a lower upper level's timers share
//!    more leading digits with `now`, so their slots start sooner. The next
//!    thing to do is therefore the earlier of level 0's next occupied slot
//!    (going round the window) and the first occupied slot after `now`'s
//!    digit on the lowest non-empty upper level, a cascade first on a tie.
//!
//! ## Moving time
//!
//! Advancing repeatedly takes that next slot while it starts at or before
//! the target tick: time jumps to the slot's first tick; a level-0 slot (one
//! tick wide) becomes `due` as a whole; an upper slot is *cascaded*: its
//! timers due at that tick go to `due`, the others are placed again for the
//! new `now`, each on a lower level. When no slot starts at or before the
//! target, time jumps straight to it; invariant 1 still holds, because no
//! upper slot starts at or before the target, so no timer's upper level
//! changes.
//!
//! ## Cost
//!
//! `insert` and `cancel` are O(1). Handing out a timer is O(1) plus one
//! relink per cascade it goes through: none for a timer inserted less than
//! `S` ticks ahead, at most `levels - 1` for any deadline. Finding the next
//! occupied slot is a few bit scans per level, so a jump over empty time is
//! O(levels) however far it goes.

mod due;
mod geometry;
mod occupancy;
mod read_ahead;

use std::mem::{self, size_of};

use crate::slab::{List, Place, Slab, TimerKey, NIL};

use self::due::Due;
use self::geometry::Geometry;
use self::occupancy::Occupancy;
use self::read_ahead::ReadAhead;

// Compact entries are part of the contract (see `slab.rs` for the layout):
// 16 bytes of bookkeeping per timer, 32 with a `u64` value and 32 with a
// boxed closure.
const _: () = assert!(size_of::<Place<()>>() <= 20);
const _: () = assert!(size_of::<Place<u64>>() <= 32);
const _: () = assert!(size_of::<Place<Box<dyn FnOnce() + Send>>>() <= 32);

/// A hierarchical hashed timing wheel (scheme 7 of the 1987 paper "Hashed
/// and Hierarchical Timing Wheels") of timers carrying values of
/// type `T`, with timers in a slab linked by `u32` indices.
///
/// Time is a `u64` count of ticks that only the caller moves; see the
/// [crate docs](crate) for the guarantees and an example.
#[derive(Debug)]
pub struct Wheel<T> {
    /// Every pending timer; the lists below link its places.
    slab: Slab<T>,
    geometry: Geometry,
    /// One list per slot: level 0's first, then 64 for each level above.
    slots: Box<[List]>,
    /// A bit per non-empty list of `slots`.
    occupied: Occupancy,
    /// Timers due at `now` not handed out yet, oldest first.
    due: Due,
    /// Pushes ever made into each level-0 list (wrapping), for the
    /// read-ahead.
    versions: Box<[u32]>,
    /// The last tick advanced to.
    now: u64,
    read_ahead: ReadAhead,
}

impl<T> Wheel<T> {
    /// Bytes of one slab place holding a `T`: what one pending timer costs,
    /// its value included (32 for a `u64`).
    pub const ENTRY_SIZE: usize = size_of::<Place<T>>();

    /// Bytes of one slab place holding `()` (20): 16 of bookkeeping (the
    /// deadline's low 30 bits with two flags, two list links and the
    /// generation) and the tag that says the place is pending. A value with
    /// a niche (a reference, `Box`, function pointer) needs no tag and adds
    /// its own size; other values add their size plus the tag, rounded up
    /// to their alignment (16 for a `u64`).
    pub const ENTRY_OVERHEAD: usize = size_of::<Place<()>>();

    /// A wheel whose time is `now`, with a first level of `slots` one-tick
    /// slots (rounded up to a power of two, clamped to 64..=4,096).
    ///
    /// A timer inserted less than `slots` ticks ahead never cascades, so
    /// choose it to cover the common delays: 4,096 slots of 1 ms cover four
    /// seconds.
    /// Any deadline up to `u64::MAX` is accepted whatever the size.
    pub fn new(slots: usize, now: u64) -> Self {
        Self::with_capacity(slots, now, 0)
    }

    /// Like [`new`](Self::new), with room for `capacity` timers before the
    /// slab grows.
    pub fn with_capacity(slots: usize, now: u64, capacity: usize) -> Self {
        let geometry = Geometry::new(slots);
        let lists = geometry.slots0() + 64 * (geometry.levels() - 1);
        Wheel {
            slab: Slab::with_capacity(capacity),
            geometry,
            slots: vec![List::EMPTY; lists].into_boxed_slice(),
            occupied: Occupancy::new(geometry.slots0(), geometry.levels()),
            due: Due::default(),
            versions: vec![0; geometry.slots0()].into_boxed_slice(),
            now,
            read_ahead: ReadAhead::new(),
        }
    }

    /// The last tick advanced to.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Pending timers: inserted, neither handed out nor cancelled.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// Slab places ever used (the high-water mark of pending timers); freed
    /// places are reused before new ones.
    pub fn places(&self) -> usize {
        self.slab.places()
    }

    /// Slab places allocated (used or not).
    pub fn capacity(&self) -> usize {
        self.slab.capacity()
    }

    /// Heap bytes the wheel holds: the slab's capacity times
    /// [`ENTRY_SIZE`](Self::ENTRY_SIZE), the slot lists and bitmaps (a fixed
    /// 53 KiB with 4,096 first-level slots), and the key queues of the
    /// current and the next few ticks. Values' own heap data is not
    /// included.
    pub fn heap_bytes(&self) -> usize {
        self.slab.capacity() * Self::ENTRY_SIZE
            + self.slots.len() * size_of::<List>()
            + (self.geometry.slots0().div_ceil(64) + self.geometry.levels()) * size_of::<u64>()
            + self.versions.len() * size_of::<u32>()
            + (self.due.capacity() + self.read_ahead.capacity()) * size_of::<TimerKey>()
            + self.slab.far_bytes()
    }

    /// Schedules `value` at tick `deadline` and returns the key that cancels
    /// it. A deadline at or before [`now`](Self::now) means `now + 1`: the
    /// timer fires on the next advance, it is never lost.
    ///
    /// At the end of time (`now == u64::MAX`) there is no next tick: the
    /// timer is due at once and comes out of the next `advance_to` or
    /// `pop_expired`, whatever its tick.
    ///
    /// # Panics
    ///
    /// If `u32::MAX - 1` timers are pending (the slab's indices are `u32`).
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let deadline = deadline.max(self.now.saturating_add(1));
        let key = self.slab.insert(deadline, self.now, value);
        self.link(key.index, deadline, false);
        key
    }

    /// Cancels a pending timer and returns its value, in O(1). A stale key
    /// (its timer fired or was cancelled already) returns `None` and never
    /// touches another timer, even one that reuses the same slab place.
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.index_of(key)?;
        let deadline = self.slab.deadline(index, self.now);
        // A timer in `due` is linked nowhere: freeing its place makes its
        // queued key stale.
        if deadline > self.now {
            let level = self.level_of(index, deadline);
            let slot = self.geometry.slot_of(level, deadline);
            let list = self.list(level, slot);
            let list = &mut self.slots[list];
            self.slab.unlink(list, index);
            if list.is_empty() {
                self.occupied.clear(level, slot);
            }
        }
        Some(self.slab.remove(index, self.now).2)
    }

    /// Whether `key` names a pending timer.
    pub fn contains(&self, key: TimerKey) -> bool {
        self.slab.index_of(key).is_some()
    }

    /// The tick a pending timer fires at (its deadline, or `now + 1` for one
    /// inserted in the past); `None` for a stale key.
    pub fn deadline(&self, key: TimerKey) -> Option<u64> {
        self.slab
            .index_of(key)
            .map(|i| self.slab.deadline(i, self.now))
    }

    /// Advances time to `tick` and calls `fire(tick_fired, key, value)` for
    /// every timer due at or before it: in deadline order, and in insertion
    /// order among timers with the same deadline. `tick_fired` is the
    /// timer's deadline (`now + 1` at insertion for a deadline in the past).
    /// A tick at or before [`now`](Self::now) moves nothing.
    ///
    /// The cost is that of the timers handed out plus a few bit scans per
    /// occupied slot passed, however far `tick` is.
    pub fn advance_to(&mut self, tick: u64, mut fire: impl FnMut(u64, TimerKey, T)) {
        while let Some((fired, key, value)) = self.pop_expired(tick) {
            fire(fired, key, value);
        }
    }

    /// Hands out the next timer due at or before `tick`, in the order of
    /// [`advance_to`](Self::advance_to), moving time forward as far as
    /// needed; returns `None` (with time at `tick`, if that is later) when
    /// none is left.
    ///
    /// Between two calls the wheel is consistent: a timer can be cancelled
    /// or inserted while the rest of a tick is still to come (a timer
    /// inserted then fires at a later tick, never in the current one).
    pub fn pop_expired(&mut self, tick: u64) -> Option<(u64, TimerKey, T)> {
        loop {
            if let Some(index) = self.due.pop(&self.slab) {
                let first = &self.slots[..self.geometry.slots0()];
                let (versions, geometry) = (&self.versions[..], self.geometry);
                self.read_ahead
                    .step(&self.slab, first, versions, geometry, self.now);
                return Some(self.slab.remove(index, self.now));
            }
            match self.next_event() {
                Some(event) if event.tick() <= tick => self.expire(event),
                _ => {
                    self.now = self.now.max(tick);
                    return None;
                }
            }
        }
    }

    /// The next tick at which a timer fires: `now` if some are due and not
    /// handed out yet, `None` if no timer is pending.
    ///
    /// O(1) when the next thing to do is a level-0 tick; otherwise it scans
    /// the upper slot that cascades next. See also
    /// [`next_deadline_hint`](Self::next_deadline_hint).
    pub fn next_deadline(&self) -> Option<u64> {
        if self.due.has_pending(&self.slab) {
            return Some(self.now);
        }
        match self.next_event()? {
            Event::Tick { tick, .. } => Some(tick),
            Event::Cascade {
                level,
                slot,
                next_tick,
                ..
            } => {
                let mut earliest = next_tick.unwrap_or(u64::MAX);
                let mut index = self.slots[self.list(level, slot)].head;
                while index != NIL {
                    earliest = earliest.min(self.slab.deadline(index, self.now));
                    index = self.slab.next(index);
                }
                Some(earliest)
            }
        }
    }

    /// A lower bound of [`next_deadline`](Self::next_deadline) in O(levels),
    /// for a driver deciding how long to sleep: the next tick at which
    /// advancing has something to do. That is a deadline, or the first tick
    /// of an upper slot whose timers must move down a level then (which may
    /// fire none of them; it happens at most once per upper slot).
    pub fn next_deadline_hint(&self) -> Option<u64> {
        if self.due.has_pending(&self.slab) {
            return Some(self.now);
        }
        self.next_event().map(|event| event.tick())
    }

    /// The level a pending timer due at `deadline > now` is linked on. Only
    /// level 0 is recorded in its place: an upper timer's level is the
    /// upper level of its deadline seen from `now`, which stays the level
    /// it was placed on until `now` reaches its slot (invariant 1), because
    /// until then `now` shares every digit above that level with it and has
    /// a smaller digit on it.
    fn level_of(&self, index: u32, deadline: u64) -> usize {
        if self.slab.on_level0(index) {
            0
        } else {
            self.geometry.upper_level(self.now, deadline)
        }
    }

    /// The index in `slots` of `slot` on `level`.
    fn list(&self, level: usize, slot: usize) -> usize {
        match level {
            0 => slot,
            _ => self.geometry.slots0() + 64 * (level - 1) + slot,
        }
    }

    /// Links an unlinked pending place where invariant 1 puts it: at the
    /// back of its list for a new timer, at the front for a cascaded one
    /// (invariant 2); or queues it in `due`.
    fn link(&mut self, index: u32, deadline: u64, front: bool) {
        if deadline <= self.now {
            self.due.push(self.slab.key(index));
            return;
        }
        let level = self.geometry.place(self.now, deadline);
        let slot = self.geometry.slot_of(level, deadline);
        let list = self.list(level, slot);
        let list = &mut self.slots[list];
        if front {
            self.slab.push_front(list, index);
        } else {
            self.slab.push_back(list, index);
        }
        self.slab.set_on_level0(index, level == 0);
        self.occupied.set(level, slot);
        if level == 0 {
            self.versions[slot] = self.versions[slot].wrapping_add(1);
        }
    }

    /// Queues the places of a level-0 list in `due`, from `index` to its
    /// end; the list itself is dropped by the caller.
    fn queue_from(&mut self, mut index: u32) {
        while index != NIL {
            self.due.push(self.slab.key(index));
            index = self.slab.next(index);
        }
    }

    /// What advancing does next (invariant 3), if any timer is pending
    /// outside `due`.
    fn next_event(&self) -> Option<Event> {
        let now = self.now;
        let first = self
            .occupied
            .first_after_wrapping(self.geometry.slot_of(0, now))
            .map(|slot| (slot, self.geometry.tick_of(now, slot)));
        let upper = (1..self.geometry.levels()).find_map(|level| {
            let slot = self
                .occupied
                .first_after(level, self.geometry.slot_of(level, now))?;
            Some((level, slot, self.geometry.slot_start(level, now, slot)))
        });
        match (first, upper) {
            (Some((slot, tick)), Some((_, _, start))) if tick < start => {
                Some(Event::Tick { slot, tick })
            }
            (first, Some((level, slot, start))) => Some(Event::Cascade {
                level,
                slot,
                start,
                next_tick: first.map(|(_, tick)| tick),
            }),
            (Some((slot, tick)), None) => Some(Event::Tick { slot, tick }),
            (None, None) => None,
        }
    }

    /// Moves time to `event`'s tick and empties its slot into `due` (level
    /// 0) or by cascading its timers to `due` and lower levels. `due` has
    /// nothing pending when this is called.
    fn expire(&mut self, event: Event) {
        debug_assert!(!self.due.has_pending(&self.slab) && event.tick() > self.now);
        match event {
            Event::Tick { slot, tick } => {
                self.now = tick;
                let list = mem::replace(&mut self.slots[slot], List::EMPTY);
                self.occupied.clear(0, slot);
                // The read-ahead's keys if they still describe the list,
                // and the rest of the list walked from where it stopped.
                let mut keys = self.due.take_buffer();
                let resume = match self.read_ahead.take(tick, self.versions[slot], &mut keys) {
                    Some(next)
                        if next == NIL
                            || self
                                .slab
                                .peek(next, self.now)
                                .is_some_and(|(d, ..)| d == tick) =>
                    {
                        next
                    }
                    _ => {
                        keys.clear();
                        list.head
                    }
                };
                self.due.set(keys);
                self.queue_from(resume);
            }
            Event::Cascade {
                level, slot, start, ..
            } => {
                self.now = start;
                self.due.reset();
                let list = self.list(level, slot);
                let list = mem::replace(&mut self.slots[list], List::EMPTY);
                self.occupied.clear(level, slot);
                // Backwards, each to the front of its new list: invariant 2.
                // Those due now are queued backwards too, then put right.
                let mut index = list.tail;
                while index != NIL {
                    let prev = self.slab.prev(index);
                    self.link(index, self.slab.deadline(index, self.now), true);
                    index = prev;
                }
                self.due.reverse_since(0);
                // Timers placed on level 0 for this very tick come after
                // the cascaded ones, which were inserted before them.
                let slot = self.geometry.slot_of(0, start);
                let same_tick = mem::replace(&mut self.slots[slot], List::EMPTY);
                self.occupied.clear(0, slot);
                self.queue_from(same_tick.head);
            }
        }
    }
}

/// The next step of advancing (see [`Wheel::next_event`]).
#[derive(Debug, Clone, Copy)]
enum Event {
    /// Level-0 `slot`'s timers are due at `tick`.
    Tick { slot: usize, tick: u64 },
    /// Upper `slot` on `level` starts at `start` and must cascade then;
    /// level 0's next occupied tick is `next_tick`.
    Cascade {
        level: usize,
        slot: usize,
        start: u64,
        next_tick: Option<u64>,
    },
}

impl Event {
    /// The tick it happens at.
    fn tick(self) -> u64 {
        match self {
            Event::Tick { tick, .. } => tick,
            Event::Cascade { start, .. } => start,
        }
    }
}

#[cfg(test)]
mod tests;

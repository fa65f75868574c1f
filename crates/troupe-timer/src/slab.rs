//! The slab that owns every pending timer: one `Vec` of places, a free list
//! threaded through the vacant ones, generation-checked keys, and the
//! intrusive doubly-linked lists (by `u32` index) that the wheel's slots are
//! made of.
//!
//! # Design
//!
//! ## Ground rules
//!
//! * A timer costs one place in one `Vec`: no allocation per timer, no `Box`
//!   per entry. The `Vec` grows like any `Vec` (amortised O(1)) and keeps its
//!   capacity, so a steady load allocates nothing.
//! * A place is either *pending* (it holds a value and sits in exactly one
//!   [`List`] or in the wheel's due queue) or *vacant* (no value; it sits on
//!   the free list). The wheel decides which list; the slab only links and
//!   unlinks.
//! * No `unsafe`: the value is an `Option`, and taking it out turns the
//!   place vacant.
//!
//! ## Layout (why an entry is 16 bytes plus the value)
//!
//! A place is four `u32`s and the value: `when` (the deadline's low 30 bits
//! and two flags, below), the two list links, and the generation. The
//! value is an `Option<T>`, which costs nothing extra when `T` has a niche
//! (a pointer, a function pointer, a `Box`): `Place<()>` is 20 bytes,
//! `Place<u64>` 32 and the troupe scheduler's action 56. The sizes are
//! asserted at compile time in `wheel.rs`.
//!
//! ## Deadlines: 30 bits and the wheel's `now`
//!
//! A pending timer is due at or after the wheel's current tick `now`, and
//! `now` only moves towards it. So if the deadline was less than
//! 2^30 ticks ahead when the timer was inserted, it stays so, and its low
//! 30 bits give it back: `d = now + ((low - now) mod 2^30)`. Every read of
//! a deadline therefore takes `now` ([`Slab::deadline`]). A deadline 2^30
//! or more ticks ahead (twelve days of 1 ms ticks) is *far*: its place says
//! so with the `FAR` flag and the full deadline sits in a side table until
//! the place is freed. That table costs nothing while it is empty, which is
//! the case for any load whose delays stay under twelve days.
//!
//! The other flag, `LEVEL0`, says that the timer is linked on level 0. An
//! upper-level timer's level is not stored: the wheel recomputes it from
//! the deadline and `now` (see `wheel.rs`).
//!
//! ## Keys
//!
//! A [`TimerKey`] is the place's index and the generation it had when the
//! timer was inserted. Freeing a place bumps its generation, so a key whose
//! timer fired or was cancelled no longer matches, even after the place has
//! been reused by another timer. Generations are `u32` and wrap: a key could
//! only be confused after its place has been reused 2^32 times while the key
//! was kept.

use std::collections::HashMap;
use std::mem;

/// "No place": the end of a list, an empty list, an empty free list.
pub(crate) const NIL: u32 = u32::MAX;

/// Bits of a deadline a place keeps (see "Deadlines" in the module docs).
const NEAR_BITS: u32 = 30;
const NEAR_MASK: u32 = (1 << NEAR_BITS) - 1;
/// `when` flag: the timer is linked on level 0.
const LEVEL0: u32 = 1 << 30;
/// `when` flag: the full deadline is in [`Slab::far`].
const FAR: u32 = 1 << 31;

/// A handle to one inserted timer, for [`Wheel::cancel`](crate::Wheel::cancel)
/// and [`Wheel::contains`](crate::Wheel::contains).
///
/// Keys are small (`Copy`, 8 bytes) and never dangle: once the timer has
/// fired or been cancelled the key is *stale* and names nothing, even after
/// its slab place has been reused by another timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerKey {
    pub(crate) index: u32,
    generation: u32,
}

/// One place of the slab (see the module docs for the layout). In
/// declaration order (`repr(C)`): the bookkeeping the read-ahead and the
/// due queue read comes first, together; `wheel_bench`'s scattered
/// deadlines fired about 8 % faster this way than in the compiler's order.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Place<T> {
    /// Pending: the deadline's low [`NEAR_BITS`] bits, [`LEVEL0`] and
    /// [`FAR`]. Vacant: 0.
    when: u32,
    /// Pending: the next (younger) place in its list, or [`NIL`]. Vacant:
    /// the next vacant place, or [`NIL`].
    next: u32,
    /// Pending: the previous (older) place in its list, or [`NIL`].
    prev: u32,
    /// Pending: matches the keys handed out for this timer. Vacant: the
    /// generation the next timer in this place gets.
    generation: u32,
    /// `Some` exactly when the place is pending.
    value: Option<T>,
}
/// The head and tail of one intrusive list (oldest first), or [`List::EMPTY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct List {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl List {
    pub(crate) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// Pending timers and vacant places (see the module docs).
#[derive(Debug)]
pub(crate) struct Slab<T> {
    places: Vec<Place<T>>,
    /// The most recently freed place (reused first, while it is likely still
    /// in cache), or [`NIL`].
    free: u32,
    /// Pending places.
    len: usize,
    /// The deadlines of pending places flagged [`FAR`], by index.
    far: HashMap<u32, u64>,
}

impl<T> Slab<T> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Slab {
            places: Vec::with_capacity(capacity),
            free: NIL,
            len: 0,
            far: HashMap::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Places ever used: pending plus vacant.
    pub(crate) fn places(&self) -> usize {
        self.places.len()
    }

    /// Places the `Vec` has room for without growing.
    pub(crate) fn capacity(&self) -> usize {
        self.places.capacity()
    }

    /// Heap bytes of the far-deadline table (an estimate: its entries'
    /// size times its capacity).
    pub(crate) fn far_bytes(&self) -> usize {
        self.far.capacity() * mem::size_of::<(u32, u64)>()
    }

    /// Far deadlines held in the side table.
    #[cfg(test)]
    pub(crate) fn far_len(&self) -> usize {
        self.far.len()
    }

    /// Stores a pending timer due at `deadline >= now` that is not linked
    /// into any list yet.
    ///
    /// # Panics
    ///
    /// If `u32::MAX` places are in use (the last index is [`NIL`]).
    pub(crate) fn insert(&mut self, deadline: u64, now: u64, value: T) -> TimerKey {
        debug_assert!(deadline >= now);
        let index = if self.free != NIL {
            let index = self.free;
            self.free = self.places[index as usize].next;
            index
        } else {
            let index = u32::try_from(self.places.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("fewer than 2^32 - 1 pending timers");
            self.places.push(Place {
                when: 0,
                next: NIL,
                prev: NIL,
                generation: 0,
                value: None,
            });
            index
        };
        let when = if deadline - now < 1 << NEAR_BITS {
            deadline as u32 & NEAR_MASK
        } else {
            self.insert_far(index, deadline)
        };
        let place = &mut self.places[index as usize];
        debug_assert!(
            place.value.is_none(),
            "the free list holds only vacant places"
        );
        *place = Place {
            when,
            next: NIL,
            prev: NIL,
            generation: place.generation,
            value: Some(value),
        };
        self.len += 1;
        TimerKey {
            index,
            generation: place.generation,
        }
    }

    /// The pending place at `index`.
    fn pending(&self, index: u32) -> &Place<T> {
        let place = &self.places[index as usize];
        debug_assert!(place.value.is_some(), "only pending places are linked");
        place
    }

    fn pending_mut(&mut self, index: u32) -> &mut Place<T> {
        let place = &mut self.places[index as usize];
        debug_assert!(place.value.is_some(), "only pending places are linked");
        place
    }

    /// The index of the pending timer `key` names; `None` if the key is stale.
    pub(crate) fn index_of(&self, key: TimerKey) -> Option<u32> {
        let place = self.places.get(key.index as usize)?;
        (place.value.is_some() && place.generation == key.generation).then_some(key.index)
    }

    /// The deadline that `when` of the place at `index` stands for, seen
    /// from `now` (module docs, "Deadlines").
    #[inline]
    fn decode(&self, index: u32, when: u32, now: u64) -> u64 {
        if when & FAR != 0 {
            self.far_deadline(index)
        } else {
            now + u64::from((when & NEAR_MASK).wrapping_sub(now as u32) & NEAR_MASK)
        }
    }

    // The far table's paths are out of line and cold, so that the common
    // ones stay small enough to inline.

    #[cold]
    #[inline(never)]
    fn insert_far(&mut self, index: u32, deadline: u64) -> u32 {
        self.far.insert(index, deadline);
        FAR
    }

    #[cold]
    #[inline(never)]
    fn far_deadline(&self, index: u32) -> u64 {
        self.far[&index]
    }

    #[cold]
    #[inline(never)]
    fn remove_far(&mut self, index: u32) {
        self.far.remove(&index);
    }

    /// The deadline of a pending place; `now` is the wheel's current tick,
    /// at or before it.
    pub(crate) fn deadline(&self, index: u32, now: u64) -> u64 {
        self.decode(index, self.pending(index).when, now)
    }

    /// The deadline (seen from `now`), the next place and the key of
    /// `index` if it is pending. Used by the read-ahead, which follows lists
    /// that may have changed under it.
    pub(crate) fn peek(&self, index: u32, now: u64) -> Option<(u64, u32, TimerKey)> {
        let place = self.places.get(index as usize)?;
        place.value.as_ref()?;
        let key = TimerKey {
            index,
            generation: place.generation,
        };
        Some((self.decode(index, place.when, now), place.next, key))
    }

    /// The key of a pending place.
    pub(crate) fn key(&self, index: u32) -> TimerKey {
        TimerKey {
            index,
            generation: self.pending(index).generation,
        }
    }

    /// The place after `index` in its list.
    pub(crate) fn next(&self, index: u32) -> u32 {
        self.pending(index).next
    }

    /// The place before `index` in its list.
    pub(crate) fn prev(&self, index: u32) -> u32 {
        self.pending(index).prev
    }

    /// Whether a pending place was last linked on level 0.
    pub(crate) fn on_level0(&self, index: u32) -> bool {
        self.pending(index).when & LEVEL0 != 0
    }

    /// Records whether a pending place is being linked on level 0.
    pub(crate) fn set_on_level0(&mut self, index: u32, on: bool) {
        let place = self.pending_mut(index);
        place.when = if on {
            place.when | LEVEL0
        } else {
            place.when & !LEVEL0
        };
    }

    /// Appends an unlinked pending place to `list`.
    pub(crate) fn push_back(&mut self, list: &mut List, index: u32) {
        let tail = list.tail;
        let place = self.pending_mut(index);
        place.prev = tail;
        place.next = NIL;
        if tail == NIL {
            list.head = index;
        } else {
            self.pending_mut(tail).next = index;
        }
        list.tail = index;
    }

    /// Puts an unlinked pending place at the front of `list`.
    pub(crate) fn push_front(&mut self, list: &mut List, index: u32) {
        let head = list.head;
        let place = self.pending_mut(index);
        place.prev = NIL;
        place.next = head;
        if head == NIL {
            list.tail = index;
        } else {
            self.pending_mut(head).prev = index;
        }
        list.head = index;
    }

    /// Takes a pending place out of `list`, which must hold it.
    pub(crate) fn unlink(&mut self, list: &mut List, index: u32) {
        let Place { prev, next, .. } = *self.pending(index);
        if prev == NIL {
            list.head = next;
        } else {
            self.pending_mut(prev).next = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.pending_mut(next).prev = prev;
        }
    }

    /// Frees an unlinked pending place and returns its deadline (seen from
    /// `now`), key and value. Its generation moves on, so the key is stale
    /// from now on.
    pub(crate) fn remove(&mut self, index: u32, now: u64) -> (u64, TimerKey, T) {
        let when = self.pending(index).when;
        let deadline = self.decode(index, when, now);
        if when & FAR != 0 {
            self.remove_far(index);
        }
        let free = self.free;
        let place = &mut self.places[index as usize];
        let value = place.value.take().expect("only pending places are removed");
        let key = TimerKey {
            index,
            generation: place.generation,
        };
        place.when = 0;
        place.next = free;
        place.generation = place.generation.wrapping_add(1);
        self.free = index;
        self.len -= 1;
        (deadline, key, value)
    }
}

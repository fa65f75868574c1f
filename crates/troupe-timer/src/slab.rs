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
//!   [`List`]) or *vacant* (it sits on the free list). The wheel decides
//!   which list; the slab only links and unlinks.
//! * No `unsafe`: the value lives in an enum variant, and taking it out turns
//!   the place vacant in the same `mem::replace`.
//!
//! ## Layout (why an entry is 24 bytes plus the value)
//!
//! A pending place holds the deadline (`u64`), the two list links and the
//! generation (`u32` each), the wheel level it is linked on (`u8`) and the
//! value. The fields sit *inline* in the enum's variants rather than in a
//! struct inside one, because then the compiler may put the variant tag and
//! the level into the 4 bytes the three `u32`s leave before the next 8-byte
//! boundary: `Place<()>` is 24 bytes and `Place<u64>` 32, where an
//! `Option<T>` field or a nested struct would cost 8 more. The sizes are
//! asserted at compile time in `wheel.rs`.
//!
//! ## Keys
//!
//! A [`TimerKey`] is the place's index and the generation it had when the
//! timer was inserted. Freeing a place bumps its generation, so a key whose
//! timer fired or was cancelled no longer matches, even after the place has
//! been reused by another timer. Generations are `u32` and wrap: a key could
//! only be confused after its place has been reused 2^32 times while the key
//! was kept.

use std::mem;

/// "No place": the end of a list, an empty list, an empty free list.
pub(crate) const NIL: u32 = u32::MAX;

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

/// One place of the slab (see the module docs for why the fields are inline).
#[derive(Debug)]
pub(crate) enum Place<T> {
    /// A timer: linked into exactly one list of the wheel.
    Pending {
        /// The tick it fires at (already clamped to the future by the wheel).
        deadline: u64,
        /// The next (younger) place in its list, or [`NIL`].
        next: u32,
        /// The previous (older) place in its list, or [`NIL`].
        prev: u32,
        /// Matches the keys handed out for this timer.
        generation: u32,
        /// The wheel level whose list holds it (see `wheel.rs`).
        level: u8,
        value: T,
    },
    /// Free for reuse.
    Vacant {
        /// The next vacant place, or [`NIL`].
        next_free: u32,
        /// The generation the next timer in this place gets.
        generation: u32,
    },
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
}

impl<T> Slab<T> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Slab {
            places: Vec::with_capacity(capacity),
            free: NIL,
            len: 0,
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

    /// Stores a pending timer that is not linked into any list yet.
    ///
    /// # Panics
    ///
    /// If `u32::MAX` places are in use (the last index is [`NIL`]).
    pub(crate) fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let (index, generation) = if self.free != NIL {
            let index = self.free;
            let place = &mut self.places[index as usize];
            let Place::Vacant {
                next_free,
                generation,
            } = *place
            else {
                unreachable!("the free list holds only vacant places");
            };
            self.free = next_free;
            (index, generation)
        } else {
            let index = u32::try_from(self.places.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("fewer than 2^32 - 1 pending timers");
            self.places.push(Place::Vacant {
                next_free: NIL,
                generation: 0,
            });
            (index, 0)
        };
        self.places[index as usize] = Place::Pending {
            deadline,
            next: NIL,
            prev: NIL,
            generation,
            level: 0,
            value,
        };
        self.len += 1;
        TimerKey { index, generation }
    }

    /// The index of the pending timer `key` names; `None` if the key is stale.
    pub(crate) fn index_of(&self, key: TimerKey) -> Option<u32> {
        match self.places.get(key.index as usize)? {
            Place::Pending { generation, .. } if *generation == key.generation => Some(key.index),
            _ => None,
        }
    }

    /// The deadline of a pending place.
    pub(crate) fn deadline(&self, index: u32) -> u64 {
        match &self.places[index as usize] {
            Place::Pending { deadline, .. } => *deadline,
            Place::Vacant { .. } => unreachable!("only pending places are linked"),
        }
    }

    /// The deadline, the next place and the key of `index` if it is
    /// pending. Used by the read-ahead, which follows lists that may have
    /// changed under it.
    pub(crate) fn peek(&self, index: u32) -> Option<(u64, u32, TimerKey)> {
        match self.places.get(index as usize)? {
            Place::Pending {
                deadline,
                next,
                generation,
                ..
            } => Some((
                *deadline,
                *next,
                TimerKey {
                    index,
                    generation: *generation,
                },
            )),
            Place::Vacant { .. } => None,
        }
    }

    /// The key of a pending place.
    pub(crate) fn key(&self, index: u32) -> TimerKey {
        match &self.places[index as usize] {
            Place::Pending { generation, .. } => TimerKey {
                index,
                generation: *generation,
            },
            Place::Vacant { .. } => unreachable!("only pending places have keys"),
        }
    }

    /// The place after `index` in its list.
    pub(crate) fn next(&self, index: u32) -> u32 {
        match &self.places[index as usize] {
            Place::Pending { next, .. } => *next,
            Place::Vacant { .. } => unreachable!("only pending places are linked"),
        }
    }

    /// The place before `index` in its list.
    pub(crate) fn prev(&self, index: u32) -> u32 {
        match &self.places[index as usize] {
            Place::Pending { prev, .. } => *prev,
            Place::Vacant { .. } => unreachable!("only pending places are linked"),
        }
    }

    /// The level a pending place was last linked on.
    pub(crate) fn level(&self, index: u32) -> usize {
        match &self.places[index as usize] {
            Place::Pending { level, .. } => usize::from(*level),
            Place::Vacant { .. } => unreachable!("only pending places are linked"),
        }
    }

    /// Records the level a pending place is being linked on.
    pub(crate) fn set_level(&mut self, index: u32, level: usize) {
        match &mut self.places[index as usize] {
            Place::Pending { level: l, .. } => *l = level as u8,
            Place::Vacant { .. } => unreachable!("only pending places are linked"),
        }
    }

    fn links_mut(&mut self, index: u32) -> (&mut u32, &mut u32) {
        match &mut self.places[index as usize] {
            Place::Pending { prev, next, .. } => (prev, next),
            Place::Vacant { .. } => unreachable!("only pending places are linked"),
        }
    }

    /// Appends an unlinked pending place to `list`.
    pub(crate) fn push_back(&mut self, list: &mut List, index: u32) {
        let tail = list.tail;
        {
            let (prev, next) = self.links_mut(index);
            *prev = tail;
            *next = NIL;
        }
        if tail == NIL {
            list.head = index;
        } else {
            *self.links_mut(tail).1 = index;
        }
        list.tail = index;
    }

    /// Puts an unlinked pending place at the front of `list`.
    pub(crate) fn push_front(&mut self, list: &mut List, index: u32) {
        let head = list.head;
        {
            let (prev, next) = self.links_mut(index);
            *prev = NIL;
            *next = head;
        }
        if head == NIL {
            list.tail = index;
        } else {
            *self.links_mut(head).0 = index;
        }
        list.head = index;
    }

    /// Takes a pending place out of `list`, which must hold it.
    pub(crate) fn unlink(&mut self, list: &mut List, index: u32) {
        let (prev, next) = {
            let (prev, next) = self.links_mut(index);
            (*prev, *next)
        };
        if prev == NIL {
            list.head = next;
        } else {
            *self.links_mut(prev).1 = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            *self.links_mut(next).0 = prev;
        }
    }

    /// Frees an unlinked pending place and returns its deadline, key and
    /// value. Its generation moves on, so the key is stale from now on.
    pub(crate) fn remove(&mut self, index: u32) -> (u64, TimerKey, T) {
        let generation = match &self.places[index as usize] {
            Place::Pending { generation, .. } => *generation,
            Place::Vacant { .. } => unreachable!("only pending places are removed"),
        };
        let vacant = Place::Vacant {
            next_free: self.free,
            generation: generation.wrapping_add(1),
        };
        let Place::Pending {
            deadline, value, ..
        } = mem::replace(&mut self.places[index as usize], vacant)
        else {
            unreachable!("only pending places are removed");
        };
        self.free = index;
        self.len -= 1;
        (deadline, TimerKey { index, generation }, value)
    }
}

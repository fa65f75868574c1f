//! A hashed timing wheel (Varghese & Lauck, "Hashed and Hierarchical Timing
//! Wheels", scheme 6: one wheel, entries that wrap around it wait for their
//! round) as a pure data structure: time comes in as ticks, expired entries
//! come out. It never reads a clock and starts no threads; a driver (the
//! troupe scheduler) owns one and advances it.
//!
//! # Design
//!
//! * `slots` (a power of two) lists, one per tick modulo the wheel size.
//!   An entry due at tick `d` sits in slot `d mod slots` and is examined when
//!   the wheel passes that slot; it fires when the tick equals its deadline
//!   and waits otherwise (a later round). With a wheel at least as long as
//!   most delays (the scheduler uses 4,096 one-millisecond slots for one-
//!   second timers), an entry is examined once: insert, cancel and fire are
//!   O(1). Entries far beyond the wheel's span cost one look per rotation.
//! * Entries live in a slab (a `Vec` with a free list) and are linked into
//!   their slot by `u32` indices: no allocation per timer once the slab has
//!   grown, and 24 bytes of bookkeeping per entry besides the value.
//! * A [`TimerKey`] is a slab index plus a generation, so a stale key (the
//!   timer fired or was cancelled, and its place reused) never cancels
//!   another timer.
//!
//! # Guarantees
//!
//! * Never early: an entry fires during the advance that reaches its
//!   deadline tick. An entry inserted with a deadline at or before `now`
//!   fires on the next tick (at most one tick late).
//! * Exactly once: every inserted, uncancelled entry fires once.
//! * Order: entries fire in deadline order, and entries with the same
//!   deadline in insertion order.
//!
//! ```
//! use troupe_timer::Wheel;
//!
//! let mut wheel = Wheel::new(64, 0);
//! let a = wheel.insert(5, "a");
//! wheel.insert(3, "b");
//! wheel.insert(3, "c");
//! assert_eq!(wheel.cancel(a), Some("a"));
//! let mut fired = Vec::new();
//! wheel.advance_to(10, |tick, _key, value| fired.push((tick, value)));
//! assert_eq!(fired, [(3, "b"), (3, "c")]);
//! ```

// Compact entries are part of the contract: 24 bytes of bookkeeping per
// timer, 40 with the scheduler's boxed action. Checked when compiling.
const _: () = assert!(std::mem::size_of::<Entry<()>>() <= 24);
const _: () = assert!(std::mem::size_of::<Entry<Box<dyn FnOnce()>>>() <= 40);

/// "No entry" in the intrusive lists.
const NIL: u32 = u32::MAX;

/// A handle to a pending timer, for [`Wheel::cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerKey {
    index: u32,
    generation: u32,
}

/// One slab entry: a timer, or a free place (`value` is `None`).
#[derive(Debug)]
struct Entry<T> {
    deadline: u64,
    /// Next in the slot list, or in the free list.
    next: u32,
    prev: u32,
    /// Bumped whenever the place is freed, so old keys go stale.
    generation: u32,
    value: Option<T>,
}

/// The head and tail of one slot's list (oldest first).
#[derive(Debug, Clone, Copy)]
struct Slot {
    head: u32,
    tail: u32,
}

/// A hashed timing wheel of values `T` (see the crate docs).
#[derive(Debug)]
pub struct Wheel<T> {
    slots: Box<[Slot]>,
    mask: u64,
    entries: Vec<Entry<T>>,
    free: u32,
    /// The last tick advanced to: every entry due at or before it has fired.
    now: u64,
    len: usize,
}

impl<T> Wheel<T> {
    /// A wheel of `slots` slots (rounded up to a power of two) whose time is
    /// `now` ticks.
    pub fn new(slots: usize, now: u64) -> Self {
        let slots = slots.max(1).next_power_of_two();
        Wheel {
            slots: vec![
                Slot {
                    head: NIL,
                    tail: NIL
                };
                slots
            ]
            .into_boxed_slice(),
            mask: slots as u64 - 1,
            entries: Vec::new(),
            free: NIL,
            now,
            len: 0,
        }
    }

    /// The current tick.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Pending entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of bookkeeping per entry (the slab entry without the value).
    pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry<()>>();

    /// Slab places in use or free for reuse (the high-water mark of pending
    /// entries).
    pub fn places(&self) -> usize {
        self.entries.len()
    }

    /// Schedules `value` at tick `deadline`; a deadline at or before
    /// [`now`](Self::now) means the next tick.
    ///
    /// # Panics
    ///
    /// If more than `u32::MAX - 1` entries are pending.
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let deadline = deadline.max(self.now.saturating_add(1));
        let index = if self.free != NIL {
            let index = self.free;
            let entry = &mut self.entries[index as usize];
            self.free = entry.next;
            entry.deadline = deadline;
            entry.value = Some(value);
            index
        } else {
            let index = u32::try_from(self.entries.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("fewer than 2^32 - 1 pending timers");
            self.entries.push(Entry {
                deadline,
                next: NIL,
                prev: NIL,
                generation: 0,
                value: Some(value),
            });
            index
        };
        self.link(index);
        self.len += 1;
        TimerKey {
            index,
            generation: self.entries[index as usize].generation,
        }
    }

    /// Cancels a pending entry and returns its value; `None` if the key is
    /// stale (the entry fired or was cancelled already).
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let entry = self.entries.get(key.index as usize)?;
        if entry.generation != key.generation || entry.value.is_none() {
            return None;
        }
        self.unlink(key.index);
        Some(self.release(key.index))
    }

    /// Whether `key` names an entry that is still pending.
    pub fn contains(&self, key: TimerKey) -> bool {
        self.entries
            .get(key.index as usize)
            .is_some_and(|e| e.generation == key.generation && e.value.is_some())
    }

    /// Advances time to `tick`, calling `fire(deadline, key, value)` for every
    /// entry due at or before it, in deadline order (insertion order within a
    /// deadline). Ticks in the past are ignored.
    pub fn advance_to(&mut self, tick: u64, mut fire: impl FnMut(u64, TimerKey, T)) {
        while self.now < tick {
            if self.len == 0 {
                self.now = tick;
                return;
            }
            self.now += 1;
            let slot = (self.now & self.mask) as usize;
            let mut index = self.slots[slot].head;
            while index != NIL {
                let next = self.entries[index as usize].next;
                if self.entries[index as usize].deadline == self.now {
                    let key = TimerKey {
                        index,
                        generation: self.entries[index as usize].generation,
                    };
                    self.unlink(index);
                    let value = self.release(index);
                    fire(self.now, key, value);
                }
                index = next;
            }
        }
    }

    /// A lower bound of the next deadline: the first tick after `now` whose
    /// slot holds an entry (`None` when empty). Looks at most one rotation
    /// ahead, so a driver may wake a little early for a later round.
    pub fn next_deadline_hint(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        (1..=self.slots.len() as u64)
            .map(|d| self.now + d)
            .find(|t| self.slots[(t & self.mask) as usize].head != NIL)
    }

    fn link(&mut self, index: u32) {
        let slot = (self.entries[index as usize].deadline & self.mask) as usize;
        let tail = self.slots[slot].tail;
        {
            let entry = &mut self.entries[index as usize];
            entry.prev = tail;
            entry.next = NIL;
        }
        if tail == NIL {
            self.slots[slot].head = index;
        } else {
            self.entries[tail as usize].next = index;
        }
        self.slots[slot].tail = index;
    }

    fn unlink(&mut self, index: u32) {
        let (prev, next, deadline) = {
            let e = &self.entries[index as usize];
            (e.prev, e.next, e.deadline)
        };
        let slot = (deadline & self.mask) as usize;
        if prev == NIL {
            self.slots[slot].head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.slots[slot].tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    /// Frees an unlinked entry's place and returns its value.
    fn release(&mut self, index: u32) -> T {
        let entry = &mut self.entries[index as usize];
        let value = entry.value.take().expect("a pending entry has a value");
        entry.generation = entry.generation.wrapping_add(1);
        entry.next = self.free;
        entry.prev = NIL;
        self.free = index;
        self.len -= 1;
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain<T>(wheel: &mut Wheel<T>, tick: u64) -> Vec<(u64, T)> {
        let mut out = Vec::new();
        wheel.advance_to(tick, |t, _, v| out.push((t, v)));
        out
    }

    #[test]
    fn fires_in_order_never_early() {
        let mut w = Wheel::new(8, 100);
        w.insert(105, 'a');
        w.insert(103, 'b');
        w.insert(103, 'c');
        w.insert(100, 'd'); // at now: next tick
        w.insert(5, 'e'); // in the past: next tick
        assert_eq!(drain(&mut w, 102), [(101, 'd'), (101, 'e')]);
        assert_eq!(drain(&mut w, 104), [(103, 'b'), (103, 'c')]);
        assert_eq!(drain(&mut w, 200), [(105, 'a')]);
        assert!(w.is_empty());
    }

    #[test]
    fn waits_whole_rounds_for_far_deadlines() {
        let mut w = Wheel::new(4, 0);
        w.insert(2, 1);
        w.insert(6, 2); // same slot, next round
        w.insert(1_000_002, 3); // same slot, far away
        assert_eq!(drain(&mut w, 5), [(2, 1)]);
        assert_eq!(drain(&mut w, 1_000_000), [(6, 2)]);
        assert_eq!(drain(&mut w, 1_000_002), [(1_000_002, 3)]);
    }

    #[test]
    fn stale_keys_cancel_nothing_and_places_are_reused() {
        let mut w = Wheel::new(16, 0);
        let a = w.insert(3, "a");
        assert_eq!(drain(&mut w, 3), [(3, "a")]);
        let b = w.insert(5, "b"); // reuses a's place
        assert_eq!(w.cancel(a), None, "a stale key cancelled another timer");
        assert_eq!(w.cancel(b), Some("b"));
        assert_eq!(w.cancel(b), None);
        assert_eq!(w.places(), 1);
        assert!(drain(&mut w, 100).is_empty());
    }

    #[test]
    fn an_empty_wheel_jumps_and_u64_edges_hold() {
        let mut w: Wheel<u8> = Wheel::new(64, u64::MAX - 10);
        assert_eq!(w.next_deadline_hint(), None);
        w.advance_to(u64::MAX - 5, |_, _, _| unreachable!());
        assert_eq!(w.now(), u64::MAX - 5);
        w.insert(u64::MAX, 1);
        assert_eq!(w.next_deadline_hint(), Some(u64::MAX));
        assert_eq!(drain(&mut w, u64::MAX), [(u64::MAX, 1)]);
    }
}

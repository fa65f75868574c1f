//! A hierarchical hashed timing wheel (the 1987 paper "Hashed and
//! Hierarchical Timing Wheels", scheme 7) as a pure data structure: time comes
//! in as ticks, due timers come out. It never reads a clock and starts no
//! threads; a driver (the troupe scheduler) owns a [`Wheel`], advances it to
//! the current tick, and sleeps until [`Wheel::next_deadline_hint`].
//!
//! # Operations
//!
//! | operation | cost | notes |
//! | --- | --- | --- |
//! | [`Wheel::insert`]`(deadline, value)` | O(1) | returns a [`TimerKey`]; a deadline at or before `now` fires at `now + 1` |
//! | [`Wheel::cancel`]`(key)` | O(1) | `None` for a stale key, which never cancels another timer |
//! | [`Wheel::advance_to`]`(tick, fire)` | O(1) per timer fired, plus cascades | calls `fire(tick, key, value)` in order |
//! | [`Wheel::pop_expired`]`(tick)` | the same, one timer at a time | cancel or insert between calls |
//! | [`Wheel::next_deadline`] / [`Wheel::next_deadline_hint`] | O(1) within level 0 / O(levels) | when a driver must wake up |
//! | [`Wheel::len`], [`Wheel::now`], [`Wheel::contains`], [`Wheel::deadline`] | O(1) | |
//!
//! # Guarantees
//!
//! * **Never early, at most one tick late.** A timer with deadline `d`
//!   fires during the advance that reaches `d`. One inserted with `d <= now`
//!   fires at `now + 1`, the next tick. Nothing is lost, however far a
//!   single [`advance_to`](Wheel::advance_to) jumps.
//! * **Exactly once.** Every inserted timer either fires once or is
//!   cancelled (and then never fires).
//! * **Order.** Timers fire in deadline order, and in insertion order among
//!   timers with the same deadline.
//! * **Any `u64` deadline.** Up to and including `u64::MAX`; there is no
//!   maximum delay and no overflow list.
//!
//! # Design: hierarchical, not one wheel with rounds
//!
//! Level 0 has one slot per tick (64 to 4,096 slots, chosen at
//! construction) and works as a window: a timer less than one rotation
//! ahead goes straight into the slot of its tick. Each level above has 64
//! slots, each as wide as the whole level below, up to bit 63 (ten levels
//! with 4,096 first-level slots); a timer further ahead sits on the level of
//! the highest digit in which its deadline differs from `now`, and when time
//! reaches the start of its slot it *cascades* to a lower level (scheme 7 of
//! the paper). A bitmap of occupied slots per level lets time skip empty
//! stretches.
//!
//! A single wheel with rounds (scheme 6) is simpler, but a timer beyond one
//! rotation is looked at once per rotation, a jump of a million ticks walks
//! a million slots, and the next deadline takes a scan to find. The
//! hierarchy keeps every operation O(1) or O(levels) for any deadline and
//! any jump. The price is one relink per cascade, which a timer less than a
//! rotation ahead never pays: with the troupe scheduler's 4,096 slots of
//! 1 ms, every timer under four seconds.
//!
//! Handing out a tick's timers is where memory latency shows: a slot's list
//! is a chain of dependent loads, one cache miss per timer when deadlines
//! are scattered over a large slab. So the wheel walks the lists of the
//! next eight ticks a little at a time, several chains at once, while it
//! hands out the current tick, and keeps their keys; a due tick is then a
//! queue of keys whose loads the processor can overlap. This only reads
//! ahead: it changes nothing about what fires or when.
//!
//! # Memory: 16 bytes per timer plus its value
//!
//! Timers live in a slab (one `Vec` with a free list; no allocation and no
//! `Box` per timer) and each slot's timers form an intrusive doubly-linked
//! list by `u32` index. A timer costs [`Wheel::ENTRY_SIZE`] bytes: 16 of
//! bookkeeping (the deadline's low 30 bits and two flags, two links, the
//! generation) plus the value as an `Option` ([`Wheel::ENTRY_OVERHEAD`]),
//! so 32 bytes for a `u64`, 32 for a boxed closure (a fat pointer, plus
//! the closure's own allocation), and 56 for the troupe scheduler's
//! actions (a function pointer and 32 bytes of closure kept inline, no
//! allocation). The rest of a deadline comes from the wheel's current
//! tick; a deadline 2^30 ticks or more ahead keeps its full value in a
//! side table. Ten million `u64` timers take 320 MB of slab (up
//! to 537 MB of capacity while the `Vec` grows by doubling; use
//! [`Wheel::with_capacity`] to avoid the slack). The wheel itself is a fixed
//! 53 KiB with 4,096 first-level slots, plus 8 bytes per key for the
//! current and the next eight ticks' timers ([`Wheel::heap_bytes`] counts
//! it all). A [`TimerKey`] is a slab index plus a generation, so a stale key
//! is detected, not misapplied.
//!
//! # Example
//!
//! A driver with a manual clock:
//!
//! ```
//! use troupe_timer::Wheel;
//!
//! let mut wheel = Wheel::new(4096, 0);
//! let flush = wheel.insert(5, "flush");
//! wheel.insert(3, "tick");
//! wheel.insert(3, "tock"); // same deadline: fires after "tick"
//! wheel.insert(1_000_000, "far"); // beyond level 0: cascades on the way
//! assert_eq!(wheel.next_deadline(), Some(3));
//!
//! assert_eq!(wheel.cancel(flush), Some("flush"));
//! assert_eq!(wheel.cancel(flush), None); // stale: already cancelled
//!
//! let mut fired = Vec::new();
//! wheel.advance_to(10, |tick, _key, value| fired.push((tick, value)));
//! assert_eq!(fired, [(3, "tick"), (3, "tock")]);
//! assert_eq!((wheel.now(), wheel.len()), (10, 1));
//!
//! // One jump, however far, fires what is due and nothing early.
//! wheel.advance_to(999_999, |_, _, _| unreachable!());
//! wheel.advance_to(u64::MAX, |tick, _, value| fired.push((tick, value)));
//! assert_eq!(fired.last(), Some(&(1_000_000, "far")));
//! assert!(wheel.is_empty());
//! ```
//!
//! Handing timers out one at a time lets the caller cancel between them:
//!
//! ```
//! use troupe_timer::Wheel;
//!
//! let mut wheel = Wheel::new(64, 0);
//! let first = wheel.insert(1, 'a');
//! let second = wheel.insert(1, 'b');
//! let (_, key, value) = wheel.pop_expired(1).unwrap();
//! assert_eq!((key, value), (first, 'a'));
//! assert_eq!(wheel.cancel(second), Some('b')); // due, but not handed out yet
//! assert_eq!(wheel.pop_expired(1), None);
//! ```

#![forbid(unsafe_code)]

mod slab;
mod wheel;

pub use slab::TimerKey;
pub use wheel::Wheel;

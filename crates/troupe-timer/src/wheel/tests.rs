//! White-box tests of the wheel: the invariants of `wheel.rs` checked after
//! every operation of random operation sequences, and the placement of
//! timers on levels. Behaviour seen from outside is tested in `tests/`.

use proptest::prelude::*;

use super::*;

impl<T> Wheel<T> {
    /// Panics unless invariants 1 and 2 of the module docs hold, the lists
    /// are well formed, and `occupied` matches the lists.
    fn check_invariants(&self) {
        let mut seen = 0;
        for level in 0..self.geometry.levels() {
            let slots = if level == 0 {
                self.geometry.slots0()
            } else {
                64
            };
            for slot in 0..slots {
                let list = self.slots[self.list(level, slot)];
                assert_eq!(
                    self.occupied.is_set(level, slot),
                    !list.is_empty(),
                    "occupancy of level {level} slot {slot}"
                );
                seen += self.check_list(list, |index, d| {
                    assert!(
                        d > self.now,
                        "deadline {d} pending in a slot at {}",
                        self.now
                    );
                    assert_eq!(
                        self.slab.on_level0(index),
                        level == 0,
                        "level-0 flag of {d}"
                    );
                    assert_eq!(self.geometry.slot_of(level, d), slot, "slot of {d}");
                    if level == 0 {
                        assert!(
                            d - self.now < self.geometry.slots0() as u64,
                            "{d} beyond the window"
                        );
                    } else {
                        assert_eq!(
                            self.geometry.upper_level(self.now, d),
                            level,
                            "level of {d}"
                        );
                    }
                });
            }
        }
        for index in self.due.pending(&self.slab) {
            assert_eq!(self.slab.deadline(index, self.now), self.now, "due queue");
            seen += 1;
        }
        assert_eq!(
            seen,
            self.len(),
            "every pending timer is in exactly one list"
        );
    }

    /// Walks `list` checking its links; returns its length.
    fn check_list(&self, list: List, check: impl Fn(u32, u64)) -> usize {
        let (mut index, mut prev, mut len) = (list.head, NIL, 0);
        while index != NIL {
            assert_eq!(self.slab.prev(index), prev, "back link");
            check(index, self.slab.deadline(index, self.now));
            (prev, index, len) = (index, self.slab.next(index), len + 1);
        }
        assert_eq!(list.tail, prev, "tail");
        len
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    InsertAt(u64),
    Cancel(usize),
    Advance(u64),
    Pop(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let delay = prop_oneof![
        0u64..80,
        0u64..5_000,
        0u64..1 << 20,
        (1u64 << 30) - 5_000..(1u64 << 30) + 5_000,
        any::<u64>()
    ];
    prop::collection::vec(
        prop_oneof![
            4 => delay.clone().prop_map(Op::Insert),
            1 => any::<u64>().prop_map(Op::InsertAt),
            2 => (0usize..64).prop_map(Op::Cancel),
            2 => delay.clone().prop_map(Op::Advance),
            1 => (0u64..3).prop_map(Op::Pop),
        ],
        1..150,
    )
}

proptest! {
    #[test]
    fn invariants_hold_after_every_operation(
        ops in ops(),
        slots in prop_oneof![Just(64usize), Just(4096)],
        start in prop_oneof![0u64..1000, Just(u64::MAX - 5_000)],
    ) {
        let mut wheel = Wheel::new(slots, start);
        let mut keys = Vec::new();
        for op in ops {
            match op {
                Op::Insert(delay) => keys.push(wheel.insert(wheel.now().saturating_add(delay), ())),
                Op::InsertAt(tick) => keys.push(wheel.insert(tick, ())),
                Op::Cancel(i) => {
                    if let Some(&key) = keys.get(i) {
                        wheel.cancel(key);
                    }
                }
                Op::Advance(by) => wheel.advance_to(wheel.now().saturating_add(by), |_, _, _| {}),
                Op::Pop(by) => {
                    wheel.pop_expired(wheel.now().saturating_add(by));
                }
            }
            wheel.check_invariants();
        }
    }
}

#[test]
fn delays_shorter_than_level_0_never_cascade() {
    let mut wheel = Wheel::new(4096, 4000);
    // 4100 is in level 0's next rotation, but less than 4,096 ticks ahead.
    let near = wheel.insert(4100, ());
    let edge = wheel.insert(4000 + 4095, ());
    assert!(wheel.slab.on_level0(near.index));
    assert!(wheel.slab.on_level0(edge.index));
    // 4,096 ahead is beyond the window: level 1, slot starting at 4096.
    let far = wheel.insert(4000 + 4096, ());
    assert!(!wheel.slab.on_level0(far.index));
    assert_eq!(wheel.level_of(far.index, 4000 + 4096), 1);
    wheel.check_invariants();
    assert_eq!(wheel.next_deadline_hint(), Some(4096));
    assert_eq!(wheel.next_deadline(), Some(4100));
    wheel.advance_to(4096, |_, _, _| unreachable!());
    assert!(wheel.slab.on_level0(far.index), "cascaded");
    assert_eq!(wheel.next_deadline_hint(), Some(4100));
    wheel.check_invariants();
}

#[test]
fn the_top_level_reaches_u64_max() {
    let mut wheel = Wheel::new(64, 0);
    wheel.insert(u64::MAX, 'z');
    wheel.insert(1 << 63, 'y');
    let top = wheel.geometry.levels() - 1;
    assert_eq!(wheel.geometry.place(wheel.now, u64::MAX), top);
    wheel.check_invariants();
    let mut fired = Vec::new();
    wheel.advance_to(u64::MAX, |tick, _, v| fired.push((tick, v)));
    assert_eq!(fired, [(1 << 63, 'y'), (u64::MAX, 'z')]);
    wheel.check_invariants();
}

#[test]
fn far_deadlines_live_in_the_side_table_until_their_place_is_freed() {
    const NEAR: u64 = 1 << 30;
    let mut wheel = Wheel::new(4096, 10);
    let near = wheel.insert(10 + NEAR - 1, 'n');
    let far = wheel.insert(10 + NEAR, 'f');
    let cancelled = wheel.insert(u64::MAX, 'c');
    assert_eq!(wheel.slab.far_len(), 2, "the last two are far");
    wheel.check_invariants();
    assert_eq!(wheel.cancel(cancelled), Some('c'));
    assert_eq!(wheel.slab.far_len(), 1);
    // A jump to just before the near one: every deadline still reads back.
    wheel.advance_to(10 + NEAR - 2, |_, _, _| unreachable!());
    assert_eq!(wheel.deadline(near), Some(10 + NEAR - 1));
    assert_eq!(wheel.deadline(far), Some(10 + NEAR));
    wheel.check_invariants();
    let mut fired = Vec::new();
    wheel.advance_to(10 + NEAR, |tick, _, v| fired.push((tick, v)));
    assert_eq!(fired, [(10 + NEAR - 1, 'n'), (10 + NEAR, 'f')]);
    assert!(wheel.slab.far_len() == 0, "freed with its place");
    wheel.check_invariants();
}

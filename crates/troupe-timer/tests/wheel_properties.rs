//! Property tests of the wheel against a simple model: every inserted,
//! uncancelled entry fires exactly once, never early, at most one tick late
//! (only when inserted at or before `now`), in deadline order and insertion
//! order within a deadline; cancelled entries never fire.

use proptest::prelude::*;
use troupe_timer::{TimerKey, Wheel};

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    Cancel(usize),
    Advance(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0u64..300).prop_map(Op::Insert),
            1 => (0usize..64).prop_map(Op::Cancel),
            2 => (0u64..80).prop_map(Op::Advance),
        ],
        1..200,
    )
}

proptest! {
    #[test]
    fn fires_exactly_once_in_order_never_early(ops in ops(), slots in 1usize..64, start in 0u64..1000) {
        let mut wheel = Wheel::new(slots, start);
        // (id, due tick as inserted, key, cancelled, fired, now at insert)
        let mut timers: Vec<(usize, u64, TimerKey, bool, bool, u64)> = Vec::new();
        let mut last_fired: Option<(u64, usize)> = None;
        for op in ops {
            match op {
                Op::Insert(delay) => {
                    let id = timers.len();
                    let due = wheel.now() + delay;
                    let key = wheel.insert(due, id);
                    timers.push((id, due, key, false, false, wheel.now()));
                }
                Op::Cancel(i) => {
                    if let Some(t) = timers.get_mut(i) {
                        let got = wheel.cancel(t.2);
                        let pending = !t.3 && !t.4;
                        prop_assert_eq!(got.is_some(), pending, "cancel of timer {}", i);
                        t.3 = true;
                    }
                }
                Op::Advance(by) => {
                    let target = wheel.now() + by;
                    let mut fired = Vec::new();
                    wheel.advance_to(target, |tick, _, id| fired.push((tick, id)));
                    for (tick, id) in fired {
                        let t = &mut timers[id];
                        prop_assert!(!t.3, "cancelled timer {} fired", id);
                        prop_assert!(!t.4, "timer {} fired twice", id);
                        t.4 = true;
                        // Exactly at its deadline; one tick late only for a
                        // deadline at or before `now` when it was inserted.
                        prop_assert!(tick >= t.1, "timer {} fired early at {}", id, tick);
                        prop_assert_eq!(tick, t.1.max(t.5 + 1), "timer {} fired late", id);
                        if let Some((lt, lid)) = last_fired {
                            prop_assert!((lt, lid) < (tick, id), "out of order");
                        }
                        last_fired = Some((tick, id));
                    }
                    prop_assert_eq!(wheel.now(), target);
                }
            }
        }
        // Everything left fires once when time runs far enough.
        let mut rest = Vec::new();
        wheel.advance_to(wheel.now() + 400, |_, _, id| rest.push(id));
        for id in rest {
            prop_assert!(!timers[id].3 && !timers[id].4);
            timers[id].4 = true;
        }
        for t in &timers {
            prop_assert!(t.3 || t.4, "timer {} never fired", t.0);
        }
        prop_assert!(wheel.is_empty());
    }
}

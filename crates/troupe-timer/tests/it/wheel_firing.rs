//! Firing, cancelling and moving time on the wheel with a manual clock:
//! order, deadlines in the past, big jumps across levels, deadlines far
//! beyond the first level, `u64` edges, cancelling while and after timers
//! fire, stale keys and the reuse of slab places.

use std::rc::Rc;

use troupe_timer::Wheel;

/// Advances to `tick` and returns what fired, as `(tick, value)`.
fn advance<T>(wheel: &mut Wheel<T>, tick: u64) -> Vec<(u64, T)> {
    let mut fired = Vec::new();
    wheel.advance_to(tick, |at, _, value| fired.push((at, value)));
    fired
}

#[test]
fn fires_in_deadline_order_then_insertion_order() {
    let mut wheel = Wheel::new(64, 100);
    wheel.insert(105, 'a');
    wheel.insert(103, 'b');
    wheel.insert(103, 'c');
    wheel.insert(104, 'd');
    wheel.insert(103, 'e');
    assert_eq!(
        advance(&mut wheel, 103),
        [(103, 'b'), (103, 'c'), (103, 'e')]
    );
    assert_eq!(advance(&mut wheel, 200), [(104, 'd'), (105, 'a')]);
    assert!(wheel.is_empty());
}

#[test]
fn deadlines_at_or_before_now_fire_on_the_next_tick() {
    let mut wheel = Wheel::new(64, 100);
    wheel.insert(100, 'n'); // now
    wheel.insert(5, 'p'); // long past
    wheel.insert(0, 'z');
    wheel.insert(101, 'x'); // the next tick anyway, inserted after
    assert_eq!(wheel.next_deadline(), Some(101));
    assert_eq!(advance(&mut wheel, 100), []);
    assert_eq!(
        advance(&mut wheel, 101),
        [(101, 'n'), (101, 'p'), (101, 'z'), (101, 'x')]
    );
}

#[test]
fn an_advance_into_the_past_moves_nothing() {
    let mut wheel = Wheel::new(64, 50);
    wheel.insert(51, ());
    assert_eq!(advance(&mut wheel, 10), []);
    assert_eq!(wheel.now(), 50);
    assert_eq!(advance(&mut wheel, 51).len(), 1);
}

#[test]
fn one_big_jump_fires_every_level_in_order() {
    let mut wheel = Wheel::new(64, 0);
    let deadlines = [
        1,
        63,
        64,
        65,
        4095,
        4096,
        4097,
        1 << 20,
        (1 << 30) + 7,
        1 << 40,
        u64::MAX / 2,
    ];
    // Inserted out of order, twice each: the second copy fires second.
    for (copy, round) in [(0, deadlines), (1, deadlines)] {
        for &d in round.iter().rev() {
            wheel.insert(d, (d, copy));
        }
    }
    let fired = advance(&mut wheel, u64::MAX / 2);
    let expected: Vec<_> = deadlines
        .iter()
        .flat_map(|&d| [(d, (d, 0)), (d, (d, 1))])
        .collect();
    assert_eq!(fired, expected);
    assert_eq!(wheel.now(), u64::MAX / 2);
}

#[test]
fn far_deadlines_wait_through_jumps_and_fire_exactly_on_time() {
    let mut wheel = Wheel::new(64, 0);
    let far = 1_000_000_000_007;
    wheel.insert(far, "far");
    for stop in [1, 64, 4096, 1 << 20, far / 2, far - 4097, far - 1] {
        assert_eq!(advance(&mut wheel, stop), [], "fired early at {stop}");
        assert!(wheel.next_deadline_hint().unwrap() <= far);
        assert_eq!(wheel.next_deadline(), Some(far));
    }
    assert_eq!(advance(&mut wheel, far), [(far, "far")]);
    assert_eq!(wheel.next_deadline(), None);
}

#[test]
fn timers_placed_before_and_after_a_cascade_keep_insertion_order() {
    let mut wheel = Wheel::new(64, 0);
    // Inserted while far away: on an upper level, cascading at 4096.
    wheel.insert(4096, "early at the slot start");
    wheel.insert(4100, "early");
    assert_eq!(advance(&mut wheel, 4050), []);
    // Now within level 0's 64-tick window: placed on level 0 directly.
    wheel.insert(4096, "late at the slot start");
    wheel.insert(4100, "late");
    assert_eq!(
        advance(&mut wheel, 5000),
        [
            (4096, "early at the slot start"),
            (4096, "late at the slot start"),
            (4100, "early"),
            (4100, "late"),
        ]
    );
}

#[test]
fn u64_edges_hold() {
    // From tick 0 straight to the last tick.
    let mut wheel = Wheel::new(4096, 0);
    wheel.insert(u64::MAX, 2);
    wheel.insert(u64::MAX - 1, 1);
    assert_eq!(wheel.next_deadline(), Some(u64::MAX - 1));
    assert_eq!(
        advance(&mut wheel, u64::MAX),
        [(u64::MAX - 1, 1), (u64::MAX, 2)]
    );
    assert_eq!(wheel.now(), u64::MAX);

    // A clock that starts near the end; an empty wheel jumps at once.
    let mut wheel: Wheel<u8> = Wheel::new(64, u64::MAX - 10);
    assert_eq!(wheel.next_deadline_hint(), None);
    assert_eq!(advance(&mut wheel, u64::MAX - 5), []);
    assert_eq!(wheel.now(), u64::MAX - 5);
    wheel.insert(u64::MAX, 1);
    wheel.insert(0, 0); // in the past: the next tick
    assert_eq!(
        advance(&mut wheel, u64::MAX),
        [(u64::MAX - 4, 0), (u64::MAX, 1)]
    );

    // At the end of time there is no next tick: a timer is due at once.
    let key = wheel.insert(3, 3);
    assert_eq!(wheel.next_deadline(), Some(u64::MAX));
    assert_eq!(wheel.deadline(key), Some(u64::MAX));
    assert_eq!(advance(&mut wheel, u64::MAX), [(u64::MAX, 3)]);
    let key = wheel.insert(4, 4);
    assert_eq!(wheel.cancel(key), Some(4));
    assert!(wheel.is_empty());
}

#[test]
fn cancelling_while_a_tick_is_handed_out() {
    let mut wheel = Wheel::new(64, 0);
    let a = wheel.insert(5, 'a');
    let b = wheel.insert(5, 'b');
    let c = wheel.insert(5, 'c');
    let d = wheel.insert(6, 'd');
    assert_eq!(wheel.pop_expired(10), Some((5, a, 'a')));
    // 'b' is due and not handed out yet; 'a' has fired.
    assert_eq!(wheel.cancel(b), Some('b'));
    assert_eq!(wheel.cancel(a), None);
    // Inserting mid-tick: a deadline at `now` means the next tick.
    let e = wheel.insert(5, 'e');
    assert_eq!(wheel.deadline(e), Some(6));
    assert_eq!(wheel.pop_expired(10), Some((5, c, 'c')));
    assert_eq!(wheel.cancel(d), Some('d'));
    assert_eq!(wheel.pop_expired(10), Some((6, e, 'e')));
    assert_eq!(wheel.pop_expired(10), None);
    assert_eq!(wheel.now(), 10);
}

#[test]
fn keys_handed_out_by_advance_are_stale() {
    let mut wheel = Wheel::new(64, 0);
    let key = wheel.insert(1, "x");
    let mut fired_keys = Vec::new();
    wheel.advance_to(1, |_, key, _| fired_keys.push(key));
    assert_eq!(fired_keys, [key]);
    assert!(!wheel.contains(key));
    assert_eq!(wheel.cancel(key), None);
    assert_eq!(wheel.deadline(key), None);
}

#[test]
fn stale_keys_never_cancel_the_timer_that_reuses_their_place() {
    let mut wheel = Wheel::new(64, 0);
    let a = wheel.insert(3, "a");
    assert_eq!(advance(&mut wheel, 3), [(3, "a")]);
    let b = wheel.insert(5, "b"); // reuses a's place
    assert_eq!(wheel.places(), 1);
    assert_ne!(a, b);
    assert_eq!(wheel.cancel(a), None, "a stale key cancelled another timer");
    assert!(wheel.contains(b));
    assert_eq!(wheel.cancel(b), Some("b"));
    assert_eq!(wheel.cancel(b), None);
    let c = wheel.insert(7, "c"); // reuses it again
    assert_eq!(wheel.cancel(b), None);
    assert_eq!(advance(&mut wheel, 100), [(7, "c")]);
    assert!(!wheel.contains(c));
}

#[test]
fn freed_places_are_reused_under_churn() {
    let mut wheel = Wheel::new(64, 0);
    for round in 0..1_000u64 {
        let keys: Vec<_> = (0..10)
            .map(|i| wheel.insert(round + 1 + i % 3, i))
            .collect();
        for key in keys.iter().step_by(2) {
            assert!(wheel.cancel(*key).is_some());
        }
        assert_eq!(wheel.len(), 5);
        assert_eq!(advance(&mut wheel, round + 3).len(), 5);
    }
    assert!(
        wheel.places() <= 10,
        "{} places for 10 live timers",
        wheel.places()
    );
}

#[test]
fn values_are_dropped_when_cancelled_fired_or_left_in_a_dropped_wheel() {
    let value = Rc::new(());
    let mut wheel = Wheel::new(64, 0);
    let key = wheel.insert(1, Rc::clone(&value));
    wheel.insert(2, Rc::clone(&value));
    wheel.insert(1 << 40, Rc::clone(&value));
    assert_eq!(Rc::strong_count(&value), 4);
    drop(wheel.cancel(key));
    assert_eq!(advance(&mut wheel, 2).len(), 1);
    assert_eq!(Rc::strong_count(&value), 2);
    drop(wheel);
    assert_eq!(Rc::strong_count(&value), 1);
}

#[test]
fn next_deadline_and_its_hint() {
    let mut wheel = Wheel::new(64, 0);
    assert_eq!(
        (wheel.next_deadline(), wheel.next_deadline_hint()),
        (None, None)
    );
    wheel.insert(10_000, ());
    // Exact, and the hint is where the upper slot holding it starts.
    assert_eq!(wheel.next_deadline(), Some(10_000));
    assert_eq!(wheel.next_deadline_hint(), Some(8192));
    wheel.insert(40, ());
    assert_eq!(wheel.next_deadline(), Some(40));
    assert_eq!(wheel.next_deadline_hint(), Some(40));
    // A driver that sleeps until the hint, again and again, fires both.
    let mut fired = Vec::new();
    while let Some(tick) = wheel.next_deadline_hint() {
        wheel.advance_to(tick, |at, _, _| fired.push(at));
    }
    assert_eq!(fired, [40, 10_000]);
}

#[test]
fn first_level_size_is_rounded_and_clamped() {
    for slots in [0, 1, 63, 100, 5000, usize::MAX] {
        let mut wheel = Wheel::new(slots, 7);
        wheel.insert(7 + 3000, slots);
        wheel.insert(9, 0);
        assert_eq!(advance(&mut wheel, 20_000), [(9, 0), (3007, slots)]);
    }
}

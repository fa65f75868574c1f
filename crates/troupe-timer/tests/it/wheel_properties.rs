//! Property tests of the wheel against a model (a list of every timer ever
//! inserted and when it must fire), with a manual clock: every inserted,
//! uncancelled timer fires exactly once, at its deadline, or at the tick
//! after the insertion if its deadline had passed (never early, at most one
//! tick late); cancelled timers never fire; timers fire in deadline order,
//! then insertion order. Operation sequences mix near and far deadlines,
//! tick-by-tick steps and big jumps, cancels of pending, due and fired
//! timers, and clocks that start near `u64::MAX`.

use proptest::prelude::*;
use troupe_timer::{TimerKey, Wheel};

#[derive(Debug, Clone)]
enum Op {
    /// A deadline this many ticks from now (saturating).
    Insert(u64),
    /// An absolute deadline, often in the past.
    InsertAt(u64),
    /// Cancel the timer inserted `n`-th (if any), whatever its state.
    Cancel(usize),
    /// Advance this many ticks (saturating).
    Advance(u64),
    /// Take one due timer by `pop_expired`, then cancel the `n`-th timer:
    /// cancelling while a tick is being handed out.
    PopThenCancel(u64, usize),
}

/// Ticks ahead: mostly within a small first level, some beyond it, some
/// around 2^30, some far beyond every level below the top.
fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0u64..100,
        3 => 0u64..5_000,
        1 => 0u64..1 << 24,
        // Either side of 2^30 ticks, where a place stops holding its
        // deadline itself (see `slab.rs`).
        1 => (1u64 << 30) - 5_000..(1u64 << 30) + 5_000,
        1 => any::<u64>(),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            6 => delay().prop_map(Op::Insert),
            1 => any::<u64>().prop_map(Op::InsertAt),
            2 => (0usize..100).prop_map(Op::Cancel),
            3 => prop_oneof![4 => 0u64..3, 2 => 0u64..200, 1 => delay()].prop_map(Op::Advance),
            1 => (0u64..3, 0usize..100).prop_map(|(by, n)| Op::PopThenCancel(by, n)),
        ],
        1..250,
    )
}

/// Many timers on each of the next few ticks, handed out one by one with
/// cancels and inserts in between: the read-ahead's keys are used, and the
/// lists change under it.
fn dense_ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            8 => (0u64..12).prop_map(Op::Insert),
            2 => (0usize..400).prop_map(Op::Cancel),
            1 => (0u64..2).prop_map(Op::Advance),
            6 => (0u64..2, 0usize..400).prop_map(|(by, n)| Op::PopThenCancel(by, n)),
        ],
        1..600,
    )
}

/// What the model knows about one inserted timer.
#[derive(Debug)]
struct Timer {
    key: TimerKey,
    /// The tick it must fire at.
    fires_at: u64,
    cancelled: bool,
    fired: bool,
}

impl Timer {
    fn pending(&self) -> bool {
        !self.cancelled && !self.fired
    }
}

/// The model: timers by insertion number (which is also their value in the
/// wheel) and the last timer fired, for the order check.
struct Model {
    timers: Vec<Timer>,
    last_fired: Option<(u64, usize)>,
}

impl Model {
    fn insert(&mut self, wheel: &mut Wheel<usize>, deadline: u64) {
        let now = wheel.now();
        // Past or present deadlines fire at the next tick; at the end of
        // time there is none, and the timer is due at once.
        let fires_at = deadline.max(now.saturating_add(1));
        let id = self.timers.len();
        let key = wheel.insert(deadline, id);
        assert_eq!(wheel.deadline(key), Some(fires_at));
        self.timers.push(Timer {
            key,
            fires_at,
            cancelled: false,
            fired: false,
        });
    }

    fn cancel(&mut self, wheel: &mut Wheel<usize>, n: usize) -> Result<(), TestCaseError> {
        if let Some(timer) = self.timers.get_mut(n) {
            let got = wheel.cancel(timer.key);
            prop_assert_eq!(got, timer.pending().then_some(n), "cancel of timer {}", n);
            prop_assert!(!wheel.contains(timer.key));
            timer.cancelled |= got.is_some();
        }
        Ok(())
    }

    fn fired(&mut self, tick: u64, key: TimerKey, id: usize) -> Result<(), TestCaseError> {
        let timer = &mut self.timers[id];
        prop_assert_eq!(key, timer.key, "key of timer {}", id);
        prop_assert!(!timer.cancelled, "cancelled timer {} fired", id);
        prop_assert!(!timer.fired, "timer {} fired twice", id);
        prop_assert_eq!(tick, timer.fires_at, "timer {} fired at the wrong tick", id);
        timer.fired = true;
        if let Some(last) = self.last_fired {
            prop_assert!(
                last < (tick, id),
                "timer {} fired out of order after {:?}",
                id,
                last
            );
        }
        self.last_fired = Some((tick, id));
        Ok(())
    }

    /// After advancing to `now`, nothing due by then is still pending.
    fn check_nothing_missed(&self, wheel: &Wheel<usize>) -> Result<(), TestCaseError> {
        let pending = self.timers.iter().filter(|t| t.pending());
        for (id, timer) in pending.enumerate() {
            prop_assert!(timer.fires_at > wheel.now(), "timer {} missed", id);
        }
        prop_assert_eq!(
            wheel.len(),
            self.timers.iter().filter(|t| t.pending()).count()
        );
        Ok(())
    }
}

fn run(ops: Vec<Op>, slots: usize, start: u64) -> Result<(), TestCaseError> {
    let mut wheel = Wheel::new(slots, start);
    let mut model = Model {
        timers: Vec::new(),
        last_fired: None,
    };
    for op in ops {
        match op {
            Op::Insert(delay) => {
                let deadline = wheel.now().saturating_add(delay);
                model.insert(&mut wheel, deadline);
            }
            Op::InsertAt(tick) => model.insert(&mut wheel, tick),
            Op::Cancel(n) => model.cancel(&mut wheel, n)?,
            Op::Advance(by) => {
                let target = wheel.now().saturating_add(by);
                let mut fired = Vec::new();
                wheel.advance_to(target, |tick, key, id| fired.push((tick, key, id)));
                for (tick, key, id) in fired {
                    prop_assert!(tick <= target);
                    model.fired(tick, key, id)?;
                }
                prop_assert_eq!(wheel.now(), target);
                model.check_nothing_missed(&wheel)?;
            }
            Op::PopThenCancel(by, n) => {
                let target = wheel.now().saturating_add(by);
                if let Some((tick, key, id)) = wheel.pop_expired(target) {
                    model.fired(tick, key, id)?;
                }
                model.cancel(&mut wheel, n)?;
            }
        }
        if let Some(next) = wheel.next_deadline() {
            let hint = wheel.next_deadline_hint();
            prop_assert!(
                hint.is_some_and(|h| h <= next),
                "hint {:?} after {}",
                hint,
                next
            );
            let earliest = model
                .timers
                .iter()
                .filter(|t| t.pending())
                .map(|t| t.fires_at)
                .min();
            prop_assert_eq!(Some(next), earliest);
        } else {
            prop_assert!(wheel.is_empty());
        }
    }
    // Everything left fires, once, when time runs out.
    let mut rest = Vec::new();
    wheel.advance_to(u64::MAX, |tick, key, id| rest.push((tick, key, id)));
    for (tick, key, id) in rest {
        model.fired(tick, key, id)?;
    }
    for (id, timer) in model.timers.iter().enumerate() {
        prop_assert!(timer.cancelled || timer.fired, "timer {} never fired", id);
    }
    prop_assert!(wheel.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fires_exactly_once_in_order_never_early(
        ops in ops(),
        slots in prop_oneof![Just(64usize), Just(256), Just(4096)],
        start in prop_oneof![0u64..10_000, any::<u64>(), Just(u64::MAX - 100)],
    ) {
        run(ops, slots, start)?;
    }

    #[test]
    fn dense_ticks_fire_exactly_once_in_order(
        ops in dense_ops(),
        start in prop_oneof![0u64..10_000, Just(u64::MAX - 30)],
    ) {
        run(ops, 64, start)?;
    }

    /// Tick by tick, as a driver advances: a timer due at `d` fires during
    /// `advance_to(d)`, one inserted at or before `now` during the next one.
    #[test]
    fn tick_by_tick_each_timer_fires_during_its_own_advance(
        delays in prop::collection::vec(0u64..300, 1..300),
        start in 0u64..100_000,
    ) {
        let mut wheel = Wheel::new(64, start);
        let mut expected = Vec::new();
        for (i, &delay) in delays.iter().enumerate() {
            // Some deadlines in the past.
            let deadline = (start + delay).saturating_sub(20);
            wheel.insert(deadline, i);
            expected.push((deadline.max(start + 1), i));
        }
        expected.sort();
        let mut fired = Vec::new();
        for tick in start + 1..=start + 300 {
            wheel.advance_to(tick, |at, _, i| {
                assert_eq!(at, tick, "timer {i} fired during advance_to({tick})");
                fired.push((at, i));
            });
        }
        prop_assert_eq!(fired, expected);
    }
}

//! One-shot timers: `schedule_once` delivers its message no earlier than the
//! delay after scheduling, timers fire in deadline order, and a timer
//! cancelled before its deadline never delivers.
//!
//! Absence of the cancelled message is shown with a *fence*: a second timer
//! with a later deadline, to the same actor. The driver thread fires entries
//! in deadline order and delivers them through `tell`, so the two messages
//! share a sender and per-sender FIFO holds: when the fence has arrived, the
//! cancelled message would have arrived before it.

use std::time::{Duration, Instant};

use crate::support::{system, PATIENCE};
use troupe::ActorRef;
use troupe::{Actor, Context, Props};
use troupe_testkit::{terminate, TestProbe};

/// Reports each message with the moment it was handled.
struct Stamp {
    out: ActorRef<(&'static str, Instant)>,
}

impl Actor for Stamp {
    type Msg = &'static str;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, label: &'static str) {
        self.out.tell((label, Instant::now()));
    }
}

#[test]
fn a_timer_delivers_no_earlier_than_its_delay_and_in_deadline_order() {
    let system = system();
    let arrivals = TestProbe::new(&system, "timer arrivals");
    let out = arrivals.actor_ref();
    let actor = system
        .spawn(Props::new(move || Stamp { out: out.clone() }))
        .unwrap();

    let delays = [("late", 50), ("soon", 10), ("middle", 30)];
    let scheduled_at = Instant::now();
    for (label, ms) in delays {
        system
            .scheduler()
            .schedule_once(Duration::from_millis(ms), &actor, label);
    }
    let got = arrivals.receive_n(3, PATIENCE);
    let order: Vec<_> = got.iter().map(|(label, _)| *label).collect();
    assert_eq!(order, ["soon", "middle", "late"], "timers fire by deadline");
    for ((label, at), (_, ms)) in got.iter().zip([("soon", 10), ("middle", 30), ("late", 50)]) {
        let after = at.duration_since(scheduled_at);
        assert!(
            after >= Duration::from_millis(ms),
            "{label} arrived {after:?} after scheduling, before its {ms} ms"
        );
    }
    assert_eq!(system.scheduler().pending(), 0);
    terminate(&system, PATIENCE);
    assert!(arrivals.received().is_empty());
}

#[test]
fn a_timer_cancelled_before_its_deadline_never_delivers() {
    let system = system();
    let arrivals = TestProbe::new(&system, "timer arrivals");
    let out = arrivals.actor_ref();
    let actor = system
        .spawn(Props::new(move || Stamp { out: out.clone() }))
        .unwrap();

    let scheduler = system.scheduler();
    let cancelled = scheduler.schedule_once(Duration::from_millis(100), &actor, "cancelled");
    let fence = scheduler.schedule_once(Duration::from_millis(120), &actor, "fence");
    cancelled.cancel();
    cancelled.cancel(); // idempotent
    assert!(!cancelled.is_pending());
    assert!(fence.is_pending());

    let (label, _) = arrivals.expect_msg(PATIENCE);
    assert_eq!(label, "fence", "the cancelled timer delivered");
    assert!(!fence.is_pending(), "a fired timer is no longer pending");
    terminate(&system, PATIENCE);
    assert!(
        arrivals.received().is_empty(),
        "nothing after the fence either"
    );
    assert_eq!(system.dead_letter_count(), 0);
}

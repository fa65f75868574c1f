//! Bounded mailboxes: each overflow policy (fail, drop newest, drop oldest),
//! applied at enqueue so that the bound is never passed, even while the
//! consumer is stuck; which sends wait under which policy; producers that
//! wait for room (blocking with a timeout, and async), and waiting producers
//! released with `Closed` when the actor stops.
//!
//! The consumer is held inside a handler on a latch while the test fills its
//! mailbox, so "full" is a fact, not a race.

use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::support::{system, PATIENCE};
use troupe::{
    Actor, ActorRef, ActorSystem, Context, DeadLetterReason, MailboxConfig, Overflow, Props,
    SendError, TrySendError,
};
use troupe_testkit::{terminate, Latch, TestProbe};

enum Msg {
    /// Hold the handler until the latch opens.
    Hold(Latch),
    Value(u32),
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Hold(..) => f.write_str("Hold"),
            Msg::Value(v) => write!(f, "Value({v})"),
        }
    }
}

/// Reports every value it handles.
struct Consumer {
    seen: ActorRef<u32>,
}

impl Actor for Consumer {
    type Msg = Msg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Hold(latch) => latch.wait(PATIENCE),
            Msg::Value(v) => self.seen.tell(v),
        }
    }
}

fn spawn_consumer(
    system: &ActorSystem,
    capacity: usize,
    overflow: Overflow,
) -> (ActorRef<Msg>, TestProbe<u32>) {
    let seen = TestProbe::new(system, "values handled");
    let sender = seen.actor_ref();
    let actor = system
        .spawn(
            Props::new(move || Consumer {
                seen: sender.clone(),
            })
            .mailbox(MailboxConfig::bounded(capacity, overflow)),
        )
        .unwrap();
    (actor, seen)
}

/// A consumer held inside a handler, so its mailbox fills up.
fn spawn_held(
    system: &ActorSystem,
    capacity: usize,
    overflow: Overflow,
) -> (ActorRef<Msg>, TestProbe<u32>, Latch) {
    let (actor, seen) = spawn_consumer(system, capacity, overflow);
    let latch = Latch::new();
    actor.tell(Msg::Hold(latch.clone()));
    latch.expect_waiters(1, PATIENCE);
    (actor, seen, latch)
}

/// The reasons of the system's dead letters, on a plain channel: a tell to
/// a probe from the listener, once the probe has stopped at shutdown, would
/// be a dead letter of its own, back to the listener, without end.
fn overflow_letters(system: &ActorSystem) -> Receiver<DeadLetterReason> {
    let (sender, letters) = mpsc::channel();
    system.on_dead_letter(move |letter| {
        let _ = sender.send(letter.reason);
    });
    letters
}

#[test]
fn fail_hands_the_message_back_and_tell_dead_letters_it() {
    let system = system();
    let letters = overflow_letters(&system);
    let (actor, seen, latch) = spawn_held(&system, 4, Overflow::Fail);
    for v in 0..4 {
        actor.try_tell(Msg::Value(v)).unwrap();
    }
    assert_eq!(actor.queued(), 4);
    match actor.try_tell(Msg::Value(4)) {
        Err(TrySendError::Full(Msg::Value(4))) => {}
        other => panic!("expected Full(4), got {other:?}"),
    }
    actor.tell(Msg::Value(5));
    assert_eq!(
        letters.recv_timeout(PATIENCE),
        Ok(DeadLetterReason::MailboxFull)
    );
    latch.open();
    assert_eq!(seen.receive_n(4, PATIENCE), [0, 1, 2, 3]);
    terminate(&system, PATIENCE);
    assert_eq!(system.dead_letter_count(), 1);
}

#[test]
fn drop_newest_keeps_the_first_messages() {
    let system = system();
    let (actor, seen, latch) = spawn_held(&system, 3, Overflow::DropNewest);
    for v in 0..10 {
        actor.try_tell(Msg::Value(v)).unwrap();
    }
    assert_eq!(system.dead_letter_count(), 7);
    latch.open();
    assert_eq!(seen.receive_n(3, PATIENCE), [0, 1, 2]);
    terminate(&system, PATIENCE);
    assert_eq!(seen.received(), Vec::<u32>::new());
}

#[test]
fn drop_oldest_keeps_the_last_messages() {
    let system = system();
    let (actor, seen, latch) = spawn_held(&system, 4, Overflow::DropOldest);
    for v in 0..10 {
        actor.tell(Msg::Value(v));
    }
    latch.open();
    assert_eq!(seen.receive_n(4, PATIENCE), [6, 7, 8, 9]);
    terminate(&system, PATIENCE);
    assert_eq!(system.dead_letter_count(), 6);
    assert_eq!(seen.received(), Vec::<u32>::new());
}

/// The bound holds at enqueue under `DropOldest` too: while the consumer is
/// held, every `tell` past the capacity drops the oldest queued message to
/// dead letters there and then, so the mailbox never holds more than its
/// capacity and the dead-letter count is exact after every `tell`.
#[test]
fn drop_oldest_holds_the_bound_and_counts_each_drop_at_enqueue() {
    const CAPACITY: usize = 1_000;
    const SENT: u32 = 100_000;
    let system = system();
    let (actor, seen, latch) = spawn_held(&system, CAPACITY, Overflow::DropOldest);
    let mut deepest = 0;
    let mut first_miscount = None;
    for v in 0..SENT {
        actor.tell(Msg::Value(v));
        deepest = deepest.max(actor.queued());
        let dropped = (v as u64 + 1).saturating_sub(CAPACITY as u64);
        let counted = system.dead_letter_count();
        if counted != dropped && first_miscount.is_none() {
            first_miscount = Some((v, counted, dropped));
        }
    }
    assert!(
        deepest <= CAPACITY && first_miscount.is_none(),
        "while the consumer was held the mailbox held up to {deepest} messages \
         (capacity {CAPACITY}); first dead-letter miscount (after value, counted, \
         dropped): {first_miscount:?}"
    );
    assert_eq!(actor.queued(), CAPACITY);
    assert_eq!(
        system.dead_letter_count(),
        u64::from(SENT) - CAPACITY as u64
    );
    latch.open();
    let kept = seen.receive_n(CAPACITY, PATIENCE);
    assert!(
        kept.iter().copied().eq(SENT - CAPACITY as u32..SENT),
        "not the newest {CAPACITY} in order: {:?}..{:?}",
        kept.first(),
        kept.last()
    );
    terminate(&system, PATIENCE);
    assert_eq!(seen.received(), Vec::<u32>::new());
    assert_eq!(
        system.dead_letter_count(),
        u64::from(SENT) - CAPACITY as u64
    );
}

/// Several producers racing into a full `DropOldest` mailbox: none of them
/// ever sees it past its capacity, every message is handled or counted as a
/// dead letter, and each producer's surviving messages keep their order.
#[test]
fn drop_oldest_holds_the_bound_against_racing_producers() {
    const CAPACITY: usize = 64;
    const PRODUCERS: u32 = 2;
    const EACH: u32 = 20_000;
    let system = system();
    let (actor, seen, latch) = spawn_held(&system, CAPACITY, Overflow::DropOldest);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let actor = actor.clone();
            std::thread::spawn(move || {
                let mut deepest = 0;
                for i in 0..EACH {
                    actor.tell(Msg::Value(p * EACH + i));
                    deepest = deepest.max(actor.queued());
                }
                deepest
            })
        })
        .collect();
    for producer in producers {
        let deepest = producer.join().unwrap();
        assert!(deepest <= CAPACITY, "a producer saw {deepest} queued");
    }
    let sent = u64::from(PRODUCERS * EACH);
    assert_eq!(actor.queued(), CAPACITY);
    assert_eq!(system.dead_letter_count(), sent - CAPACITY as u64);
    latch.open();
    let kept = seen.receive_n(CAPACITY, PATIENCE);
    for p in 0..PRODUCERS {
        let own: Vec<u32> = kept.iter().copied().filter(|v| v / EACH == p).collect();
        assert!(
            own.windows(2).all(|w| w[0] < w[1]),
            "producer {p} out of order"
        );
    }
    terminate(&system, PATIENCE);
    assert_eq!(seen.received(), Vec::<u32>::new());
}

/// The waiting sends wait for room under `Fail` and `DropNewest` (a zero
/// timeout: they find no room and give the message back), and never under
/// `DropOldest`, which always makes room by dropping the oldest message.
#[test]
fn waiting_sends_wait_under_fail_and_drop_newest_but_not_drop_oldest() {
    let system = system();
    for overflow in [Overflow::Fail, Overflow::DropNewest] {
        let (actor, seen, latch) = spawn_held(&system, 1, overflow);
        actor.tell(Msg::Value(0));
        match actor.send_blocking(Msg::Value(1), Duration::ZERO) {
            Err(SendError::Timeout(Msg::Value(1))) => {}
            other => panic!("{overflow:?}: expected Timeout(1), got {other:?}"),
        }
        latch.open();
        assert_eq!(seen.receive_n(1, PATIENCE), [0], "{overflow:?}");
    }
    assert_eq!(system.dead_letter_count(), 0, "no policy dropped anything");
    let (actor, seen, latch) = spawn_held(&system, 1, Overflow::DropOldest);
    actor.tell(Msg::Value(0));
    actor.send_blocking(Msg::Value(1), Duration::ZERO).unwrap();
    assert_eq!(system.dead_letter_count(), 1, "0 made way for 1");
    latch.open();
    assert_eq!(seen.receive_n(1, PATIENCE), [1]);
    terminate(&system, PATIENCE);
}

#[test]
fn a_blocking_producer_never_exceeds_the_capacity_and_loses_nothing() {
    let system = system();
    let (actor, seen) = spawn_consumer(&system, 8, Overflow::Fail);
    let producer = {
        let actor = actor.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            for v in 0..20_000 {
                actor
                    .send_blocking(Msg::Value(v), Duration::from_secs(10))
                    .unwrap();
                most = most.max(actor.queued());
            }
            most
        })
    };
    let values = seen.receive_n(20_000, PATIENCE);
    assert!(values.iter().copied().eq(0..20_000), "lost or reordered");
    let most = producer.join().unwrap();
    assert!(most <= 8, "the mailbox held {most} messages");
    terminate(&system, PATIENCE);
    assert_eq!(system.dead_letter_count(), 0);
}

#[test]
fn a_blocking_send_times_out_when_no_room_comes() {
    let system = system();
    let (actor, seen, latch) = spawn_held(&system, 2, Overflow::Fail);
    actor.tell(Msg::Value(0));
    actor.tell(Msg::Value(1));
    let started = Instant::now();
    let result = actor.send_blocking(Msg::Value(2), Duration::from_millis(50));
    assert!(matches!(result, Err(SendError::Timeout(Msg::Value(2)))));
    assert!(started.elapsed() >= Duration::from_millis(50));
    latch.open();
    assert_eq!(seen.receive_n(2, PATIENCE), [0, 1]);
    terminate(&system, PATIENCE);
}

#[test]
fn a_waiting_producer_is_released_with_closed_when_the_actor_stops() {
    let system = system();
    let (actor, _seen, latch) = spawn_held(&system, 1, Overflow::Fail);
    actor.tell(Msg::Value(0));
    let waiting = TestProbe::new(&system, "producer waiting");
    let producer = {
        let actor = actor.clone();
        let waiting = waiting.actor_ref();
        std::thread::spawn(move || {
            waiting.tell(());
            actor.send_blocking(Msg::Value(1), Duration::from_secs(30))
        })
    };
    waiting.expect_msg(PATIENCE);
    system.stop(&actor);
    latch.open();
    let result = producer.join().unwrap();
    // The stop may come before or after the producer's message found room;
    // either way the producer is not left waiting for the full 30 s.
    match result {
        Err(SendError::Closed(Msg::Value(1))) | Ok(()) => {}
        Err(e) => panic!("unexpected: {e}"),
    }
    terminate(&system, PATIENCE);
}

#[test]
fn async_sends_wait_for_room() {
    let system = system();
    let (actor, seen) = spawn_consumer(&system, 4, Overflow::Fail);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        for v in 0..2_000 {
            actor.send(Msg::Value(v)).await.unwrap();
            assert!(actor.queued() <= 4);
        }
    });
    let values = seen.receive_n(2_000, PATIENCE);
    assert!(values.iter().copied().eq(0..2_000));
    terminate(&system, PATIENCE);
}

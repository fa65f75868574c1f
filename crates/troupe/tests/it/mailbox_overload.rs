//! Overload: a fast producer against a slow consumer with a bounded mailbox
//! never queues more than the capacity, and every message is accounted for
//! (handled, or a `MailboxFull` dead letter); a blocking producer is slowed
//! to the consumer's pace and loses nothing; asks to an actor that cannot
//! answer in time fail with a clear timeout; afterwards no ask promise and
//! no actor cell is left alive.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::PATIENCE;
use troupe::{
    Actor, ActorSystem, AskError, Context, DeadLetterReason, MailboxConfig, Overflow, Props,
    ReplyTo,
};
use troupe_testkit::terminate;

const CAPACITY: usize = 100;

enum Job {
    Work,
    Hold(ReplyTo<()>),
    Release,
    Flush(ReplyTo<()>),
}

/// Spends about 20 µs per job (simulated work), and keeps `Hold` requests
/// unanswered until `Release`.
struct Slow {
    handled: Arc<AtomicU64>,
    held: Vec<ReplyTo<()>>,
}

impl Actor for Slow {
    type Msg = Job;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, job: Job) {
        match job {
            Job::Work => {
                let until = Instant::now() + Duration::from_micros(20);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                self.handled.fetch_add(1, Ordering::Relaxed);
            }
            Job::Hold(reply) => self.held.push(reply),
            Job::Release => {
                for reply in self.held.drain(..) {
                    // The asker has given up: reply reports it and drops the value.
                    assert!(!reply.reply(()));
                }
            }
            Job::Flush(reply) => {
                reply.reply(());
            }
        }
    }
}

/// Waits until everything sent before is handled: a `Flush` ask, retried
/// while the full mailbox refuses it. Returns how many were refused.
fn flush(consumer: &troupe::ActorRef<Job>) -> u64 {
    let start = Instant::now();
    let mut refused = 0;
    loop {
        match consumer.ask(Job::Flush, PATIENCE).wait() {
            Ok(()) => return refused,
            Err(AskError::MailboxFull { .. }) if start.elapsed() < PATIENCE => {
                refused += 1;
                std::thread::yield_now();
            }
            Err(e) => panic!("flush failed: {e}"),
        }
    }
}

fn slow(
    system: &ActorSystem,
    overflow: Overflow,
    handled: &Arc<AtomicU64>,
) -> troupe::ActorRef<Job> {
    let handled = handled.clone();
    system
        .spawn(
            Props::new(move || Slow {
                handled: handled.clone(),
                held: Vec::new(),
            })
            .mailbox(MailboxConfig::bounded(CAPACITY, overflow)),
        )
        .unwrap()
}

#[test]
fn a_fast_producer_never_queues_past_capacity_and_nothing_is_unaccounted() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let full = Arc::new(AtomicU64::new(0));
    let counter = full.clone();
    system.on_dead_letter(move |d| {
        if d.reason == DeadLetterReason::MailboxFull {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    let handled = Arc::new(AtomicU64::new(0));
    let consumer = slow(&system, Overflow::DropNewest, &handled);
    let sent = 50_000u64;
    let mut deepest = 0;
    for _ in 0..sent {
        consumer.tell(Job::Work);
        deepest = deepest.max(consumer.queued());
    }
    let refused_flushes = flush(&consumer);
    assert!(
        deepest <= CAPACITY,
        "queued {deepest} > capacity {CAPACITY}"
    );
    let handled = handled.load(Ordering::Relaxed);
    let dropped = full.load(Ordering::Relaxed);
    assert!(dropped > 0, "the producer outran the consumer");
    // Refused flush asks are MailboxFull dead letters too.
    let dropped_work = dropped - refused_flushes;
    assert_eq!(
        handled + dropped_work,
        sent,
        "handled {handled} + dropped {dropped_work}"
    );
    drop(consumer);
    terminate(&system, PATIENCE);
    assert_eq!(system.live_actor_cells(), 0);
    assert_eq!(system.pending_asks(), 0);
}

#[test]
fn a_blocking_producer_is_paced_and_loses_nothing() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let consumer = slow(&system, Overflow::Fail, &handled);
    let sent = 5_000u64;
    let mut deepest = 0;
    for _ in 0..sent {
        consumer
            .send_blocking(Job::Work, PATIENCE)
            .unwrap_or_else(|_| panic!("no room within {PATIENCE:?}"));
        deepest = deepest.max(consumer.queued());
    }
    let refused_flushes = flush(&consumer);
    assert!(
        deepest <= CAPACITY,
        "queued {deepest} > capacity {CAPACITY}"
    );
    assert_eq!(handled.load(Ordering::Relaxed), sent);
    assert_eq!(
        system.dead_letter_count(),
        refused_flushes,
        "only refused flushes"
    );
    drop(consumer);
    terminate(&system, PATIENCE);
    assert_eq!(system.live_actor_cells(), 0);
}

#[test]
fn asks_that_cannot_be_answered_in_time_fail_clearly_and_leak_nothing() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let consumer = slow(&system, Overflow::Fail, &handled);
    let timeout = Duration::from_millis(50);
    let asks: Vec<_> = (0..20).map(|_| consumer.ask(Job::Hold, timeout)).collect();
    for ask in asks {
        match ask.wait() {
            Err(e @ AskError::Timeout { target, after }) => {
                assert_eq!((target, after), (consumer.id(), timeout));
                let text = e.to_string();
                assert!(text.contains("timed out after 50ms"), "{text}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
    assert!(
        system.pending_asks() >= 20,
        "the held requests keep their promises"
    );
    consumer.tell(Job::Release);
    flush(&consumer);
    drop(consumer);
    terminate(&system, PATIENCE);
    assert_eq!(system.pending_asks(), 0);
    assert_eq!(system.live_actor_cells(), 0);
}

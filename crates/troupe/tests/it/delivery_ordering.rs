//! Delivery guarantees in the absence of failures: messages from one sender
//! to one actor arrive in the order they were sent (per-sender FIFO), and
//! each arrives exactly once (the receiver sees every sequence number once,
//! and the total count after termination equals the number sent).
//!
//! Each scenario runs with plain threads as senders and with actors as
//! senders, on the default pool and on two custom dispatchers:
//! `pool(1).throughput(1)` (one worker, a yield after every message) and
//! `pool(2).throughput(100)` (long batches).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use crate::support::PATIENCE;
use troupe::{Actor, ActorRef, ActorSystem, Context, DispatcherConfig, Props};
use troupe_testkit::{terminate, TestProbe};

const SENDERS: usize = 4;
const PER_SENDER: u64 = 10_000;
/// Messages an actor sender tells per handled `Go`, so that senders interleave.
const BATCH: u64 = 100;

/// One numbered message from one sender.
struct Numbered {
    sender: usize,
    seq: u64,
}

/// What the receiver observed, shared with the test.
#[derive(Default)]
struct Observed {
    /// Every message handled, counted as it is handled.
    handled: AtomicU64,
    /// The first few ordering violations, as readable text.
    violations: Mutex<Vec<String>>,
}

/// Checks that each sender's sequence numbers go 0, 1, 2, ... without gap,
/// repeat or reordering, and reports once it has seen everything expected.
struct Checker {
    next: Vec<u64>,
    expected_total: u64,
    seen: u64,
    observed: Arc<Observed>,
    done: ActorRef<()>,
}

impl Actor for Checker {
    type Msg = Numbered;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Numbered) {
        let next = &mut self.next[msg.sender];
        if msg.seq != *next {
            let mut v = self.observed.violations.lock().unwrap();
            if v.len() < 10 {
                v.push(format!(
                    "sender {}: expected #{}, got #{}",
                    msg.sender, *next, msg.seq
                ));
            }
        }
        *next = msg.seq + 1;
        self.seen += 1;
        self.observed.handled.fetch_add(1, Ordering::Relaxed);
        if self.seen == self.expected_total {
            self.done.tell(());
        }
    }
}

/// An actor that tells `PER_SENDER` numbered messages to the checker, a
/// batch per `Go` it handles, telling itself `Go` until it is done.
struct SenderActor {
    id: usize,
    target: ActorRef<Numbered>,
    next: u64,
}

struct Go;

impl Actor for SenderActor {
    type Msg = Go;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, _go: Go) {
        let end = (self.next + BATCH).min(PER_SENDER);
        for seq in self.next..end {
            self.target.tell(Numbered {
                sender: self.id,
                seq,
            });
        }
        self.next = end;
        if self.next < PER_SENDER {
            ctx.myself().tell(Go);
        }
    }
}

#[derive(Clone, Copy)]
enum Senders {
    Threads,
    Actors,
}

/// Runs one scenario and checks FIFO and exactly-once delivery.
fn check_delivery(dispatcher: Option<DispatcherConfig>, senders: Senders) {
    let mut builder = ActorSystem::builder().threads(2);
    if let Some(config) = dispatcher.clone() {
        builder = builder.dispatcher("under-test", config);
    }
    let system = builder.build().expect("valid configuration");
    let on = if dispatcher.is_some() {
        "under-test"
    } else {
        "default"
    };

    let observed = Arc::new(Observed::default());
    let done = TestProbe::new(&system, "all messages received");
    let expected_total = SENDERS as u64 * PER_SENDER;
    let checker = {
        let observed = observed.clone();
        let done = done.actor_ref();
        system
            .spawn(
                Props::new(move || Checker {
                    next: vec![0; SENDERS],
                    expected_total,
                    seen: 0,
                    observed: observed.clone(),
                    done: done.clone(),
                })
                .name("checker")
                .dispatcher(on),
            )
            .expect("spawn the checker")
    };

    match senders {
        Senders::Threads => {
            let handles: Vec<_> = (0..SENDERS)
                .map(|id| {
                    let checker = checker.clone();
                    thread::spawn(move || {
                        for seq in 0..PER_SENDER {
                            checker.tell(Numbered { sender: id, seq });
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("a sender thread panicked");
            }
        }
        Senders::Actors => {
            let actors: Vec<_> = (0..SENDERS)
                .map(|id| {
                    let target = checker.clone();
                    system
                        .spawn(
                            Props::new(move || SenderActor {
                                id,
                                target: target.clone(),
                                next: 0,
                            })
                            .dispatcher(on),
                        )
                        .expect("spawn a sender actor")
                })
                .collect();
            for a in &actors {
                a.tell(Go);
            }
        }
    }

    done.expect_msg(PATIENCE);
    assert_eq!(
        terminate(&system, PATIENCE),
        troupe::TerminationReason::Requested
    );

    let violations = observed.violations.lock().unwrap().clone();
    assert!(
        violations.is_empty(),
        "per-sender FIFO violated: {violations:?}"
    );
    assert_eq!(
        observed.handled.load(Ordering::Relaxed),
        expected_total,
        "every message handled exactly once"
    );
    assert_eq!(system.dead_letter_count(), 0, "no message was dropped");
    assert!(done.received().is_empty(), "the checker finished once");
}

fn single_worker_yielding() -> Option<DispatcherConfig> {
    Some(DispatcherConfig::pool(1).throughput(1))
}

fn two_workers_long_batches() -> Option<DispatcherConfig> {
    Some(DispatcherConfig::pool(2).throughput(100))
}

#[test]
fn thread_senders_fifo_exactly_once_on_the_default_pool() {
    check_delivery(None, Senders::Threads);
}

#[test]
fn thread_senders_fifo_exactly_once_on_pool_1_throughput_1() {
    check_delivery(single_worker_yielding(), Senders::Threads);
}

#[test]
fn thread_senders_fifo_exactly_once_on_pool_2_throughput_100() {
    check_delivery(two_workers_long_batches(), Senders::Threads);
}

#[test]
fn actor_senders_fifo_exactly_once_on_the_default_pool() {
    check_delivery(None, Senders::Actors);
}

#[test]
fn actor_senders_fifo_exactly_once_on_pool_1_throughput_1() {
    check_delivery(single_worker_yielding(), Senders::Actors);
}

#[test]
fn actor_senders_fifo_exactly_once_on_pool_2_throughput_100() {
    check_delivery(two_workers_long_batches(), Senders::Actors);
}

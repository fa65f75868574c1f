//! Supervision under load: thousands of actors, 1% of messages panic.
//! Restarts are counted exactly (one per poisoned message), every other
//! message is handled exactly once (a restart keeps the mailbox), the system
//! answers asks throughout, and an escalation that reaches the top stops
//! the whole system cleanly with the failure as the reason.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::support::PATIENCE;
use troupe::{
    Actor, ActorSystem, Context, Failure, Props, ReplyTo, SupervisorStrategy, TerminationReason,
};
use troupe_testkit::{await_termination, terminate};

const ACTORS: usize = 2_000;
const PER_ACTOR: u64 = 100;

/// Is message `i` to actor `a` poisoned? About 1 in 100, spread unevenly.
fn poisoned(a: usize, i: u64) -> bool {
    (a as u64 * 7919 + i * 104_729).is_multiple_of(100)
}

/// Keeps the expected panics of this file out of the test output.
fn quiet_panics() {
    troupe_testkit::quiet_panics(&["poison pill", "escalate me"]);
}

struct Worker {
    index: usize,
    handled: Arc<Vec<AtomicU64>>,
    restarts: Arc<AtomicU64>,
}

enum Work {
    Item(u64),
    /// Answered once everything sent before it was handled (per-sender FIFO).
    Flush(ReplyTo<()>),
}

impl Actor for Worker {
    type Msg = Work;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Work) {
        let i = match msg {
            Work::Item(i) => i,
            Work::Flush(reply) => {
                reply.reply(());
                return;
            }
        };
        if poisoned(self.index, i) {
            panic!("poison pill {i} for actor {}", self.index);
        }
        self.handled[self.index].fetch_add(1, Ordering::Relaxed);
    }

    fn after_restart(&mut self, _ctx: &mut Context<'_, Self>, _failure: &Failure) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }
}

struct Echo;

impl Actor for Echo {
    type Msg = ReplyTo<u64>;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, reply: ReplyTo<u64>) {
        reply.reply(42);
    }
}

#[test]
fn one_percent_panics_restart_exactly_and_lose_nothing_else() {
    quiet_panics();
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let handled: Arc<Vec<AtomicU64>> = Arc::new((0..ACTORS).map(|_| AtomicU64::new(0)).collect());
    let restarts = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..ACTORS)
        .map(|index| {
            let (handled, restarts) = (handled.clone(), restarts.clone());
            system
                .spawn(
                    Props::new(move || Worker {
                        index,
                        handled: handled.clone(),
                        restarts: restarts.clone(),
                    })
                    .supervisor(SupervisorStrategy::restart()),
                )
                .unwrap()
        })
        .collect();
    let echo = system.spawn(Props::new(|| Echo)).unwrap();

    let mut poison = 0u64;
    for i in 0..PER_ACTOR {
        for (a, worker) in workers.iter().enumerate() {
            worker.tell(Work::Item(i));
            poison += u64::from(poisoned(a, i));
        }
        // Responsive throughout: an ask in the middle of the storm answers.
        if i % 25 == 0 {
            assert_eq!(echo.ask(|r| r, PATIENCE).wait().unwrap(), 42);
        }
    }
    assert!(poison > 1_000, "the workload poisons about 1% ({poison})");
    let flushes: Vec<_> = workers
        .iter()
        .map(|w| w.ask(Work::Flush, PATIENCE))
        .collect();
    for flush in flushes {
        flush.wait().unwrap();
    }
    terminate(&system, PATIENCE);

    assert_eq!(
        restarts.load(Ordering::Relaxed),
        poison,
        "one restart per poisoned send"
    );
    for (a, count) in handled.iter().enumerate() {
        let expected = (0..PER_ACTOR).filter(|&i| !poisoned(a, i)).count() as u64;
        assert_eq!(count.load(Ordering::Relaxed), expected, "actor {a}");
    }
    assert_eq!(system.dead_letter_count(), 0);
}

struct Escalating;

impl Actor for Escalating {
    type Msg = ();

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        panic!("escalate me");
    }
}

#[test]
fn an_escalation_to_the_top_stops_the_system_with_the_failure() {
    quiet_panics();
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let busy: Vec<_> = (0..100)
        .map(|_| system.spawn(Props::new(|| Echo)).unwrap())
        .collect();
    let doomed = system
        .spawn(Props::new(|| Escalating).supervisor(SupervisorStrategy::escalate()))
        .unwrap();
    let pending: Vec<_> = busy.iter().map(|e| e.ask(|r| r, PATIENCE)).collect();
    doomed.tell(());
    match await_termination(&system, PATIENCE) {
        TerminationReason::Escalated(failure) => {
            assert_eq!(failure.actor, doomed.id());
            assert!(
                failure.message.contains("escalate me"),
                "{}",
                failure.message
            );
        }
        other => panic!("expected an escalation, got {other:?}"),
    }
    // Every ask got an answer or a clear error; none hangs.
    for ask in pending {
        match ask.wait() {
            Ok(42) | Err(troupe::AskError::NoReply { .. }) => {}
            other => panic!("unexpected ask outcome {other:?}"),
        }
    }
    assert!(doomed.is_terminated() && busy.iter().all(|b| b.is_terminated()));
}

//! Fairness of the pool dispatcher.
//!
//! - Actors that keep each other busy on a worker (each send lands in that
//!   worker's LIFO slot or local queue) must not starve work sent from
//!   outside the pool, which goes to the shared injector queue. On a
//!   one-worker pool, two actors bouncing a message forever leave the worker
//!   never idle; an actor messaged from a plain thread must still run.
//! - The throughput budget: an actor with more messages waiting than the
//!   budget handles `throughput` of them, then yields the worker to the
//!   other runnable actors. Two actors with long queues on one worker are
//!   therefore handled in alternating runs of exactly `throughput` messages.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use crate::support::PATIENCE;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props, ReplyTo};
use troupe_testkit::{terminate, TestProbe};

/// Bounces a ball to its partner until told to stop.
struct Bouncer {
    partner: Option<ActorRef<Ball>>,
}

enum Ball {
    Partner(ActorRef<Ball>),
    Hit,
    Stop,
}

impl Actor for Bouncer {
    type Msg = Ball;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Ball) {
        match msg {
            Ball::Partner(p) => self.partner = Some(p),
            Ball::Hit => {
                if let Some(p) = &self.partner {
                    p.tell(Ball::Hit);
                }
            }
            Ball::Stop => ctx.stop(),
        }
    }
}

/// Reports on a plain channel, not to a `TestProbe`: a probe actor would
/// run on the one worker the bouncers keep busy, and the test would measure
/// how the probe gets its turn there too.
struct Reporter(Sender<u32>);

impl Actor for Reporter {
    type Msg = u32;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, n: u32) {
        let _ = self.0.send(n);
    }
}

#[test]
fn outside_sends_run_while_two_actors_keep_a_worker_busy() {
    for throughput in [1, 100] {
        let system = ActorSystem::builder()
            .threads(1)
            .throughput(throughput)
            .build()
            .unwrap();
        let a = system
            .spawn(Props::new(|| Bouncer { partner: None }))
            .unwrap();
        let b = system
            .spawn(Props::new(|| Bouncer { partner: None }))
            .unwrap();
        a.tell(Ball::Partner(b.clone()));
        b.tell(Ball::Partner(a.clone()));
        // Several balls in flight, so the worker's local queue never drains.
        for _ in 0..4 {
            a.tell(Ball::Hit);
        }
        let (sender, reports) = mpsc::channel();
        let reporter = system
            .spawn(Props::new(move || Reporter(sender.clone())))
            .unwrap();
        for n in 0..3 {
            reporter.tell(n);
            let report = reports.recv_timeout(PATIENCE).unwrap_or_else(|e| {
                panic!("throughput {throughput}: expected report {n} within {PATIENCE:?}: {e}")
            });
            assert_eq!(report, n, "throughput {throughput}");
        }
        a.tell(Ball::Stop);
        b.tell(Ball::Stop);
        terminate(&system, PATIENCE);
    }
}

/// Messages of the budget test's recorders.
enum Work {
    /// Answers once the actor has started.
    Ready(ReplyTo<()>),
    /// One message to handle.
    Item,
}

/// Logs its name for every item it handles; whoever handles the last item
/// of the test reports on the probe.
struct Recorder {
    name: char,
    log: Arc<Mutex<Vec<char>>>,
    total: usize,
    done: ActorRef<()>,
}

impl Actor for Recorder {
    type Msg = Work;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Work) {
        match msg {
            Work::Ready(reply) => {
                reply.reply(());
            }
            Work::Item => {
                let mut log = self.log.lock().unwrap();
                log.push(self.name);
                if log.len() == self.total {
                    self.done.tell(());
                }
            }
        }
    }
}

/// Fills both recorders' mailboxes within one handler call, so both hold
/// all their items before either runs (the pool has one worker, busy here).
struct Filler;

impl Actor for Filler {
    type Msg = (ActorRef<Work>, ActorRef<Work>, usize);

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, (a, b, each): Self::Msg) {
        for _ in 0..each {
            a.tell(Work::Item);
        }
        for _ in 0..each {
            b.tell(Work::Item);
        }
    }
}

/// The log as maximal runs of one actor: `(actor, length)`.
fn runs(log: &[char]) -> Vec<(char, usize)> {
    let mut runs: Vec<(char, usize)> = Vec::new();
    for &name in log {
        match runs.last_mut() {
            Some((last, len)) if *last == name => *len += 1,
            _ => runs.push((name, 1)),
        }
    }
    runs
}

#[test]
fn actors_with_long_queues_take_turns_of_throughput_messages() {
    for throughput in [1, 3, 7] {
        // Three full runs and one short one per actor.
        let each = 3 * throughput + 1;
        let system = ActorSystem::builder()
            .name("budget")
            .threads(1)
            .throughput(throughput)
            .build()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let probe = TestProbe::new(&system, "last item handled");
        let recorder = |name| {
            let (log, done) = (log.clone(), probe.actor_ref());
            let actor = system
                .spawn(Props::new(move || Recorder {
                    name,
                    log: log.clone(),
                    total: 2 * each,
                    done: done.clone(),
                }))
                .unwrap();
            actor.ask(Work::Ready, PATIENCE).wait().unwrap();
            actor
        };
        let (a, b) = (recorder('a'), recorder('b'));
        let filler = system.spawn(Props::new(|| Filler)).unwrap();
        filler.tell((a, b, each));
        probe.expect_msg(PATIENCE);
        let log = log.lock().unwrap().clone();
        let runs = runs(&log);
        // Ignoring the budget would show as one run of `each` per actor;
        // yielding to itself instead of to the other actor, as runs longer
        // than the budget.
        for name in ['a', 'b'] {
            let lengths: Vec<usize> = runs
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, len)| *len)
                .collect();
            assert_eq!(
                lengths,
                [throughput, throughput, throughput, 1],
                "throughput {throughput}: runs of {name:?} in {log:?}"
            );
        }
        terminate(&system, PATIENCE);
    }
}

//! Supervision directives applied to a panicking handler: resume keeps the
//! instance and its state; restart builds a fresh instance from the factory
//! (`before_restart` on the old one, `after_restart` on the new one) and keeps
//! the mailbox; stop terminates the actor and dead-letters what follows;
//! restart limits turn the failure after the last allowed restart into a stop;
//! a backoff delays the restart by at least its minimum; escalation fails the
//! parent (whose own strategy applies) or, from a top-level actor, terminates
//! the system with the failure; and a parent learns each child failure with
//! the directive that was applied.
//!
//! The panics these tests provoke are printed to stderr; that is expected.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{system, PATIENCE};
use troupe::{
    Actor, ActorRef, ActorSystem, Context, Directive, Failure, Props, ReplyTo, Signal, SpawnError,
    SupervisorStrategy, TerminationReason,
};
use troupe_testkit::{await_termination, terminate, EventLog, Latch, TestProbe};

enum Cmd {
    Add,
    /// Panic with this text.
    Fail(&'static str),
    Get(ReplyTo<u64>),
    /// Hold the handler until the latch opens.
    Block(Latch),
}

/// A counter that fails on demand and logs its lifecycle with its
/// incarnation number (`#1` for the first instance, `#2` after a restart).
struct Flaky {
    count: u64,
    incarnation: u32,
    log: EventLog,
    /// Receives `("fail", t)` just before a panic and `("restart", t)` in
    /// `after_restart`.
    times: Option<ActorRef<(&'static str, Instant)>>,
}

/// Props for a `Flaky` under `strategy`, and the number of factory calls.
fn flaky(
    strategy: SupervisorStrategy,
    log: &EventLog,
    times: Option<ActorRef<(&'static str, Instant)>>,
) -> (Props<Flaky>, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let (log, counter) = (log.clone(), calls.clone());
    let props = Props::new(move || Flaky {
        count: 0,
        incarnation: counter.fetch_add(1, Ordering::SeqCst) + 1,
        log: log.clone(),
        times: times.clone(),
    })
    .supervisor(strategy);
    (props, calls)
}

impl Flaky {
    fn time(&self, what: &'static str) {
        if let Some(t) = &self.times {
            t.tell((what, Instant::now()));
        }
    }
}

impl Actor for Flaky {
    type Msg = Cmd;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.push(format!("started#{}", self.incarnation));
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, cmd: Cmd) {
        match cmd {
            Cmd::Add => self.count += 1,
            Cmd::Fail(text) => {
                self.time("fail");
                panic!("{text}");
            }
            Cmd::Get(reply) => {
                reply.reply(self.count);
            }
            Cmd::Block(latch) => latch.wait(PATIENCE),
        }
    }

    fn before_restart(&mut self, _ctx: &mut Context<'_, Self>, failure: &Failure) {
        self.log.push(format!(
            "before_restart#{}:{}",
            self.incarnation, failure.message
        ));
    }

    fn after_restart(&mut self, ctx: &mut Context<'_, Self>, failure: &Failure) {
        self.log.push(format!(
            "after_restart#{}:{}",
            self.incarnation, failure.message
        ));
        self.time("restart");
        self.started(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.push(format!("stopped#{}", self.incarnation));
    }
}

fn get(actor: &ActorRef<Cmd>) -> u64 {
    actor
        .ask(Cmd::Get, PATIENCE)
        .wait()
        .expect("the counter answers")
}

/// Holds `actor` (on a pinned thread) inside a handler; the returned latch
/// lets it go. Messages told meanwhile are queued behind the blocking one.
fn hold(actor: &ActorRef<Cmd>) -> Latch {
    let latch = Latch::new();
    actor.tell(Cmd::Block(latch.clone()));
    latch.expect_waiters(1, PATIENCE);
    latch
}

#[test]
fn resume_keeps_the_instance_and_its_state() {
    let system = system();
    let log = EventLog::new();
    let (props, calls) = flaky(SupervisorStrategy::resume(), &log, None);
    let actor = system.spawn(props).unwrap();
    actor.tell(Cmd::Add);
    actor.tell(Cmd::Add);
    actor.tell(Cmd::Fail("resume me"));
    actor.tell(Cmd::Add);
    assert_eq!(get(&actor), 3, "the count went on across the failure");
    terminate(&system, PATIENCE);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no new instance");
    assert_eq!(log.snapshot(), ["started#1", "stopped#1"]);
}

#[test]
fn restart_builds_a_fresh_instance_and_keeps_the_mailbox() {
    let system = system();
    let log = EventLog::new();
    let (props, calls) = flaky(SupervisorStrategy::restart(), &log, None);
    let actor = system.spawn(props.dispatcher("pinned")).unwrap();
    actor.tell(Cmd::Add);
    let latch = hold(&actor);
    // Queued behind the blocked handler, so all of it sits in the mailbox
    // when the failure happens.
    for cmd in [Cmd::Add, Cmd::Add, Cmd::Fail("boom"), Cmd::Add, Cmd::Add] {
        actor.tell(cmd);
    }
    latch.open();
    assert_eq!(
        get(&actor),
        2,
        "the fresh instance counted the two queued after the failure"
    );
    terminate(&system, PATIENCE);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the factory built a second instance"
    );
    assert_eq!(
        log.snapshot(),
        [
            "started#1",
            "before_restart#1:boom",
            "after_restart#2:boom",
            "started#2",
            "stopped#2"
        ]
    );
    assert_eq!(system.dead_letter_count(), 0);
}

#[test]
fn stop_terminates_the_actor_and_later_messages_are_dead_letters() {
    let system = system();
    let log = EventLog::new();
    let (props, calls) = flaky(SupervisorStrategy::stop(), &log, None);
    let actor = system.spawn(props.dispatcher("pinned")).unwrap();
    let deaths = TestProbe::<()>::new(&system, "deaths");
    deaths.watch(&actor, PATIENCE);
    let latch = hold(&actor);
    for cmd in [Cmd::Add, Cmd::Fail("stop me"), Cmd::Add, Cmd::Add] {
        actor.tell(cmd);
    }
    latch.open();
    deaths.expect_terminated(&actor, PATIENCE);
    assert!(actor.is_terminated());
    actor.tell(Cmd::Add);
    let late = actor.ask(Cmd::Get, PATIENCE).wait();
    assert_eq!(late, Err(troupe::AskError::NoReply { target: actor.id() }));
    terminate(&system, PATIENCE);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(log.snapshot(), ["started#1", "stopped#1"]);
    assert_eq!(
        system.dead_letter_count(),
        4,
        "two queued behind the failure, one tell and one ask after the stop"
    );
}

/// A parent that spawns `children` when it starts, reports each child's
/// ref, forwards every signal it gets, and logs its own restarts.
struct Supervisor<C: Actor> {
    children: Vec<Props<C>>,
    spawned: ActorRef<ActorRef<C::Msg>>,
    signals: ActorRef<Signal>,
    log: EventLog,
}

struct SupervisorProbes<C: Actor> {
    spawned: TestProbe<ActorRef<C::Msg>>,
    signals: TestProbe<Signal>,
    log: EventLog,
    calls: Arc<AtomicU32>,
}

fn supervisor<C: Actor>(
    system: &ActorSystem,
    children: Vec<Props<C>>,
) -> (Props<Supervisor<C>>, SupervisorProbes<C>) {
    let probes = SupervisorProbes {
        spawned: TestProbe::new(system, "children"),
        signals: TestProbe::new(system, "signals"),
        log: EventLog::new(),
        calls: Arc::new(AtomicU32::new(0)),
    };
    let (spawned, signals, log, calls) = (
        probes.spawned.actor_ref(),
        probes.signals.actor_ref(),
        probes.log.clone(),
        probes.calls.clone(),
    );
    let props = Props::new(move || {
        calls.fetch_add(1, Ordering::SeqCst);
        Supervisor {
            children: children.clone(),
            spawned: spawned.clone(),
            signals: signals.clone(),
            log: log.clone(),
        }
    });
    (props, probes)
}

impl<C: Actor> Actor for Supervisor<C> {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.log.push("started");
        for props in &self.children {
            self.spawned
                .tell(ctx.spawn(props.clone()).expect("spawn a child"));
        }
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        self.signals.tell(signal);
    }

    fn before_restart(&mut self, _ctx: &mut Context<'_, Self>, failure: &Failure) {
        self.log.push(format!("before_restart:{}", failure.message));
    }

    fn after_restart(&mut self, ctx: &mut Context<'_, Self>, failure: &Failure) {
        self.log.push(format!("after_restart:{}", failure.message));
        self.started(ctx);
    }
}

/// The directive of a `ChildFailed` signal from `child`.
fn child_failed(signal: Signal, child: &ActorRef<Cmd>, text: &str) -> Directive {
    match signal {
        Signal::ChildFailed {
            child: id,
            failure,
            directive,
        } => {
            assert_eq!(id, child.id(), "the signal names the failed child");
            assert_eq!(failure.actor, child.id());
            assert_eq!(failure.message, text);
            directive
        }
        other => panic!("expected ChildFailed, got {other:?}"),
    }
}

#[test]
fn restart_limit_stops_the_actor_on_the_failure_after_the_last_restart() {
    let system = system();
    let log = EventLog::new();
    let (child, calls) = flaky(
        SupervisorStrategy::restart().with_limit(3, Duration::from_secs(60)),
        &log,
        None,
    );
    let (parent, probes) = supervisor(&system, vec![child]);
    system.spawn(parent).unwrap();
    let child = probes.spawned.expect_msg(PATIENCE);
    probes.signals.watch(&child, PATIENCE);

    let mut directives = Vec::new();
    for _ in 0..4 {
        child.tell(Cmd::Fail("again"));
        directives.push(child_failed(
            probes.signals.expect_msg(PATIENCE),
            &child,
            "again",
        ));
    }
    assert_eq!(
        directives,
        [
            Directive::Restart,
            Directive::Restart,
            Directive::Restart,
            Directive::Stop
        ]
    );
    probes.signals.expect_terminated(&child, PATIENCE);
    terminate(&system, PATIENCE);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "the first instance and three restarts"
    );
    assert!(
        probes.signals.received().is_empty(),
        "the parent saw four failures, no more"
    );
    assert_eq!(log.snapshot().last().map(String::as_str), Some("stopped#4"));
}

#[test]
fn backoff_delays_the_restart_by_at_least_its_minimum() {
    const MIN: Duration = Duration::from_millis(20);
    let system = system();
    let log = EventLog::new();
    let times = TestProbe::new(&system, "failure and restart times");
    let (props, calls) = flaky(
        SupervisorStrategy::restart().with_backoff(MIN, Duration::from_secs(1)),
        &log,
        Some(times.actor_ref()),
    );
    let actor = system.spawn(props).unwrap();
    actor.tell(Cmd::Add);
    actor.tell(Cmd::Fail("back off"));
    actor.tell(Cmd::Add);
    let (what, failed_at) = times.expect_msg(PATIENCE);
    assert_eq!(what, "fail");
    let (what, restarted_at) = times.expect_msg(PATIENCE);
    assert_eq!(what, "restart");
    let waited = restarted_at.duration_since(failed_at);
    assert!(
        waited >= MIN,
        "restarted {waited:?} after the failure, before the backoff"
    );
    assert_eq!(
        get(&actor),
        1,
        "the message queued during the backoff ran on the new instance"
    );
    terminate(&system, PATIENCE);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn escalation_fails_the_parent_which_applies_its_own_strategy() {
    let system = system();
    let log = EventLog::new();
    let (child, child_calls) = flaky(SupervisorStrategy::escalate(), &log, None);
    let (parent, probes) = supervisor(&system, vec![child]);
    let parent = system
        .spawn(parent.supervisor(SupervisorStrategy::restart()))
        .unwrap();
    let first_child = probes.spawned.expect_msg(PATIENCE);

    first_child.tell(Cmd::Fail("kaboom"));
    assert_eq!(
        child_failed(probes.signals.expect_msg(PATIENCE), &first_child, "kaboom"),
        Directive::Escalate
    );
    // The parent restarted: its fresh instance spawned a fresh child.
    let second_child = probes.spawned.expect_msg(PATIENCE);
    assert_ne!(second_child.id(), first_child.id());
    assert_eq!(get(&second_child), 0);
    assert!(
        first_child.is_terminated(),
        "an escalating child is stopped"
    );
    assert!(!parent.is_terminated());

    let events = probes.log.snapshot();
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0], "started");
    assert!(
        events[1].starts_with("before_restart:") && events[1].contains("kaboom"),
        "{events:?}"
    );
    assert!(
        events[2].starts_with("after_restart:") && events[2].contains("kaboom"),
        "{events:?}"
    );
    assert_eq!(events[3], "started");
    terminate(&system, PATIENCE);
    assert_eq!(
        probes.calls.load(Ordering::SeqCst),
        2,
        "the parent was rebuilt once"
    );
    assert_eq!(
        child_calls.load(Ordering::SeqCst),
        2,
        "one child per parent instance"
    );
}

#[test]
fn escalation_from_a_top_level_actor_terminates_the_system() {
    let system = system();
    let log = EventLog::new();
    let (props, _) = flaky(SupervisorStrategy::escalate(), &log, None);
    let actor = system.spawn(props).unwrap();
    let (bystander, _) = flaky(SupervisorStrategy::restart(), &log, None);
    system.spawn(bystander).unwrap();

    actor.tell(Cmd::Fail("fatal: disk on fire"));
    match await_termination(&system, PATIENCE) {
        TerminationReason::Escalated(failure) => {
            assert_eq!(failure.actor, actor.id());
            assert!(failure.message.contains("fatal: disk on fire"), "{failure}");
        }
        other => panic!("expected an escalation, got {other:?}"),
    }
    assert!(actor.is_terminated());
    assert_eq!(system.top_level_count(), 0, "the bystander was stopped too");
    let (late, _) = flaky(SupervisorStrategy::restart(), &log, None);
    assert_eq!(system.spawn(late).err(), Some(SpawnError::ShuttingDown));
}

#[test]
fn the_parent_is_told_each_child_failure_with_the_applied_directive() {
    let system = system();
    let log = EventLog::new();
    let strategies = [
        ("resume", SupervisorStrategy::resume(), Directive::Resume),
        ("restart", SupervisorStrategy::restart(), Directive::Restart),
        ("stop", SupervisorStrategy::stop(), Directive::Stop),
        (
            "decider",
            SupervisorStrategy::deciding(|f| {
                if f.message.contains("fatal") {
                    Directive::Stop
                } else {
                    Directive::Resume
                }
            }),
            Directive::Stop,
        ),
    ];
    let children = strategies
        .iter()
        .map(|(name, strategy, _)| flaky(strategy.clone(), &log, None).0.name(*name))
        .collect();
    let (parent, probes) = supervisor(&system, children);
    system.spawn(parent).unwrap();
    let refs = probes.spawned.receive_n(strategies.len(), PATIENCE);

    for child in &refs {
        child.tell(Cmd::Fail("fatal: child failure"));
    }
    let mut applied = HashMap::new();
    for _ in 0..refs.len() {
        let signal = probes.signals.expect_msg(PATIENCE);
        let Signal::ChildFailed { child, .. } = &signal else {
            panic!("expected ChildFailed, got {signal:?}");
        };
        let child = refs
            .iter()
            .find(|r| r.id() == *child)
            .expect("one of the children")
            .clone();
        applied.insert(
            child.name().unwrap().to_string(),
            child_failed(signal, &child, "fatal: child failure"),
        );
    }
    for (name, _, expected) in &strategies {
        assert_eq!(
            applied[*name], *expected,
            "directive applied to child {name}"
        );
    }
    terminate(&system, PATIENCE);
    assert!(probes.signals.received().is_empty());
}

//! Virtual time (`ManualClock`): one-shot timers, periodic timers, receive
//! timeouts, ask timeouts and restart backoff fire exactly when the test
//! advances the clock past their deadlines, in deadline order, and not a
//! tick before. Each `advance` reports how many entries it fired, so "not
//! yet" is a count, not a wait.

use std::time::Duration;

use crate::support::PATIENCE;
use troupe::scheduler::ManualClock;
use troupe::{
    Actor, ActorRef, ActorSystem, AskError, Context, Props, ReplyTo, Signal, SupervisorStrategy,
};
use troupe_testkit::{await_condition, quiet_panics, terminate, TestProbe};

fn system_on(clock: &ManualClock, name: &str) -> ActorSystem {
    ActorSystem::builder()
        .name(name)
        .threads(2)
        .manual_clock(clock)
        .build()
        .unwrap()
}

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

#[test]
fn one_shot_timers_fire_in_deadline_order_when_time_reaches_them() {
    let clock = ManualClock::new();
    let system = system_on(&clock, "manual-once");
    let probe = TestProbe::<&'static str>::new(&system, "timers");
    let target = probe.actor_ref();
    for (label, ms) in [("late", 50), ("soon", 10), ("middle", 30)] {
        system.scheduler().schedule_once(MS * ms, &target, label);
    }
    assert_eq!(clock.advance(MS * 9), 0, "nothing is due before 10 ms");
    assert_eq!(clock.advance(MS), 1);
    probe.expect_msg_eq("soon", PATIENCE);
    assert_eq!(clock.advance(MS * 40), 2);
    assert_eq!(probe.receive_n(2, PATIENCE), ["middle", "late"]);
    assert_eq!(clock.elapsed(), MS * 50);
    terminate(&system, PATIENCE);
}

#[derive(Clone, Debug, PartialEq)]
enum Tick {
    Start,
    Tick,
}

/// Starts a 100 ms periodic timer on `Start` and reports its ticks.
struct Periodic {
    out: ActorRef<Tick>,
}

impl Actor for Periodic {
    type Msg = Tick;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Tick) {
        match msg {
            Tick::Start => {
                ctx.timers().start_periodic("tick", MS * 100, Tick::Tick);
                self.out.tell(Tick::Start);
            }
            Tick::Tick => self.out.tell(Tick::Tick),
        }
    }
}

#[test]
fn a_periodic_timer_fires_once_per_period_advanced() {
    let clock = ManualClock::new();
    let system = system_on(&clock, "manual-periodic");
    let probe = TestProbe::new(&system, "ticks");
    let out = probe.actor_ref();
    let actor = system
        .spawn(Props::new(move || Periodic { out: out.clone() }))
        .unwrap();
    actor.tell(Tick::Start);
    probe.expect_msg_eq(Tick::Start, PATIENCE);
    // Ten periods in one advance: each repeat is armed from its deadline
    // and fires within the same advance.
    assert_eq!(clock.advance(SECOND), 10);
    assert_eq!(probe.receive_n(10, PATIENCE), vec![Tick::Tick; 10]);
    assert_eq!(clock.advance(MS * 99), 0);
    assert_eq!(clock.advance(MS), 1);
    probe.expect_msg_eq(Tick::Tick, PATIENCE);
    terminate(&system, PATIENCE);
}

/// Reports its start, and each receive timeout (30 s of silence).
struct Idle {
    out: ActorRef<&'static str>,
}

impl Actor for Idle {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.set_receive_timeout(Some(SECOND * 30));
        self.out.tell("started");
    }
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.out.tell("message");
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if signal == Signal::ReceiveTimeout {
            self.out.tell("timeout");
        }
    }
}

#[test]
fn the_receive_timeout_counts_virtual_silence_from_the_last_message() {
    let clock = ManualClock::new();
    let system = system_on(&clock, "manual-idle");
    let probe = TestProbe::new(&system, "idle");
    let out = probe.actor_ref();
    let actor = system
        .spawn(Props::new(move || Idle { out: out.clone() }))
        .unwrap();
    probe.expect_msg_eq("started", PATIENCE);
    clock.advance(SECOND * 20);
    actor.tell(()); // 20 s in: the silence starts over
    probe.expect_msg_eq("message", PATIENCE);
    // The check due at 30 s finds 10 s of silence and re-arms for 50 s; no
    // message says so, so the test waits for the entry to be back.
    assert_eq!(clock.advance(SECOND * 10), 1);
    await_condition("the re-armed check", PATIENCE, || {
        system.scheduler().pending() == 1
    });
    assert_eq!(clock.advance(SECOND * 19), 0);
    assert_eq!(clock.advance(SECOND), 1);
    probe.expect_msg_eq("timeout", PATIENCE);
    terminate(&system, PATIENCE);
    assert!(probe.received().is_empty(), "no early timeout");
}

/// Keeps every request unanswered.
struct Silent {
    kept: Vec<ReplyTo<u32>>,
}

impl Actor for Silent {
    type Msg = ReplyTo<u32>;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, reply: ReplyTo<u32>) {
        self.kept.push(reply);
    }
}

#[test]
fn an_ask_times_out_when_virtual_time_passes_its_timeout() {
    let clock = ManualClock::new();
    let system = system_on(&clock, "manual-ask");
    let silent = system
        .spawn(Props::new(|| Silent { kept: Vec::new() }))
        .unwrap();
    let ask = silent.ask(|r| r, SECOND * 5);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || tx.send(ask.wait()).unwrap());
    assert_eq!(clock.advance(SECOND * 4), 0);
    assert!(rx.try_recv().is_err(), "not timed out at 4 s");
    assert_eq!(clock.advance(SECOND), 1);
    let answer = rx.recv_timeout(PATIENCE).unwrap();
    assert!(
        matches!(answer, Err(AskError::Timeout { .. })),
        "{answer:?}"
    );
    waiter.join().unwrap();
    terminate(&system, PATIENCE);
}

/// Fails on every message; reports each restart.
struct Fragile {
    out: ActorRef<&'static str>,
}

impl Actor for Fragile {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        panic!("manual-clock-test: crash");
    }
    fn after_restart(&mut self, _ctx: &mut Context<'_, Self>, _failure: &troupe::Failure) {
        self.out.tell("restarted");
    }
}

/// Spawns a `Fragile` child with backoff and reports its failures: when
/// the parent hears of one, the child's rebuild is already scheduled.
struct Supervisor {
    out: ActorRef<&'static str>,
    child: ActorRef<ActorRef<()>>,
}

impl Actor for Supervisor {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let out = self.out.clone();
        let strategy = SupervisorStrategy::restart().with_backoff(SECOND, SECOND * 10);
        let child = ctx
            .spawn(Props::new(move || Fragile { out: out.clone() }).supervisor(strategy))
            .unwrap();
        self.child.tell(child);
    }
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::ChildFailed { .. } = signal {
            self.out.tell("failed");
        }
    }
}

#[test]
fn restart_backoff_waits_virtual_time_and_doubles() {
    quiet_panics(&["manual-clock-test: crash"]);
    let clock = ManualClock::new();
    let system = system_on(&clock, "manual-backoff");
    let events = TestProbe::new(&system, "restarts");
    let children = TestProbe::new(&system, "child");
    let (out, child) = (events.actor_ref(), children.actor_ref());
    system
        .spawn(Props::new(move || Supervisor {
            out: out.clone(),
            child: child.clone(),
        }))
        .unwrap();
    let fragile = children.expect_msg(PATIENCE);
    for backoff in [SECOND, SECOND * 2, SECOND * 4] {
        fragile.tell(());
        events.expect_msg_eq("failed", PATIENCE);
        assert_eq!(clock.advance(backoff - MS), 0, "rebuilt before {backoff:?}");
        assert_eq!(clock.advance(MS), 1);
        events.expect_msg_eq("restarted", PATIENCE);
    }
    terminate(&system, PATIENCE);
}

#[test]
fn a_clock_drives_one_system_at_a_time() {
    let clock = ManualClock::new();
    let first = system_on(&clock, "manual-first");
    let refused = ActorSystem::builder().manual_clock(&clock).build();
    assert!(refused.is_err(), "a second system on the same clock");
    terminate(&first, PATIENCE);
}

/// An ask's timeout is virtual time: a thread that blocks on it while no one
/// advances the clock would wait for ever. The guard turns that into a panic
/// that names the cause, after the clock has stood still for its length.
#[test]
fn a_blocking_ask_on_a_clock_nobody_advances_panics_after_the_guard() {
    quiet_panics(&["Ask::wait on a manual clock"]);
    let clock = ManualClock::new();
    clock.set_wait_guard(MS * 200);
    let system = system_on(&clock, "manual-ask-guard");
    let silent = system
        .spawn(Props::new(|| Silent { kept: Vec::new() }))
        .unwrap();
    let ask = silent.ask(|r| r, MS * 100);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ask.wait()));
    let message = caught
        .expect_err("the wait should have panicked")
        .downcast::<String>()
        .expect("a formatted panic message");
    assert!(message.contains("manual clock"), "{message}");
    assert!(message.contains("advance"), "{message}");
    terminate(&system, PATIENCE);
}

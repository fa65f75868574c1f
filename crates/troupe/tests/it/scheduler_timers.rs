//! Repeating schedules and per-actor timers: fixed rate and fixed delay
//! repeat at their period and never early; a per-actor timer fires once or
//! periodically, a cancelled or replaced timer is never delivered (even a
//! message already on its way), and the receive timeout fires after silence.

use std::time::{Duration, Instant};

use crate::support::{system, PATIENCE};
use troupe::ActorRef;
use troupe::{Actor, Context, Props, Signal};
use troupe_testkit::{terminate, TestProbe};

#[derive(Clone, Debug, PartialEq)]
enum Msg {
    Tick,
    Other(&'static str),
    Fence,
}

/// Reports every message with the time it arrived.
struct Recorder {
    seen: ActorRef<(Msg, Instant)>,
}

impl Actor for Recorder {
    type Msg = Msg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Msg) {
        self.seen.tell((msg, Instant::now()));
    }
}

#[test]
fn fixed_rate_and_fixed_delay_repeat_and_are_never_early() {
    let system = system();
    for fixed_rate in [true, false] {
        let seen = TestProbe::new(&system, "ticks");
        let sender = seen.actor_ref();
        let actor = system
            .spawn(Props::new(move || Recorder {
                seen: sender.clone(),
            }))
            .unwrap();
        let interval = Duration::from_millis(5);
        let start = Instant::now();
        let handle = if fixed_rate {
            system
                .scheduler()
                .schedule_at_fixed_rate(interval, interval, &actor, Msg::Tick)
        } else {
            system
                .scheduler()
                .schedule_with_fixed_delay(interval, interval, &actor, Msg::Tick)
        };
        let ticks = seen.receive_n(5, PATIENCE);
        handle.cancel();
        for (k, (msg, at)) in ticks.iter().enumerate() {
            assert_eq!(*msg, Msg::Tick);
            let earliest = start + interval * (k as u32 + 1);
            assert!(
                *at >= earliest,
                "tick {k} came early (fixed_rate={fixed_rate})"
            );
        }
        system.stop(&actor);
    }
    terminate(&system, PATIENCE);
}

enum Command {
    Single(&'static str, Duration, Msg),
    Periodic(Duration),
    CancelTicksAfter(u32),
}

enum DriverMsg {
    Command(Command),
    Timer(Msg),
}

impl Clone for DriverMsg {
    fn clone(&self) -> Self {
        match self {
            DriverMsg::Timer(m) => DriverMsg::Timer(m.clone()),
            DriverMsg::Command(_) => unreachable!("commands are not timer messages"),
        }
    }
}

/// Starts timers on command and reports the timer messages it handles.
struct Driver {
    seen: ActorRef<Msg>,
    report: ActorRef<u32>,
    cancel_after: Option<u32>,
    ticks: u32,
    cancelled: bool,
    ticks_after_cancel: u32,
}

impl Actor for Driver {
    type Msg = DriverMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: DriverMsg) {
        match msg {
            DriverMsg::Command(Command::Single(key, delay, m)) => {
                ctx.timers().start_single(key, delay, DriverMsg::Timer(m));
            }
            DriverMsg::Command(Command::Periodic(interval)) => {
                ctx.timers()
                    .start_periodic("tick", interval, DriverMsg::Timer(Msg::Tick));
            }
            DriverMsg::Command(Command::CancelTicksAfter(n)) => self.cancel_after = Some(n),
            DriverMsg::Timer(Msg::Tick) if self.cancelled => self.ticks_after_cancel += 1,
            DriverMsg::Timer(Msg::Tick) => {
                self.ticks += 1;
                if Some(self.ticks) == self.cancel_after {
                    // Cancel, then fence: a tick already on its way must
                    // still not be delivered.
                    ctx.timers().cancel("tick");
                    assert!(!ctx.timers().is_active("tick"));
                    self.cancelled = true;
                    ctx.timers().start_single(
                        "fence",
                        Duration::from_millis(20),
                        DriverMsg::Timer(Msg::Fence),
                    );
                }
            }
            DriverMsg::Timer(Msg::Fence) => self.report.tell(self.ticks_after_cancel),
            DriverMsg::Timer(other) => self.seen.tell(other),
        }
    }
}

fn spawn_driver(
    system: &troupe::ActorSystem,
) -> (troupe::ActorRef<DriverMsg>, TestProbe<Msg>, TestProbe<u32>) {
    let seen = TestProbe::new(system, "timer messages");
    let report = TestProbe::new(system, "ticks after cancel");
    let (s, r) = (seen.actor_ref(), report.actor_ref());
    let actor = system
        .spawn(Props::new(move || Driver {
            seen: s.clone(),
            report: r.clone(),
            cancel_after: None,
            ticks: 0,
            cancelled: false,
            ticks_after_cancel: 0,
        }))
        .unwrap();
    (actor, seen, report)
}

#[test]
fn a_cancelled_periodic_timer_delivers_nothing_more() {
    let system = system();
    let (actor, _seen, report) = spawn_driver(&system);
    actor.tell(DriverMsg::Command(Command::CancelTicksAfter(5)));
    actor.tell(DriverMsg::Command(Command::Periodic(
        Duration::from_millis(1),
    )));
    assert_eq!(
        report.expect_msg(PATIENCE),
        0,
        "a tick came after the cancel"
    );
    terminate(&system, PATIENCE);
}

#[test]
fn a_single_timer_fires_once_and_a_replaced_one_never() {
    let system = system();
    let (actor, seen, _report) = spawn_driver(&system);
    let start = Instant::now();
    actor.tell(DriverMsg::Command(Command::Single(
        "k",
        Duration::from_millis(10),
        Msg::Other("replaced"),
    )));
    actor.tell(DriverMsg::Command(Command::Single(
        "k",
        Duration::from_millis(15),
        Msg::Other("kept"),
    )));
    actor.tell(DriverMsg::Command(Command::Single(
        "later",
        Duration::from_millis(40),
        Msg::Other("fence"),
    )));
    assert_eq!(seen.expect_msg(PATIENCE), Msg::Other("kept"));
    assert!(start.elapsed() >= Duration::from_millis(15));
    assert_eq!(seen.expect_msg(PATIENCE), Msg::Other("fence"));
    terminate(&system, PATIENCE);
    assert!(seen.received().is_empty(), "the replaced timer fired");
}

/// Sets a receive timeout in `started` and reports when it fires.
struct Idle {
    fired: ActorRef<Instant>,
}

impl Actor for Idle {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.set_receive_timeout(Some(Duration::from_millis(30)));
    }
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        if signal == Signal::ReceiveTimeout {
            self.fired.tell(Instant::now());
            ctx.set_receive_timeout(None);
        }
    }
}

#[test]
fn the_receive_timeout_fires_after_silence() {
    let system = system();
    let fired = TestProbe::new(&system, "receive timeout");
    let sender = fired.actor_ref();
    let start = Instant::now();
    let actor = system
        .spawn(Props::new(move || Idle {
            fired: sender.clone(),
        }))
        .unwrap();
    // Keep it busy for a while: the timeout counts from the last message.
    for _ in 0..3 {
        actor.tell(());
    }
    let at = fired.expect_msg(PATIENCE);
    assert!(at.duration_since(start) >= Duration::from_millis(30));
    terminate(&system, PATIENCE);
    assert!(
        fired.received().is_empty(),
        "it fired again after being turned off"
    );
}

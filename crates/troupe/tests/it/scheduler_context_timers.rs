//! Timers that belong to one actor instance, on virtual time: keys of any
//! hashable type (one timer per entity, so that cancelling or replacing one
//! leaves the others alone and a replaced timer's message is never
//! delivered, even when it is already queued), and `Context::schedule_once`
//! / `schedule_repeatedly`, whose timers die with the instance that armed
//! them, unlike the system scheduler's, which are addressed to the actor's
//! ref and so reach whichever instance holds it when they fire.

use std::time::Duration;

use crate::support::PATIENCE;
use troupe::scheduler::ManualClock;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props, ReplyTo, SupervisorStrategy};
use troupe_testkit::{quiet_panics, terminate, Latch, TestProbe};

const SECOND: Duration = Duration::from_secs(1);

fn system_on(clock: &ManualClock, name: &str) -> ActorSystem {
    ActorSystem::builder()
        .name(name)
        .threads(2)
        .manual_clock(clock)
        .build()
        .unwrap()
}

/// The expiry timer of reservation `id`: one key per entity.
fn expiry(id: u64) -> (&'static str, u64) {
    ("expire", id)
}

enum Booking {
    /// Holds reservation `id` for `for_`; its expiry says `tag`.
    Hold {
        id: u64,
        for_: Duration,
        tag: &'static str,
    },
    /// Confirms reservation `id`: its expiry is cancelled.
    Confirm(u64),
    /// Waits on `latch` (the test fires the old expiry meanwhile, so its
    /// message is queued), then holds `id` again, replacing that expiry.
    HoldAfter {
        latch: Latch,
        id: u64,
        for_: Duration,
        tag: &'static str,
    },
    /// Answers whether reservation `id`'s expiry is running.
    IsHeld(u64, ReplyTo<bool>),
    Expire(u64, &'static str),
}

/// Keeps reservations and reports each expiry that reaches it.
struct Reservations {
    expired: ActorRef<(u64, &'static str)>,
}

impl Actor for Reservations {
    type Msg = Booking;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Booking) {
        match msg {
            Booking::Hold { id, for_, tag } => {
                ctx.timers()
                    .start_single(expiry(id), for_, Booking::Expire(id, tag));
            }
            Booking::Confirm(id) => ctx.timers().cancel(expiry(id)),
            Booking::HoldAfter {
                latch,
                id,
                for_,
                tag,
            } => {
                latch.wait(PATIENCE);
                ctx.timers()
                    .start_single(expiry(id), for_, Booking::Expire(id, tag));
            }
            Booking::IsHeld(id, reply) => {
                reply.reply(ctx.timers().is_active(expiry(id)));
            }
            Booking::Expire(id, tag) => self.expired.tell((id, tag)),
        }
    }
}

#[test]
fn timers_keyed_per_entity_are_cancelled_and_replaced_one_by_one() {
    let clock = ManualClock::new();
    let system = system_on(&clock, "keyed-timers");
    let expired = TestProbe::new(&system, "expiries");
    let out = expired.actor_ref();
    let desk = system
        .spawn(Props::new(move || Reservations {
            expired: out.clone(),
        }))
        .unwrap();
    let is_held = |id| desk.ask(|r| Booking::IsHeld(id, r), PATIENCE).wait();

    // Two reservations, two live timers under keys of the same type.
    for id in [1, 2] {
        desk.tell(Booking::Hold {
            id,
            for_: SECOND * 10,
            tag: "held",
        });
    }
    assert_eq!(is_held(1), Ok(true));
    assert_eq!(is_held(2), Ok(true));
    // Confirming 1 cancels its expiry only.
    desk.tell(Booking::Confirm(1));
    assert_eq!(is_held(1), Ok(false));
    assert_eq!(is_held(2), Ok(true));
    assert_eq!(clock.advance(SECOND * 10), 1, "only 2's expiry was pending");
    expired.expect_msg_eq((2, "held"), PATIENCE);
    assert_eq!(
        is_held(2),
        Ok(false),
        "a single timer is done once delivered"
    );

    // Replacing 3's expiry after the old one fired, its message queued on
    // the actor, delivers the new one only.
    desk.tell(Booking::Hold {
        id: 3,
        for_: SECOND * 10,
        tag: "old",
    });
    let latch = Latch::new();
    desk.tell(Booking::HoldAfter {
        latch: latch.clone(),
        id: 3,
        for_: SECOND * 20,
        tag: "new",
    });
    latch.expect_waiters(1, PATIENCE);
    assert_eq!(clock.advance(SECOND * 10), 1, "the old expiry fired");
    latch.open();
    assert_eq!(is_held(3), Ok(true));
    assert_eq!(clock.advance(SECOND * 20), 1);
    expired.expect_msg_eq((3, "new"), PATIENCE);
    terminate(&system, PATIENCE);
    assert!(
        expired.received().is_empty(),
        "a cancelled or replaced expiry was delivered: {:?}",
        expired.received()
    );
}

#[derive(Clone, Debug, PartialEq)]
enum Event {
    Started,
    Expired(u64),
    Tick,
    Marker,
}

#[derive(Clone)]
enum Msg {
    /// Arms a context timer for `Expire(id)` and a repeating `Tick`.
    Hold(u64, Duration),
    /// Arms `Expire(id)` on the system scheduler, addressed to `myself()`.
    HoldOnSystemScheduler(u64, Duration),
    Fail,
    Expire(u64),
    Tick,
    /// Reported as is: whatever an advance delivered comes before it.
    Marker,
}

/// Reports its starts (after each restart too) and every timer message.
struct Booker {
    out: ActorRef<Event>,
}

impl Actor for Booker {
    type Msg = Msg;
    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.out.tell(Event::Started);
    }
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Hold(id, after) => {
                ctx.schedule_once(after, Msg::Expire(id));
                ctx.schedule_repeatedly(after / 2, after / 2, Msg::Tick);
            }
            Msg::HoldOnSystemScheduler(id, after) => {
                let me = ctx.myself();
                ctx.system()
                    .scheduler()
                    .schedule_once(after, &me, Msg::Expire(id));
            }
            Msg::Fail => panic!("context-timers-test: crash"),
            Msg::Expire(id) => self.out.tell(Event::Expired(id)),
            Msg::Tick => self.out.tell(Event::Tick),
            Msg::Marker => self.out.tell(Event::Marker),
        }
    }
}

fn spawn_booker(system: &ActorSystem) -> (ActorRef<Msg>, TestProbe<Event>) {
    let events = TestProbe::new(system, "booker");
    let out = events.actor_ref();
    let booker = system
        .spawn(
            Props::new(move || Booker { out: out.clone() })
                .supervisor(SupervisorStrategy::restart()),
        )
        .unwrap();
    events.expect_msg_eq(Event::Started, PATIENCE);
    (booker, events)
}

#[test]
fn context_timers_of_a_failed_instance_never_reach_its_successor() {
    quiet_panics(&["context-timers-test: crash"]);
    let clock = ManualClock::new();
    let system = system_on(&clock, "context-timers-restart");
    let (booker, events) = spawn_booker(&system);
    booker.tell(Msg::Hold(1, SECOND * 10));
    booker.tell(Msg::Fail);
    events.expect_msg_eq(Event::Started, PATIENCE);
    // Past both deadlines: anything the old timers delivered would be
    // handled before the marker.
    clock.advance(SECOND * 20);
    booker.tell(Msg::Marker);
    events.expect_msg_eq(Event::Marker, PATIENCE);

    // The fresh instance's own timers work as usual.
    booker.tell(Msg::Hold(2, SECOND * 10));
    booker.tell(Msg::Marker); // armed once this is back
    events.expect_msg_eq(Event::Marker, PATIENCE);
    clock.advance(SECOND * 5);
    events.expect_msg_eq(Event::Tick, PATIENCE);
    clock.advance(SECOND * 5);
    // Due at the same deadline: either may come first.
    let both = events.receive_n(2, PATIENCE);
    assert!(
        both.contains(&Event::Tick) && both.contains(&Event::Expired(2)),
        "{both:?}"
    );
    terminate(&system, PATIENCE);
    assert!(
        events.received().is_empty(),
        "the failed instance's timers reached its successor: {:?}",
        events.received()
    );
}

/// The system scheduler's semantics, kept for contrast: its timer is
/// addressed to the actor's ref, which outlives a restart, so the fresh
/// instance gets the message its predecessor scheduled. That is why a
/// timer about the actor's own state belongs on `Context`.
#[test]
fn a_system_scheduler_timer_reaches_the_restarted_instance() {
    quiet_panics(&["context-timers-test: crash"]);
    let clock = ManualClock::new();
    let system = system_on(&clock, "system-timer-restart");
    let (booker, events) = spawn_booker(&system);
    booker.tell(Msg::HoldOnSystemScheduler(1, SECOND * 10));
    booker.tell(Msg::Fail);
    events.expect_msg_eq(Event::Started, PATIENCE);
    assert_eq!(clock.advance(SECOND * 20), 1);
    booker.tell(Msg::Marker);
    assert_eq!(
        events.receive_n(2, PATIENCE),
        [Event::Expired(1), Event::Marker]
    );
    terminate(&system, PATIENCE);
}

/// Starts a repeating context timer on its first message and cancels it by
/// its id on the next.
struct Metronome {
    out: ActorRef<Event>,
    running: Option<troupe::TimerId>,
}

impl Actor for Metronome {
    type Msg = Msg;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Hold(_, period) => match self.running.take() {
                None => self.running = Some(ctx.schedule_repeatedly(period, period, Msg::Tick)),
                Some(id) => {
                    ctx.timers().cancel(id);
                    assert!(!ctx.timers().is_active(id));
                }
            },
            Msg::Tick => self.out.tell(Event::Tick),
            Msg::Marker => self.out.tell(Event::Marker),
            _ => {}
        }
    }
}

#[test]
fn a_repeating_context_timer_fires_each_period_until_cancelled_by_its_id() {
    let clock = ManualClock::new();
    let system = system_on(&clock, "context-timers-repeat");
    let events = TestProbe::new(&system, "metronome");
    let out = events.actor_ref();
    let metronome = system
        .spawn(Props::new(move || Metronome {
            out: out.clone(),
            running: None,
        }))
        .unwrap();
    metronome.tell(Msg::Hold(0, SECOND));
    metronome.tell(Msg::Marker);
    events.expect_msg_eq(Event::Marker, PATIENCE);
    assert_eq!(clock.advance(SECOND * 3), 3);
    assert_eq!(events.receive_n(3, PATIENCE), vec![Event::Tick; 3]);
    metronome.tell(Msg::Hold(0, SECOND));
    metronome.tell(Msg::Marker);
    events.expect_msg_eq(Event::Marker, PATIENCE);
    clock.advance(SECOND * 3);
    metronome.tell(Msg::Marker);
    events.expect_msg_eq(Event::Marker, PATIENCE);
    terminate(&system, PATIENCE);
    assert!(events.received().is_empty(), "a tick after the cancel");
}

//! The event stream: events reach the subscribers of their type only, in
//! publish order; unsubscribing and stopping end the delivery; the runtime
//! publishes dead letters and a lifecycle event for every start, restart
//! and stop; a dead letter caused by publishing a dead letter is not
//! published again (no loop through a full subscriber).

use std::time::Duration;

use crate::support::PATIENCE;
use troupe::{
    Actor, ActorEvent, ActorEventKind, ActorRef, ActorSystem, Context, DeadLetter,
    DeadLetterReason, MailboxConfig, Overflow, Props, SupervisorStrategy,
};
use troupe_testkit::{quiet_panics, terminate, Latch, TestProbe};

/// A probe subscribed as an actor: the testkit's `TestProbe`.
fn forwarder<E: Send + 'static>(system: &ActorSystem, name: &str) -> (ActorRef<E>, TestProbe<E>) {
    let probe = TestProbe::new(system, name);
    (probe.actor_ref(), probe)
}

#[derive(Clone, Debug, PartialEq)]
struct Price(u32);
#[derive(Clone, Debug, PartialEq)]
struct News(&'static str);

fn system(name: &str) -> ActorSystem {
    ActorSystem::builder()
        .name(name)
        .threads(2)
        .build()
        .unwrap()
}

#[test]
fn events_reach_the_subscribers_of_their_type_in_order() {
    let system = system("events-types");
    let (prices_a, a) = forwarder::<Price>(&system, "prices a");
    let (prices_b, b) = forwarder::<Price>(&system, "prices b");
    let (news, n) = forwarder::<News>(&system, "news");
    let stream = system.event_stream();
    stream.subscribe(prices_a.clone());
    stream.subscribe(prices_a.clone()); // once, however often
    stream.subscribe(prices_b.clone());
    stream.subscribe(news);
    for p in 0..100 {
        assert_eq!(stream.publish(Price(p)), 2);
    }
    assert_eq!(stream.publish(News("hello")), 1);
    assert_eq!(
        a.receive_n(100, PATIENCE),
        (0..100).map(Price).collect::<Vec<_>>()
    );
    assert_eq!(
        b.receive_n(100, PATIENCE),
        (0..100).map(Price).collect::<Vec<_>>()
    );
    n.expect_msg_eq(News("hello"), PATIENCE);
    assert!(stream.unsubscribe(&prices_a));
    assert!(!stream.unsubscribe(&prices_a), "already gone");
    assert_eq!(stream.publish(Price(100)), 1);
    b.expect_msg_eq(Price(100), PATIENCE);
    terminate(&system, PATIENCE);
    assert!(a.received().is_empty(), "nothing after unsubscribing");
}

#[test]
fn a_stopped_subscriber_leaves_the_stream() {
    let system = system("events-stopped");
    let (prices, p) = forwarder::<Price>(&system, "prices");
    system.event_stream().subscribe(prices.clone());
    system.stop(&prices);
    // Only the probe's own actor stopped: its watcher still watches.
    p.expect_terminated(&prices, PATIENCE);
    assert_eq!(system.event_stream().publish(Price(1)), 0);
    assert_eq!(system.dead_letter_count(), 0, "nothing was sent to it");
    terminate(&system, PATIENCE);
    assert!(p.received().is_empty());
}

#[test]
fn dead_letters_are_published() {
    let system = system("events-dead-letters");
    let (letters, l) = forwarder::<DeadLetter>(&system, "dead letters");
    system.event_stream().subscribe(letters);
    let (gone, _) = forwarder::<Price>(&system, "gone");
    system.stop(&gone);
    l.expect_terminated(&gone, PATIENCE);
    gone.tell(Price(7));
    let letter = l.expect_msg(PATIENCE);
    assert_eq!(letter.reason, DeadLetterReason::RecipientStopped);
    assert_eq!(letter.recipient, gone.id());
    assert!(
        letter.message_type.ends_with("Price"),
        "{}",
        letter.message_type
    );
    terminate(&system, PATIENCE);
}

#[derive(Debug)]
enum Crash {
    Now,
}

struct Fragile;
impl Actor for Fragile {
    type Msg = Crash;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Crash::Now: Crash) {
        panic!("events-test: crash");
    }
}

#[test]
fn every_start_restart_and_stop_is_an_event() {
    quiet_panics(&["events-test: crash"]);
    let system = system("events-lifecycle");
    let (events, e) = forwarder::<ActorEvent>(&system, "lifecycle");
    system.event_stream().subscribe(events);
    let fragile = system
        .spawn(
            Props::new(|| Fragile)
                .name("fragile")
                .supervisor(SupervisorStrategy::restart().with_limit(3, Duration::from_secs(60))),
        )
        .unwrap();
    // Three restarts within the limit, then a fourth failure stops it.
    for _ in 0..4 {
        fragile.tell(Crash::Now);
    }
    // The forwarder's own start may be published too: only the fragile
    // actor's events are counted.
    let mut kinds = Vec::new();
    while kinds.len() < 5 {
        let event = e.expect_msg(PATIENCE);
        if event.actor == fragile.id() {
            assert_eq!(event.name.as_deref(), Some("fragile"));
            kinds.push(event.kind);
        }
    }
    assert_eq!(kinds[0], ActorEventKind::Started);
    for kind in &kinds[1..4] {
        match kind {
            ActorEventKind::Restarted { failure } => {
                assert_eq!(failure.message, "events-test: crash")
            }
            other => panic!("expected a restart, got {other:?}"),
        }
    }
    assert_eq!(kinds[4], ActorEventKind::Stopped);
    terminate(&system, PATIENCE);
}

/// Holds its first message until the latch opens; a mailbox of one.
struct Stuck {
    latch: Latch,
}

impl Actor for Stuck {
    type Msg = DeadLetter;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _letter: DeadLetter) {
        self.latch.wait(PATIENCE);
    }
}

#[test]
fn a_full_dead_letter_subscriber_does_not_loop() {
    let system = system("events-full");
    let latch = Latch::new();
    let l = latch.clone();
    let stuck = system
        .spawn(
            Props::new(move || Stuck { latch: l.clone() })
                .mailbox(MailboxConfig::bounded(1, Overflow::DropNewest)),
        )
        .unwrap();
    system.event_stream().subscribe(stuck);
    let (gone, g) = forwarder::<Price>(&system, "gone");
    system.stop(&gone);
    // Only the probe's own actor stopped: its watcher still watches.
    g.expect_terminated(&gone, PATIENCE);
    gone.tell(Price(1)); // handled: stuck holds it
    latch.expect_waiters(1, PATIENCE);
    gone.tell(Price(2)); // queued: the mailbox is full
    gone.tell(Price(3)); // refused: a dead letter of a dead letter, counted only
    assert_eq!(system.dead_letter_count(), 4);
    latch.open();
    terminate(&system, PATIENCE);
}

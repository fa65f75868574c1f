//! Replication between a primary and its standby when messages between
//! them are lost, as they are when the NATS server restarts under a
//! running cluster: the engines' actors run in one process, and a lossy
//! relay on each direction drops the message a test names.
//!
//! What must hold whatever is lost: no acknowledgement is released for an
//! order the standby does not hold (a lost `Replicate` is a gap the
//! standby finds and has filled before it answers), a lost answer
//! (`Replicated`) or a lost last `Replicate` is found by the client's
//! retry, and a lost `Join` or catch-up is asked for again, so the standby
//! ends equal to its primary and every order is acknowledged.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::unbounded_channel;
use trading::cluster::engine::{ClusterEngine, LogPlan};
use trading::cluster::wire::{AckMode, ClientMsg, EngineCmd, EngineReport, WireOrder};
use trading::topology::scenario_order;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};

const WAIT: Duration = Duration::from_secs(10);

/// How often the tests' client resends an order not yet answered.
const RETRY: Duration = Duration::from_millis(200);

/// How many of the next messages of each kind a relay drops, and how many
/// it dropped.
#[derive(Default)]
struct Losses {
    replicate: AtomicUsize,
    replicated: AtomicUsize,
    join: AtomicUsize,
    catch_up: AtomicUsize,
    dropped: AtomicUsize,
}

/// Takes one from `counter` if it is above zero.
fn take_one(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// Forwards every message to `to` except those `losses` says to drop; a
/// `Join` going through it names `join_as` as the standby instead of the
/// sender, so that the primary's messages for its standby go through the
/// relay in front of the standby.
struct Relay {
    to: ActorRef<EngineCmd>,
    join_as: Option<ActorRef<EngineCmd>>,
    losses: Arc<Losses>,
}

impl Actor for Relay {
    type Msg = EngineCmd;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, mut msg: EngineCmd) {
        let l = &self.losses;
        let lost = match &msg {
            EngineCmd::Replicate { .. } => take_one(&l.replicate),
            EngineCmd::Replicated { .. } => take_one(&l.replicated),
            EngineCmd::Join { .. } => take_one(&l.join),
            EngineCmd::CatchUp { .. } => take_one(&l.catch_up),
            _ => false,
        };
        if lost {
            l.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if let (Some(relay), EngineCmd::Join { standby, .. }) = (&self.join_as, &mut msg) {
            *standby = relay.clone();
        }
        self.to.tell(msg);
    }
}

/// A client that forwards everything it is told to the test.
struct Recorder(mpsc::Sender<ClientMsg>);

impl Actor for Recorder {
    type Msg = ClientMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        let _ = self.0.send(msg);
    }
}

fn engine(system: &ActorSystem, name: &str) -> ActorRef<EngineCmd> {
    // The lease keeper's side is not exercised here: its requests are
    // dropped with the channel.
    let (tx, _rx) = unbounded_channel();
    let node = name.to_string();
    system
        .spawn(Props::new(move || {
            ClusterEngine::new(0, node.clone(), LogPlan::off(), tx.clone())
        }))
        .unwrap()
}

/// A primary, its standby, and the losses of the relays between them:
/// towards the standby, and towards the primary. `before_follow` sets
/// losses before the standby joins.
struct Pair {
    primary: ActorRef<EngineCmd>,
    standby: ActorRef<EngineCmd>,
    to_standby: Arc<Losses>,
    to_primary: Arc<Losses>,
}

fn pair(system: &ActorSystem, before_follow: impl FnOnce(&Losses, &Losses)) -> Pair {
    let primary = engine(system, "a");
    let standby = engine(system, "b");
    let (to_standby, to_primary) = (Arc::new(Losses::default()), Arc::new(Losses::default()));
    before_follow(&to_standby, &to_primary);
    let (s, l) = (standby.clone(), to_standby.clone());
    let standby_relay = system
        .spawn(Props::new(move || Relay {
            to: s.clone(),
            join_as: None,
            losses: l.clone(),
        }))
        .unwrap();
    let (p, l) = (primary.clone(), to_primary.clone());
    let primary_relay = system
        .spawn(Props::new(move || Relay {
            to: p.clone(),
            join_as: Some(standby_relay.clone()),
            losses: l.clone(),
        }))
        .unwrap();
    primary.tell(EngineCmd::Promote { epoch: 1 });
    standby.tell(EngineCmd::Follow {
        epoch: 1,
        primary: primary_relay,
    });
    Pair {
        primary,
        standby,
        to_standby,
        to_primary,
    }
}

fn report(engine: &ActorRef<EngineCmd>) -> EngineReport {
    engine.ask(EngineCmd::Report, WAIT).wait().unwrap()
}

/// Asks until `engine` reports `role`, for up to `WAIT`.
fn until_role(engine: &ActorRef<EngineCmd>, role: &str) -> EngineReport {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = report(engine);
        if r.role == role || Instant::now() > deadline {
            return r;
        }
        std::thread::yield_now();
    }
}

/// Waits until `losses` has dropped `n` messages in all.
fn until_dropped(losses: &Losses, n: usize) {
    let deadline = Instant::now() + WAIT;
    while losses.dropped.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < deadline, "the relay never dropped {n}");
        std::thread::yield_now();
    }
}

fn id(n: usize) -> u64 {
    scenario_order(0, n).id
}

fn place(engine: &ActorRef<EngineCmd>, client: &ActorRef<ClientMsg>, n: usize, mode: AckMode) {
    engine.tell(EngineCmd::Orders {
        orders: vec![WireOrder::from(scenario_order(0, n))],
        client: client.clone(),
        mode,
    });
}

/// The ids of the next `n` acknowledgements (request-reply).
fn acks(rx: &mpsc::Receiver<ClientMsg>, n: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    while ids.len() < n {
        match rx.recv_timeout(WAIT) {
            Ok(ClientMsg::Acks { ids: got }) => ids.extend(got),
            Ok(other) => panic!("not an acknowledgement: {other:?}"),
            Err(e) => panic!("{} of {n} acknowledgements within {WAIT:?}: {e}", ids.len()),
        }
    }
    ids
}

/// Sends order `n` every `RETRY`, as a client does, until `done` says an
/// answer completes it; fails after `WAIT`.
fn retry_until(
    primary: &ActorRef<EngineCmd>,
    client: &ActorRef<ClientMsg>,
    rx: &mpsc::Receiver<ClientMsg>,
    n: usize,
    mode: AckMode,
    done: impl Fn(&ClientMsg) -> bool,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        place(primary, client, n, mode);
        let resend_at = Instant::now() + RETRY;
        while let Some(left) = resend_at.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(msg) if done(&msg) => return,
                Ok(_) | Err(_) => {}
            }
        }
        assert!(
            Instant::now() < deadline,
            "order {n} was never completed, retried every {RETRY:?} for {WAIT:?}"
        );
    }
}

/// The standby holds exactly what its primary holds.
fn assert_equal(pair: &Pair) {
    let (p, s) = (report(&pair.primary), report(&pair.standby));
    assert_eq!(
        (s.role.as_str(), s.orders),
        ("standby", p.orders),
        "the standby holds {} of its primary's {} orders",
        s.orders,
        p.orders
    );
    assert_eq!((p.fingerprint, &p.digests), (s.fingerprint, &s.digests));
    assert_eq!(p.applied_digest, s.applied_digest);
}

#[test]
fn a_lost_replicate_releases_no_acknowledgement_for_what_it_carried() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let pair = pair(&system, |_, _| {});
    assert_eq!(until_role(&pair.standby, "standby").role, "standby");
    place(&pair.primary, &client, 0, AckMode::RequestReply);
    assert_eq!(acks(&rx, 1), [id(0)]);
    // Order 1's replication is lost; order 2's arrives.
    pair.to_standby.replicate.store(1, Ordering::SeqCst);
    place(&pair.primary, &client, 1, AckMode::RequestReply);
    until_dropped(&pair.to_standby, 1);
    place(&pair.primary, &client, 2, AckMode::RequestReply);
    assert_eq!(acks(&rx, 2), [id(1), id(2)]);
    // Acknowledged: so the standby must hold both.
    assert_equal(&pair);
    assert_eq!(report(&pair.standby).gaps, 1);
    system.shutdown();
}

#[test]
fn a_retry_finds_a_lost_last_replicate() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let pair = pair(&system, |_, _| {});
    assert_eq!(until_role(&pair.standby, "standby").role, "standby");
    place(&pair.primary, &client, 0, AckMode::RequestReply);
    assert_eq!(acks(&rx, 1), [id(0)]);
    // The last replication before a quiet spell is lost: nothing after it
    // shows the gap but the client's resend of the order.
    pair.to_standby.replicate.store(1, Ordering::SeqCst);
    place(&pair.primary, &client, 1, AckMode::RequestReply);
    until_dropped(&pair.to_standby, 1);
    retry_until(
        &pair.primary,
        &client,
        &rx,
        1,
        AckMode::RequestReply,
        |m| matches!(m, ClientMsg::Acks { ids } if ids.contains(&id(1))),
    );
    assert_equal(&pair);
    assert_eq!(report(&pair.standby).gaps, 1);
    system.shutdown();
}

#[test]
fn a_lost_answer_of_the_standby_is_given_again_on_a_retry() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let pair = pair(&system, |_, _| {});
    assert_eq!(until_role(&pair.standby, "standby").role, "standby");
    place(&pair.primary, &client, 0, AckMode::RequestReply);
    assert_eq!(acks(&rx, 1), [id(0)]);
    // The standby applies order 1, but its answer is lost.
    let before = pair.to_primary.dropped.load(Ordering::SeqCst);
    pair.to_primary.replicated.store(1, Ordering::SeqCst);
    place(&pair.primary, &client, 1, AckMode::RequestReply);
    until_dropped(&pair.to_primary, before + 1);
    retry_until(
        &pair.primary,
        &client,
        &rx,
        1,
        AckMode::RequestReply,
        |m| matches!(m, ClientMsg::Acks { ids } if ids.contains(&id(1))),
    );
    assert_equal(&pair);
    // Nothing was missing there: the answer was given again.
    assert_eq!(report(&pair.standby).gaps, 0);
    system.shutdown();
}

#[test]
fn one_way_a_standby_with_a_gap_confirms_only_once_it_is_filled() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let pair = pair(&system, |_, _| {});
    assert_eq!(until_role(&pair.standby, "standby").role, "standby");
    let standby_done = |n: usize| move |m: &ClientMsg| matches!(m, ClientMsg::StandbyDone { ids, .. } if ids.contains(&id(n)));
    retry_until(
        &pair.primary,
        &client,
        &rx,
        0,
        AckMode::OneWay,
        standby_done(0),
    );
    // Order 1's replication is lost: the standby never tells the client,
    // which resends it until it does.
    pair.to_standby.replicate.store(1, Ordering::SeqCst);
    place(&pair.primary, &client, 1, AckMode::OneWay);
    until_dropped(&pair.to_standby, 1);
    retry_until(
        &pair.primary,
        &client,
        &rx,
        1,
        AckMode::OneWay,
        standby_done(1),
    );
    assert_equal(&pair);
    assert_eq!(report(&pair.standby).gaps, 1);
    system.shutdown();
}

#[test]
fn a_lost_join_or_catch_up_is_asked_for_again() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    for lose in ["join", "catch-up"] {
        let pair = pair(&system, |to_standby, to_primary| match lose {
            "join" => to_primary.join.store(1, Ordering::SeqCst),
            _ => to_standby.catch_up.store(1, Ordering::SeqCst),
        });
        let r = until_role(&pair.standby, "standby");
        assert_eq!(r.role, "standby", "after a lost {lose}");
        place(&pair.primary, &client, 0, AckMode::RequestReply);
        assert_eq!(acks(&rx, 1), [id(0)], "after a lost {lose}");
        assert_equal(&pair);
    }
    system.shutdown();
}

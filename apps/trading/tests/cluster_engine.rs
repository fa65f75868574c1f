//! The distributed engine's rules, with its actors in one process (no
//! NATS: refs are local, the wire is not crossed): a retried order id is
//! answered and not applied again, on the primary and after the standby
//! took over; a joining standby catches up and ends equal to its primary;
//! replication of another revision is dropped; a primary whose standby is
//! gone acknowledges only once the lease lets it go on alone; one-way,
//! primary and standby each tell the client, a retry included; with a
//! log, a primary restarts from its latest snapshot and the events after
//! it, and a standby from the state it caught up from, even when its
//! journal holds an earlier life; a batch of orders is answered as one
//! message per client.

use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use tokio::sync::mpsc::unbounded_channel;
use trading::cluster::engine::{open_node_log, ClusterEngine, LogPlan};
use trading::cluster::lease::LeaseRequest;
use trading::cluster::state::{self, Event};
use trading::cluster::wire::{
    AckMode, ClientMsg, EngineCmd, EngineReport, Replica, StandbyAck, WireOrder,
};
use trading::topology::{scenario_order, Pattern, Scenario};
use trading::TxLog;
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};
use troupe_cluster::persistence::LocalJournal;

/// A client that forwards every acknowledgement to the test.
struct Probe(mpsc::Sender<u64>);

impl Actor for Probe {
    type Msg = ClientMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        if let ClientMsg::Acks { ids } = msg {
            for id in ids {
                let _ = self.0.send(id);
            }
        }
    }
}

const WAIT: Duration = Duration::from_secs(10);

fn engine(
    system: &ActorSystem,
    name: &str,
) -> (
    ActorRef<EngineCmd>,
    tokio::sync::mpsc::UnboundedReceiver<LeaseRequest>,
) {
    engine_with(system, name, LogPlan::off())
}

fn engine_with(
    system: &ActorSystem,
    name: &str,
    plan: LogPlan,
) -> (
    ActorRef<EngineCmd>,
    tokio::sync::mpsc::UnboundedReceiver<LeaseRequest>,
) {
    let (tx, rx) = unbounded_channel();
    let node = name.to_string();
    let engine = system
        .spawn(Props::new(move || {
            ClusterEngine::new(0, node.clone(), plan.clone(), tx.clone())
        }))
        .unwrap();
    (engine, rx)
}

/// Engine "a" primary at `epoch` and engine "b" its caught-up standby,
/// with the primary's lease requests.
fn pair(
    system: &ActorSystem,
    epoch: u64,
) -> (
    ActorRef<EngineCmd>,
    ActorRef<EngineCmd>,
    tokio::sync::mpsc::UnboundedReceiver<LeaseRequest>,
) {
    let (primary, lease) = engine(system, "a");
    let (standby, _) = engine(system, "b");
    primary.tell(EngineCmd::Promote { epoch });
    standby.tell(EngineCmd::Follow {
        epoch,
        primary: primary.clone(),
    });
    assert_eq!(until_role(&standby, "standby").role, "standby");
    (primary, standby, lease)
}

fn report(engine: &ActorRef<EngineCmd>) -> EngineReport {
    engine.ask(EngineCmd::Report, WAIT).wait().unwrap()
}

/// Asks until `engine` reports `role` (each ask is a round trip through
/// its mailbox, behind whatever reached it before).
fn until_role(engine: &ActorRef<EngineCmd>, role: &str) -> EngineReport {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let r = report(engine);
        if r.role == role || std::time::Instant::now() > deadline {
            return r;
        }
        std::thread::yield_now();
    }
}

fn place(engine: &ActorRef<EngineCmd>, client: &ActorRef<ClientMsg>, n: usize) {
    place_as(engine, client, n, AckMode::RequestReply);
}

fn place_as(engine: &ActorRef<EngineCmd>, client: &ActorRef<ClientMsg>, n: usize, mode: AckMode) {
    engine.tell(EngineCmd::Orders {
        orders: vec![WireOrder::from(scenario_order(0, n))],
        client: client.clone(),
        mode,
    });
}

fn acks(rx: &mpsc::Receiver<u64>, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| rx.recv_timeout(WAIT).expect("an acknowledgement"))
        .collect()
}

#[test]
fn a_retried_order_is_answered_not_applied_again_and_the_standby_stays_equal() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (ack_tx, ack_rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Probe(ack_tx.clone())))
        .unwrap();
    let (primary, _p_lease) = engine(&system, "a");
    let (standby, _s_lease) = engine(&system, "b");
    primary.tell(EngineCmd::Promote { epoch: 1 });
    for n in 0..5 {
        place(&primary, &client, n);
    }
    assert_eq!(acks(&ack_rx, 5).len(), 5);
    // A standby joins late: it gets the five as catch-up, then the rest.
    standby.tell(EngineCmd::Follow {
        epoch: 1,
        primary: primary.clone(),
    });
    place(&primary, &client, 5);
    // An order no engine can read (a side byte out of range) is dropped
    // without holding up the ones behind it.
    primary.tell(EngineCmd::Orders {
        orders: vec![WireOrder {
            side: 7,
            ..WireOrder::from(scenario_order(0, 99))
        }],
        client: client.clone(),
        mode: AckMode::RequestReply,
    });
    for n in [6, 3, 6, 7] {
        place(&primary, &client, n);
    }
    let ids = acks(&ack_rx, 5);
    let expected: Vec<u64> = [5, 6, 3, 6, 7]
        .iter()
        .map(|&n| scenario_order(0, n).id)
        .collect();
    assert_eq!(ids, expected, "every send answered, in order");
    let (p, s) = (report(&primary), report(&standby));
    assert_eq!((p.orders, p.duplicates), (8, 2));
    assert_eq!((s.role.as_str(), s.orders), ("standby", 8));
    assert_eq!((p.fingerprint, &p.digests), (s.fingerprint, &s.digests));
    assert_eq!(p.standby_epoch, Some(1));

    // The standby takes over (its own lease at revision 2): a retry of an
    // order it applied as standby is answered from its memory.
    standby.tell(EngineCmd::Promote { epoch: 2 });
    place(&standby, &client, 7);
    place(&standby, &client, 8);
    assert_eq!(
        acks(&ack_rx, 2),
        [scenario_order(0, 7).id, scenario_order(0, 8).id]
    );
    let s = report(&standby);
    assert_eq!((s.role.as_str(), s.orders, s.duplicates), ("primary", 9, 1));
    assert!(s.promoted_at_ns.is_some() && s.first_order_after_promotion_ns.is_some());
    system.shutdown();
}

#[test]
fn replication_of_another_revision_is_dropped() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (primary, standby, _lease) = pair(&system, 4);
    // A primary of an older revision still forwarding: ignored.
    standby.tell(EngineCmd::Replicate {
        epoch: 3,
        from: 0,
        to: 1,
        replicas: vec![Replica {
            order: WireOrder::from(scenario_order(1, 0)),
            ack: StandbyAck::Primary,
        }],
        clients: Vec::new(),
    });
    // A join at a revision the primary never held: ignored, nothing sent.
    let (late, _l) = engine(&system, "c");
    late.tell(EngineCmd::Follow {
        epoch: 9,
        primary: primary.clone(),
    });
    let s = report(&standby);
    assert_eq!((s.role.as_str(), s.orders), ("standby", 0));
    assert_eq!(report(&late).role, "joining");
    assert_eq!(report(&primary).standby_epoch, Some(4));
    system.shutdown();
}

#[test]
fn without_its_standby_a_primary_acknowledges_only_after_the_lease_says_so() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (ack_tx, ack_rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Probe(ack_tx.clone())))
        .unwrap();
    let (primary, standby, mut lease) = pair(&system, 1);
    place(&primary, &client, 0);
    acks(&ack_rx, 1);
    // The standby dies; the primary asks its keeper to go on alone.
    system.stop(&standby);
    let deadline = std::time::Instant::now() + WAIT;
    let request = loop {
        match lease.try_recv() {
            Ok(request) => break request,
            Err(_) if std::time::Instant::now() < deadline => std::thread::yield_now(),
            Err(e) => panic!("no lease request within {WAIT:?}: {e}"),
        }
    };
    assert_eq!(request, LeaseRequest::Solo { epoch: 1 });
    place(&primary, &client, 1);
    assert!(
        ack_rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "no acknowledgement before the lease is renewed"
    );
    primary.tell(EngineCmd::Solo { epoch: 2 });
    assert_eq!(acks(&ack_rx, 1), [scenario_order(0, 1).id]);
    system.shutdown();
}

/// A client that forwards everything it is told to the test.
struct Recorder(mpsc::Sender<ClientMsg>);

impl Actor for Recorder {
    type Msg = ClientMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        let _ = self.0.send(msg);
    }
}

/// The next `n` answers, as (id, who said it, the standby revision).
fn answers(rx: &mpsc::Receiver<ClientMsg>, n: usize) -> Vec<(u64, &'static str, Option<u64>)> {
    let mut got = Vec::new();
    while got.len() < n {
        match rx.recv_timeout(WAIT).expect("an answer") {
            ClientMsg::PrimaryDone { ids, standby } => {
                got.extend(ids.into_iter().map(|id| (id, "primary", standby)))
            }
            ClientMsg::StandbyDone { ids, epoch } => {
                got.extend(ids.into_iter().map(|id| (id, "standby", Some(epoch))))
            }
            other => panic!("not a one-way answer: {other:?}"),
        }
    }
    // Primary and standby answer independently: compare as a set.
    got.sort();
    got
}

#[test]
fn one_way_primary_and_standby_each_tell_the_client_a_retry_too() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let (primary, _p) = engine(&system, "a");
    let (standby, _s) = engine(&system, "b");
    primary.tell(EngineCmd::Promote { epoch: 5 });
    // Alone, the primary's answer names no standby: complete by itself.
    place_as(&primary, &client, 0, AckMode::OneWay);
    let id = |n| scenario_order(0, n).id;
    assert_eq!(answers(&rx, 1), [(id(0), "primary", None)]);
    standby.tell(EngineCmd::Follow {
        epoch: 5,
        primary: primary.clone(),
    });
    until_role(&standby, "standby");
    place_as(&primary, &client, 1, AckMode::OneWay);
    assert_eq!(
        answers(&rx, 2),
        [(id(1), "primary", Some(5)), (id(1), "standby", Some(5))]
    );
    // A retry of an order applied before the standby joined (it has it
    // from the catch-up) and of one it was sent: both confirm, neither
    // applies again.
    place_as(&primary, &client, 0, AckMode::OneWay);
    place_as(&primary, &client, 1, AckMode::OneWay);
    assert_eq!(
        answers(&rx, 4),
        [
            (id(0), "primary", Some(5)),
            (id(0), "standby", Some(5)),
            (id(1), "primary", Some(5)),
            (id(1), "standby", Some(5)),
        ]
    );
    // Nothing travelled back to the primary for the standby's sake, and
    // request-reply still works beside one-way.
    let (ack_tx, ack_rx) = mpsc::channel();
    let replier = system
        .spawn(Props::new(move || Probe(ack_tx.clone())))
        .unwrap();
    place(&primary, &replier, 2);
    assert_eq!(acks(&ack_rx, 1), [id(2)]);
    let (p, s) = (report(&primary), report(&standby));
    assert_eq!((p.orders, p.duplicates, s.orders), (3, 2, 3));
    assert_eq!((p.fingerprint, &p.digests), (s.fingerprint, &s.digests));
    assert!(rx.try_recv().is_err(), "no answer beyond those");
    system.shutdown();
}

/// Tells `standby` to follow `primary` at `epoch` and waits until it has
/// caught up.
fn join(standby: &ActorRef<EngineCmd>, primary: &ActorRef<EngineCmd>, epoch: u64) {
    standby.tell(EngineCmd::Follow {
        epoch,
        primary: primary.clone(),
    });
    until_role(standby, "standby");
}

/// A node's journal in `dir`, buffered.
fn node_log(dir: &Path) -> Arc<LocalJournal> {
    open_node_log(dir, TxLog::Buffered).unwrap().unwrap()
}

/// Closes a node's journal once the engines that shared it are gone:
/// what was appended is written, the snapshots saved are on disk.
fn close(journal: Arc<LocalJournal>) {
    let journal = Arc::try_unwrap(journal)
        .unwrap_or_else(|_| panic!("an engine of a stopped system still holds the journal"));
    journal.flush_snapshots();
}

/// An engine logging to `journal`, a snapshot every 7 events.
fn logged_engine(
    system: &ActorSystem,
    name: &str,
    journal: &Arc<LocalJournal>,
) -> ActorRef<EngineCmd> {
    let plan = LogPlan {
        journal: Some(journal.clone()),
        snapshot_every: 7,
    };
    engine_with(system, name, plan).0
}

/// What two engines must agree on.
fn books(r: &EngineReport) -> (u64, u64, u64, u64, Vec<u64>) {
    (
        r.orders,
        r.trades,
        r.resting,
        r.fingerprint,
        r.digests.clone(),
    )
}

#[test]
fn engines_restart_from_their_snapshots_and_a_standby_from_the_state_it_caught_up_from() {
    let logs = tempfile::tempdir().unwrap();
    let (dir_a, dir_b) = (logs.path().join("a"), logs.path().join("b"));
    // Orders that leave some resting, so the state carries books.
    let scenario = Scenario::new(1, 120)
        .unwrap()
        .with_pattern(Pattern::Resting);
    let order = |n| WireOrder::from(scenario.order(0, n));
    let (ack_tx, ack_rx) = mpsc::channel();
    let place_on =
        |system: &ActorSystem, engine: &ActorRef<EngineCmd>, range: std::ops::Range<usize>| {
            let tx = ack_tx.clone();
            let client = system.spawn(Props::new(move || Probe(tx.clone()))).unwrap();
            // In batches of 8, so that appends of several events, and
            // snapshots inside them, are on the path.
            let all: Vec<usize> = range.collect();
            for batch in all.chunks(8) {
                engine.tell(EngineCmd::Orders {
                    orders: batch.iter().map(|&n| order(n)).collect(),
                    client: client.clone(),
                    mode: AckMode::RequestReply,
                });
            }
        };

    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (log_a, log_b) = (node_log(&dir_a), node_log(&dir_b));
    let primary = logged_engine(&system, "a", &log_a);
    let standby = logged_engine(&system, "b", &log_b);
    primary.tell(EngineCmd::Promote { epoch: 1 });
    place_on(&system, &primary, 0..40);
    acks(&ack_rx, 40);
    // The standby joins after 40 orders: it receives the state, not them.
    join(&standby, &primary, 1);
    place_on(&system, &primary, 40..60);
    acks(&ack_rx, 20);
    let (before, standby_before) = (report(&primary), report(&standby));
    assert!(before.resting > 0, "the test needs resting orders");
    assert_eq!(books(&standby_before), books(&before));
    system.shutdown();
    system.await_termination().unwrap();
    close(log_a);
    close(log_b);

    // The standby's log: the state it caught up from, then 20 orders.
    let mut events = Vec::new();
    let mut reader = state::EventReader::default();
    LocalJournal::read_events(&dir_b, "engine-0", &mut |_, bytes| {
        events.push(matches!(reader.read(bytes), Ok(Event::State(_))));
        Ok(())
    })
    .unwrap();
    assert_eq!(events.len(), 21);
    assert!(events[0] && events[1..].iter().all(|s| !s), "{events:?}");

    // Both restarted, each from its own log (a whole-cluster restart).
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (log_a, log_b) = (node_log(&dir_a), node_log(&dir_b));
    let primary = logged_engine(&system, "a", &log_a);
    let standby = logged_engine(&system, "b", &log_b);
    primary.tell(EngineCmd::Promote { epoch: 2 });
    standby.tell(EngineCmd::Promote { epoch: 2 });
    let (after, standby_after) = (
        until_role(&primary, "primary"),
        until_role(&standby, "primary"),
    );
    assert_eq!(books(&after), books(&before));
    assert_eq!(books(&standby_after), books(&before));
    // 60 events: snapshots at 7, 14, ... 56, then 4 events replayed.
    assert_eq!(
        (
            after.recovery.snapshot_seq_nr,
            after.recovery.replayed_events
        ),
        (56, 4)
    );
    // 21 events (the state, 20 orders): the last snapshot at 21.
    assert_eq!(
        (
            standby_after.recovery.snapshot_seq_nr,
            standby_after.recovery.replayed_events
        ),
        (21, 0)
    );
    // The ids applied came back too: a retry is answered, not applied.
    place_on(&system, &primary, 10..11);
    assert_eq!(acks(&ack_rx, 1), [scenario.order(0, 10).id]);
    let retried = report(&primary);
    assert_eq!((retried.orders, retried.duplicates), (60, 1));
    system.shutdown();
    system.await_termination().unwrap();
    close(log_a);
    close(log_b);

    // A third life: `a` leads again and `b` joins it. `b`'s journal
    // still holds its earlier life (a state, 20 orders, a snapshot at
    // 21): it reads none of it, catches up from `a`, and a later replay
    // of its log ends at `a`'s books, not at what it held before.
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (log_a, log_b) = (node_log(&dir_a), node_log(&dir_b));
    let primary = logged_engine(&system, "a", &log_a);
    let standby = logged_engine(&system, "b", &log_b);
    primary.tell(EngineCmd::Promote { epoch: 3 });
    until_role(&primary, "primary");
    // An order `b` never saw, so its old books differ from `a`'s.
    place_on(&system, &primary, 60..70);
    acks(&ack_rx, 10);
    join(&standby, &primary, 3);
    place_on(&system, &primary, 70..80);
    acks(&ack_rx, 10);
    let (before, standby_before) = (report(&primary), report(&standby));
    assert_eq!(before.orders, 80);
    assert_eq!(books(&standby_before), books(&before));
    system.shutdown();
    system.await_termination().unwrap();
    close(log_a);
    close(log_b);

    let system = ActorSystem::builder().threads(2).build().unwrap();
    let log_b = node_log(&dir_b);
    let standby = logged_engine(&system, "b", &log_b);
    standby.tell(EngineCmd::Promote { epoch: 4 });
    let after = until_role(&standby, "primary");
    assert_eq!(books(&after), books(&before));
    // Its sequence went on from its earlier life (21): the state at 22,
    // then 10 orders to 32; recovery from the new life's snapshot at 28
    // (7 events on) and the 4 events after it.
    assert_eq!(
        (
            after.recovery.snapshot_seq_nr,
            after.recovery.replayed_events
        ),
        (28, 4)
    );
    system.shutdown();
}

#[test]
fn a_batch_is_answered_as_one_message_per_client_in_order() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let first = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let (tx2, rx2) = mpsc::channel();
    let second = system
        .spawn(Props::new(move || Recorder(tx2.clone())))
        .unwrap();
    let (primary, standby, _lease) = pair(&system, 1);
    let orders = |client: u32, range: std::ops::Range<usize>| -> Vec<WireOrder> {
        range
            .map(|n| WireOrder::from(scenario_order(client as usize, n)))
            .collect()
    };
    // Two clients' batches, the second with a retry of the first's order
    // inside: every order forwarded in one `Replicate`, one `Replicated`
    // covers them all, and each client hears once.
    primary.tell(EngineCmd::Orders {
        orders: orders(0, 0..10),
        client: first.clone(),
        mode: AckMode::RequestReply,
    });
    let mut second_batch = orders(1, 0..3);
    second_batch.insert(1, WireOrder::from(scenario_order(1, 0)));
    primary.tell(EngineCmd::Orders {
        orders: second_batch.clone(),
        client: second.clone(),
        mode: AckMode::RequestReply,
    });
    let ids = |orders: &[WireOrder]| orders.iter().map(|o| o.id).collect::<Vec<_>>();
    match rx.recv_timeout(WAIT).expect("an answer") {
        ClientMsg::Acks { ids: got } => assert_eq!(got, ids(&orders(0, 0..10))),
        other => panic!("not an acknowledgement: {other:?}"),
    }
    match rx2.recv_timeout(WAIT).expect("an answer") {
        ClientMsg::Acks { ids: got } => assert_eq!(got, ids(&second_batch)),
        other => panic!("not an acknowledgement: {other:?}"),
    }
    let (p, s) = (report(&primary), report(&standby));
    assert_eq!((p.orders, p.duplicates, s.orders), (13, 1, 13));
    assert_eq!((p.fingerprint, &p.digests), (s.fingerprint, &s.digests));
    assert!(rx.try_recv().is_err() && rx2.try_recv().is_err());
    system.shutdown();
}

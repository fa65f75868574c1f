//! The JetStream journal on a nats-server of the test's own: a persistent
//! actor recovers the same state from it (from the events alone, and from
//! a snapshot plus the tail), and fencing holds across two journal
//! instances on one stream (two processes, as far as the server can tell):
//! once a newer activation has its token, the older one's append is
//! refused by the server and nothing of it is stored; a lease revision
//! below the highest is refused.

mod common;

use std::sync::mpsc;
use std::sync::Arc;

use common::{get, props, runtime, spawn, Cmd, Report, WAIT};
use troupe::ActorSystem;
use troupe_cluster::persistence::{JetStreamJournal, Journal, PersistenceError};
use troupe_remote::testing::NatsServer;
use troupe_testkit::TestProbe;

/// A journal of entity type `kind` on `server`, opened on `runtime`.
fn journal(runtime: &tokio::runtime::Runtime, server: &NatsServer, kind: &str) -> Arc<dyn Journal> {
    runtime.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        Arc::new(JetStreamJournal::open(client, kind, 1).await.unwrap()) as Arc<dyn Journal>
    })
}

fn system() -> ActorSystem {
    ActorSystem::builder().threads(2).build().unwrap()
}

/// Calls a callback-style journal operation and waits for its answer.
fn wait<T: Send + 'static>(
    call: impl FnOnce(Box<dyn FnOnce(Result<T, PersistenceError>) + Send>),
) -> Result<T, PersistenceError> {
    let (tx, rx) = mpsc::channel();
    call(Box::new(move |r| {
        let _ = tx.send(r);
    }));
    rx.recv_timeout(WAIT).expect("the journal did not answer")
}

#[test]
fn a_persistent_actor_recovers_the_same_state_from_events_and_from_a_snapshot() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = journal(&rt, &server, "ledgers");
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let probe = reports.actor_ref();
    // An id with characters a subject cannot hold.
    let (ledger, actor) = spawn(
        &system,
        props("ledger.1 a/b", &journal, Some(probe.clone()), None),
    );
    for n in 1..=20u64 {
        let len = ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
        assert_eq!(len, n as usize);
    }
    let all = ledger
        .ask(|r| Cmd::AddAll(vec![21, 22, 23], r), WAIT)
        .wait()
        .unwrap();
    assert_eq!(all, 23);
    system.stop(&actor);

    // From the events alone.
    let (again, actor) = spawn(
        &system,
        props("ledger.1 a/b", &journal, Some(probe.clone()), None),
    );
    assert_eq!(get(&again), (1..=23).collect::<Vec<u64>>());
    // A snapshot at 23, then a tail of 7.
    assert_eq!(again.ask(Cmd::Snapshot, WAIT).wait().unwrap(), 23);
    for n in 24..=30u64 {
        again.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
    }
    system.stop(&actor);
    let (third, _) = spawn(&system, props("ledger.1 a/b", &journal, Some(probe), None));
    assert_eq!(get(&third), (1..=30).collect::<Vec<u64>>());
    // Three recoveries: from nothing, from 23 events, from the snapshot at
    // 23 and a tail of 7.
    let recoveries: Vec<(u64, usize)> = (0..3)
        .map(|_| match reports.expect_msg(WAIT) {
            Report::Recovered { seq_nr, values } => (seq_nr, values),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(recoveries, vec![(0, 0), (23, 23), (30, 30)]);
    // The snapshot is stored (its write is acknowledged after the reply
    // to `Snapshot`, so look until it is there), and a replay from it
    // hands out the tail alone.
    let id = "ledger.1 a/b";
    let snapshot = loop {
        if let Some(s) = journal.load_snapshot(id).unwrap() {
            break s;
        }
    };
    assert_eq!(snapshot.seq_nr, 23);
    let mut tail = Vec::new();
    // (Reads block on the journal's runtime: this thread is outside it,
    // as an actor's thread is.)
    journal
        .replay(id, snapshot.seq_nr, snapshot.position, &mut |seq, _| {
            tail.push(seq);
            Ok(())
        })
        .unwrap();
    assert_eq!(tail, (24..=30).collect::<Vec<u64>>());
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn a_newer_activation_in_another_journal_fences_the_older_one() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    // Two journal instances on one stream: two nodes, to the server.
    let here = journal(&rt, &server, "accounts");
    let there = journal(&rt, &server, "accounts");
    let id = "account-7";

    let old = wait(|done| here.acquire(id, None, done)).unwrap();
    let at = wait(|done| here.append(id, old, 1, vec![b"one".to_vec()], done)).unwrap();
    assert!(at > 0);

    let new = wait(|done| there.acquire(id, None, done)).unwrap();
    assert!(new > old, "{new} after {old}");
    // The old activation writes on: the server refuses it.
    let refused = wait(|done| here.append(id, old, 2, vec![b"two".to_vec()], done));
    match refused {
        Err(PersistenceError::Fenced { token, highest, .. }) => {
            assert_eq!((token, highest), (old, new));
        }
        other => panic!("expected Fenced, got {other:?}"),
    }
    // The new one continues after what the old one wrote before.
    wait(|done| there.append(id, new, 2, vec![b"deux".to_vec()], done)).unwrap();
    let mut events = Vec::new();
    let replayed = there
        .replay(id, 0, 0, &mut |seq, bytes| {
            events.push((seq, bytes.to_vec()));
            Ok(())
        })
        .unwrap();
    assert_eq!(
        events,
        vec![(1, b"one".to_vec()), (2, b"deux".to_vec())],
        "the refused append left nothing"
    );
    assert_eq!(replayed.seq_nr, 2);

    // A lease revision below the highest token is refused.
    match wait(|done| here.acquire(id, Some(old), done)) {
        Err(PersistenceError::Fenced { highest, .. }) => assert_eq!(highest, new),
        other => panic!("expected Fenced, got {other:?}"),
    }
    // One above it is taken, and fences `there`.
    let lease = wait(|done| here.acquire(id, Some(new + 10), done)).unwrap();
    assert_eq!(lease, new + 10);
    assert!(matches!(
        wait(|done| there.append(id, new, 3, vec![b"trois".to_vec()], done)),
        Err(PersistenceError::Fenced { .. })
    ));
}

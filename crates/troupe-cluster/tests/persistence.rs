//! Persistent actors end to end on the local journal: recovery, snapshots,
//! ordering of commands that wait, fencing, a torn journal tail, failures.

mod common;

use std::fs::{self, OpenOptions};
use std::path::PathBuf;

use common::*;
use troupe_cluster::persistence::LocalJournal;
use troupe_testkit::TestProbe;

#[test]
fn persist_then_restart_recovers_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let (ledger, _) = spawn(&system, props("l-1", &journal, None, None));
    for n in 1..=20 {
        assert_eq!(
            ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap(),
            n as usize
        );
    }
    assert_eq!(
        ledger
            .ask(|r| Cmd::AddAll(vec![21, 22], r), WAIT)
            .wait()
            .unwrap(),
        22
    );
    stop(system);
    drop(journal);

    // A new journal over the same directory, in a new system.
    let journal = common::journal(dir.path());
    let system = common::system();
    let (ledger, _) = spawn(&system, props("l-1", &journal, None, None));
    assert_eq!(get(&ledger), (1..=22).collect::<Vec<_>>());
    // Another id in the same journal starts empty.
    let (other, _) = spawn(&system, props("l-2", &journal, None, None));
    assert!(get(&other).is_empty());
    stop(system);
}

#[test]
fn snapshot_plus_tail_equals_full_replay() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let (ledger, _) = spawn(&system, props("snap", &journal, None, Some(7)));
    for n in 1..=50 {
        ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
    }
    stop(system);
    drop(journal); // writes the pending snapshots
    let snapshot = dir.path().join("snapshots/snap.snap");
    assert!(snapshot.exists());

    let recover = || {
        let journal = common::journal(dir.path());
        let system = common::system();
        let probe = TestProbe::<Report>::new(&system, "reports");
        let (ledger, _) = spawn(
            &system,
            props("snap", &journal, Some(probe.actor_ref()), None),
        );
        let state = get(&ledger);
        let Report::Recovered { seq_nr, .. } = probe.expect_msg(WAIT) else {
            panic!("expected the recovery report")
        };
        assert_eq!(seq_nr, 50);
        stop(system);
        state
    };
    let with_snapshot = recover();
    fs::remove_file(&snapshot).unwrap();
    let full_replay = recover();
    assert_eq!(with_snapshot, full_replay);
    assert_eq!(full_replay, (1..=50).collect::<Vec<_>>());
}

#[test]
fn on_demand_snapshot_is_written_and_used() {
    let dir = tempfile::tempdir().unwrap();
    let local = std::sync::Arc::new(LocalJournal::open(dir.path()).unwrap());
    let journal: std::sync::Arc<dyn troupe_cluster::persistence::Journal> = local.clone();
    let system = system();
    let (ledger, _) = spawn(&system, props("od", &journal, None, None));
    for n in 1..=5 {
        ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
    }
    assert_eq!(ledger.ask(Cmd::Snapshot, WAIT).wait().unwrap(), 5);
    local.flush_snapshots();
    assert!(dir.path().join("snapshots/od.snap").exists());
    ledger.ask(|r| Cmd::AddAsk(6, r), WAIT).wait().unwrap();
    stop(system);
    let system = common::system();
    let (ledger, _) = spawn(&system, props("od", &journal, None, None));
    assert_eq!(get(&ledger), (1..=6).collect::<Vec<_>>());
    stop(system);
}

#[test]
fn commands_during_recovery_and_persisting_are_handled_after_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    // Some history, so recovery has work to do while commands arrive.
    let (ledger, _) = spawn(&system, props("order", &journal, None, None));
    ledger
        .ask(|r| Cmd::AddAll((1..=1000).collect(), r), WAIT)
        .wait()
        .unwrap();
    stop(system);

    let system = common::system();
    let replies = TestProbe::<(u64, usize)>::new(&system, "replies");
    let (ledger, _) = spawn(&system, props("order", &journal, None, None));
    // Told at once: the first arrive during recovery, the rest while
    // earlier appends wait for their fsync.
    for n in 1001..=1200 {
        ledger.tell(Cmd::Add(n, replies.actor_ref()));
    }
    let got = replies.receive_n(200, WAIT);
    let expected: Vec<_> = (1001..=1200).map(|n| (n, n as usize)).collect();
    assert_eq!(got, expected);
    assert_eq!(journal.counters().stash_dropped(), 0);
    stop(system);
}

#[test]
fn a_second_activation_fences_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let local = std::sync::Arc::new(LocalJournal::open(dir.path()).unwrap());
    let journal: std::sync::Arc<dyn troupe_cluster::persistence::Journal> = local.clone();
    let system = system();
    let reports_a = TestProbe::<Report>::new(&system, "a");
    let reports_b = TestProbe::<Report>::new(&system, "b");
    let (a, a_actor) = spawn(
        &system,
        props("acct", &journal, Some(reports_a.actor_ref()), None),
    );
    a.ask(|r| Cmd::AddAsk(1, r), WAIT).wait().unwrap();
    reports_a.expect_msg(WAIT); // recovered
    let (_, token_a) = local.position_of("acct");

    // B starts: its token is above A's before it replays.
    let (b, _) = spawn(
        &system,
        props("acct", &journal, Some(reports_b.actor_ref()), None),
    );
    assert_eq!(get(&b), vec![1]);
    let (_, token_b) = local.position_of("acct");
    assert!(token_b > token_a);

    // A's next append is refused; A says why and stops; its asker gets an
    // error, not a reply.
    assert!(a.ask(|r| Cmd::AddAsk(2, r), WAIT).wait().is_err());
    assert!(matches!(reports_a.expect_msg(WAIT), Report::Fenced));
    reports_a.expect_terminated(&a_actor, WAIT);
    assert_eq!(journal.counters().fenced(), 1);

    // B goes on; the log holds A's record, then only B's.
    assert_eq!(b.ask(|r| Cmd::AddAsk(3, r), WAIT).wait().unwrap(), 2);
    let records = local.records_of("acct").unwrap();
    assert_eq!(records, vec![(token_a, 1, 1), (token_b, 2, 1)]);
    assert!(records.windows(2).all(|w| w[0].0 <= w[1].0));
    stop(system);
}

#[test]
fn a_lease_revision_below_the_highest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let with_token = |token: u64, reports: Option<troupe::ActorRef<Report>>| {
        let journal = journal.clone();
        troupe::Props::new(move || {
            let ledger = Ledger {
                id: "leased".into(),
                reports: reports.clone(),
            };
            troupe_cluster::persistence::Persistent::new(ledger, journal.clone())
                .fencing_token(token)
        })
    };
    let (b, _) = spawn(&system, with_token(7, None));
    assert_eq!(b.ask(|r| Cmd::AddAsk(1, r), WAIT).wait().unwrap(), 1);
    let (_, old) = spawn(&system, with_token(6, Some(reports.actor_ref())));
    assert!(matches!(reports.expect_msg(WAIT), Report::Fenced));
    reports.expect_terminated(&old, WAIT);
    assert_eq!(get(&b), vec![1]);
    stop(system);
}

fn last_segment(dir: &std::path::Path) -> PathBuf {
    let mut segments: Vec<_> = fs::read_dir(dir.join("log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    segments.pop().unwrap()
}

#[test]
fn a_torn_tail_recovers_to_the_last_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let (ledger, _) = spawn(&system, props("torn", &journal, None, None));
    for n in 1..=10 {
        ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
    }
    stop(system);
    drop(journal);

    // A crash in the middle of writing an 11th record: half a frame at
    // the end, never acknowledged.
    let segment = last_segment(dir.path());
    let len = fs::metadata(&segment).unwrap().len();
    let bytes = fs::read(&segment).unwrap();
    let tail = bytes[bytes.len() - 20..bytes.len() - 8].to_vec();
    let mut file = OpenOptions::new().append(true).open(&segment).unwrap();
    std::io::Write::write_all(&mut file, &tail).unwrap();
    drop(file);

    let journal = common::journal(dir.path());
    let system = common::system();
    let (ledger, _) = spawn(&system, props("torn", &journal, None, None));
    assert_eq!(get(&ledger), (1..=10).collect::<Vec<_>>());
    // The log was truncated to its last whole record (taking the new
    // activation's token wrote nothing), and appends go on.
    assert_eq!(fs::metadata(&segment).unwrap().len(), len);
    assert_eq!(ledger.ask(|r| Cmd::AddAsk(11, r), WAIT).wait().unwrap(), 11);
    stop(system);
}

#[test]
fn an_event_that_does_not_serialise_is_reported_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (ledger, _) = spawn(
        &system,
        props("poison", &journal, Some(reports.actor_ref()), None),
    );
    reports.expect_msg(WAIT); // recovered
    assert!(ledger.ask(Cmd::Poison, WAIT).wait().is_err());
    let Report::Failed(why) = reports.expect_msg(WAIT) else {
        panic!("expected a failure report")
    };
    assert!(why.contains("could not be serialised"), "{why}");
    // The actor goes on.
    assert_eq!(ledger.ask(|r| Cmd::AddAsk(1, r), WAIT).wait().unwrap(), 1);
    assert_eq!(journal.counters().failures(), 1);
    stop(system);
}

#[test]
fn a_damaged_snapshot_stops_recovery_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let local = std::sync::Arc::new(LocalJournal::open(dir.path()).unwrap());
    let journal: std::sync::Arc<dyn troupe_cluster::persistence::Journal> = local.clone();
    let system = system();
    let (ledger, _) = spawn(&system, props("dmg", &journal, None, None));
    ledger.ask(|r| Cmd::AddAsk(1, r), WAIT).wait().unwrap();
    ledger.ask(Cmd::Snapshot, WAIT).wait().unwrap();
    local.flush_snapshots();
    stop(system);
    let path = dir.path().join("snapshots/dmg.snap");
    let mut bytes = fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 0xff;
    fs::write(&path, bytes).unwrap();

    let system = common::system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (_, actor) = spawn(
        &system,
        props("dmg", &journal, Some(reports.actor_ref()), None),
    );
    let Report::Failed(why) = reports.expect_msg(WAIT) else {
        panic!("expected a failure report")
    };
    assert!(why.contains("dmg.snap is damaged"), "{why}");
    reports.expect_terminated(&actor, WAIT);
    stop(system);
}

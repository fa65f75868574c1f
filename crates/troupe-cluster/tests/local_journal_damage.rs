//! The local journal's files damaged or mismatched, and writes it cannot
//! take: each is a clear error naming the file (recovery stops there, with
//! nothing served from a wrong state), or a refusal that leaves the entity
//! working. Snapshot headers altered, another entity's snapshot copied in,
//! a snapshot ahead of a log that was cut, an event over the record limit,
//! and persistence ids of every allowed length in the worst characters.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use troupe_cluster::persistence::{Journal, LocalJournal, PersistenceError, Snapshot};
use troupe_testkit::TestProbe;

/// The snapshot file of a plain id (letters, digits, `-`): `<id>.snap`.
fn snapshot_file(dir: &Path, id: &str) -> PathBuf {
    dir.join("snapshots").join(format!("{id}.snap"))
}

/// Writes `values` as `id`'s events, one command each, then a snapshot.
fn history(dir: &Path, id: &str, values: std::ops::RangeInclusive<u64>) {
    let local = Arc::new(LocalJournal::open(dir).unwrap());
    let journal: Arc<dyn Journal> = local.clone();
    let system = system();
    let (ledger, _) = spawn(&system, props(id, &journal, None, None));
    for n in values {
        ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
    }
    ledger.ask(Cmd::Snapshot, WAIT).wait().unwrap();
    local.flush_snapshots();
    stop(system);
}

/// Starts `id` on the journal in `dir` and returns the failure it reports
/// during recovery, checking that it stops; panics if it recovers.
fn recovery_failure(dir: &Path, id: &str) -> String {
    let journal = journal(dir);
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (_, actor) = spawn(
        &system,
        props(id, &journal, Some(reports.actor_ref()), None),
    );
    let why = match reports.expect_msg(WAIT) {
        Report::Failed(why) => why,
        other => panic!("{id} was expected to refuse to recover, got {other:?}"),
    };
    reports.expect_terminated(&actor, WAIT);
    stop(system);
    why
}

#[test]
fn a_snapshot_with_any_byte_altered_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), "acct", 1..=120);
    let path = snapshot_file(dir.path(), "acct");
    let good = fs::read(&path).unwrap();
    let journal = LocalJournal::open(dir.path()).unwrap();
    assert_eq!(journal.load_snapshot("acct").unwrap().unwrap().seq_nr, 120);
    // Every byte: the header (sequence number, position, token, lengths)
    // as much as the state.
    for at in 0..good.len() {
        let mut bytes = good.clone();
        bytes[at] ^= 0x01;
        fs::write(&path, &bytes).unwrap();
        match journal.load_snapshot("acct") {
            Err(PersistenceError::CorruptSnapshot { path: p, .. }) => assert_eq!(p, path),
            Err(other) => panic!("byte {at}: {other}"),
            Ok(s) => panic!(
                "byte {at} altered, and the snapshot loaded: {:?}",
                s.map(|s| (s.seq_nr, s.position, s.token))
            ),
        }
    }
    drop(journal);

    // End to end: the sequence number's low byte altered (the first field
    // after the magic), so that the state's 120 events claim to be 100.
    let mut bytes = good.clone();
    bytes[8] = 100;
    fs::write(&path, &bytes).unwrap();
    let why = recovery_failure(dir.path(), "acct");
    assert!(why.contains(&path.display().to_string()), "{why}");
    assert!(why.contains("damaged"), "{why}");
    println!("{why}");
}

#[test]
fn another_entitys_snapshot_copied_in_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), "alice", 1..=3);
    history(dir.path(), "bob", 100..=101);
    let bob = snapshot_file(dir.path(), "bob");
    fs::copy(snapshot_file(dir.path(), "alice"), &bob).unwrap();

    let why = recovery_failure(dir.path(), "bob");
    assert!(why.contains(&bob.display().to_string()), "{why}");
    assert!(why.contains("alice"), "{why}");
    println!("{why}");
    // Alice is unharmed.
    let journal = journal(dir.path());
    let system = system();
    let (alice, _) = spawn(&system, props("alice", &journal, None, None));
    assert_eq!(get(&alice), vec![1, 2, 3]);
    stop(system);
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_snapshot_ahead_of_a_cut_log_is_a_clear_error_and_deleting_it_recovers_the_log() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), "acct", 1..=100);
    // The log as it was after 100 events (a backup, or a log cut at a
    // record boundary: the log alone cannot tell).
    let backup = tempfile::tempdir().unwrap();
    copy_dir(&dir.path().join("log"), backup.path());
    history(dir.path(), "acct", 101..=120);
    fs::remove_dir_all(dir.path().join("log")).unwrap();
    copy_dir(backup.path(), &dir.path().join("log"));

    let why = recovery_failure(dir.path(), "acct");
    let path = snapshot_file(dir.path(), "acct");
    assert!(why.contains(&path.display().to_string()), "{why}");
    assert!(why.contains("120") && why.contains("100"), "{why}");
    assert!(!why.contains("second writer"), "{why}");
    println!("{why}");

    // What the error tells an operator to do, once the log cannot be
    // restored: remove the snapshot, and the entity recovers what the log
    // holds, and takes writes again.
    fs::remove_file(&path).unwrap();
    let journal = journal(dir.path());
    let system = system();
    let (ledger, _) = spawn(&system, props("acct", &journal, None, None));
    assert_eq!(get(&ledger), (1..=100).collect::<Vec<_>>());
    assert_eq!(
        ledger.ask(|r| Cmd::AddAsk(101, r), WAIT).wait().unwrap(),
        101
    );
    stop(system);
}

#[test]
fn an_event_over_the_record_limit_is_refused_and_the_entity_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (ledger, _) = spawn(
        &system,
        props("big", &journal, Some(reports.actor_ref()), None),
    );
    reports.expect_msg(WAIT); // recovered
    for n in 1..=3 {
        ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
    }
    let huge = vec![7u8; troupe_journal::MAX_RECORD + 1];
    assert!(ledger.ask(|r| Cmd::AddBlob(huge, r), WAIT).wait().is_err());
    let Report::Failed(why) = reports.expect_msg(WAIT) else {
        panic!("expected a failure report")
    };
    assert!(why.contains("big") && why.contains("bytes"), "{why}");
    println!("{why}");
    // Nothing was written, and the entity takes the next command.
    assert_eq!(ledger.ask(|r| Cmd::AddAsk(4, r), WAIT).wait().unwrap(), 4);
    stop(system);
    // A new activation recovers the four events and appends.
    let system = common::system();
    let (ledger, _) = spawn(&system, props("big", &journal, None, None));
    assert_eq!(get(&ledger), vec![1, 2, 3, 4]);
    assert_eq!(ledger.ask(|r| Cmd::AddAsk(5, r), WAIT).wait().unwrap(), 5);
    stop(system);
}

/// Takes a token for `id` and appends one event, through the trait.
fn write_one(journal: &dyn Journal, id: &str) -> u64 {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx2 = tx.clone();
    journal.acquire(id, None, Box::new(move |r| tx.send(r).unwrap()));
    let token = rx.recv().unwrap().unwrap();
    journal.append(
        id,
        token,
        1,
        vec![b"event".to_vec()],
        Box::new(move |r| tx2.send(r).unwrap()),
    );
    rx.recv().unwrap().unwrap();
    token
}

#[test]
fn ids_of_every_allowed_length_in_the_worst_characters_snapshot_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let local = Arc::new(LocalJournal::open(dir.path()).unwrap());
    let journal: Arc<dyn Journal> = local.clone();
    // Every byte of '.', '/' and 'é' (two bytes) is escaped to three
    // characters in a file name; ids that differ only past a long prefix.
    let mut ids = Vec::new();
    for len in 1..=troupe_cluster::MAX_ID_BYTES {
        ids.push(".".repeat(len));
        ids.push("/".repeat(len));
        if len % 2 == 0 {
            ids.push("é".repeat(len / 2));
        }
    }
    let long = "x".repeat(troupe_cluster::MAX_ID_BYTES - 1);
    ids.push(format!("{long}a"));
    ids.push(format!("{long}b"));
    for id in &ids {
        let token = write_one(&*journal, id);
        let (tx, rx) = std::sync::mpsc::channel();
        let snapshot = Snapshot {
            seq_nr: 1,
            position: 0,
            token,
            state: id.as_bytes().to_vec(),
        };
        journal.save_snapshot(id, snapshot, Box::new(move |r| tx.send(r).unwrap()));
        rx.recv()
            .unwrap()
            .unwrap_or_else(|e| panic!("{} bytes: {e}", id.len()));
    }
    for id in &ids {
        let loaded = journal
            .load_snapshot(id)
            .unwrap_or_else(|e| panic!("{} bytes: {e}", id.len()))
            .unwrap_or_else(|| panic!("{} bytes: no snapshot", id.len()));
        assert_eq!(loaded.state, id.as_bytes(), "{} bytes", id.len());
    }
    drop(journal);
    drop(local);

    // End to end, the longest id of dots: recovered from its snapshot.
    let id = ".".repeat(troupe_cluster::MAX_ID_BYTES);
    let dir = tempfile::tempdir().unwrap();
    let local = Arc::new(LocalJournal::open(dir.path()).unwrap());
    let journal: Arc<dyn Journal> = local.clone();
    let system = system();
    let (ledger, _) = spawn(&system, props(&id, &journal, None, None));
    ledger.ask(|r| Cmd::AddAsk(1, r), WAIT).wait().unwrap();
    assert_eq!(ledger.ask(Cmd::Snapshot, WAIT).wait().unwrap(), 1);
    local.flush_snapshots();
    stop(system);
    assert!(journal.load_snapshot(&id).unwrap().is_some());
    let system = common::system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (ledger, _) = spawn(
        &system,
        props(&id, &journal, Some(reports.actor_ref()), None),
    );
    assert_eq!(get(&ledger), vec![1]);
    assert!(matches!(
        reports.expect_msg(WAIT),
        Report::Recovered { seq_nr: 1, .. }
    ));
    stop(system);
}

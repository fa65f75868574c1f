//! A persistent entity on a full disk, for real and without root: the
//! entity runs in a child process (this test binary, started again with
//! an environment variable naming the journal) whose file-size limit
//! (`RLIMIT_FSIZE`) is below every file the journal would write, so the
//! kernel refuses each write past it as a full disk would (`EFBIG` where a
//! full disk says `ENOSPC`; the child ignores `SIGXFSZ`, inherited from the
//! `sh` that starts it, so the write fails instead of killing it). Then
//! the child raises its own limit again: the disk has room.
//!
//! What must hold: recovery needs no write, so the entity recovers and
//! answers reads on the full disk; a snapshot that cannot be written is
//! reported and the entity goes on; an append that cannot be written
//! reaches the asker and `failed` as a typed error and stops the entity
//! (its next activation recovers again, still on the full disk); once
//! there is room the same journal takes appends again, and what it holds
//! is exactly the acknowledged events.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use common::*;
use troupe_cluster::persistence::{Journal, LocalJournal, PersistenceError};
use troupe_testkit::TestProbe;

/// Set in the child: the journal's directory.
const CHILD: &str = "TROUPE_PERSISTENCE_FULL_DISK_CHILD";

/// The file-size limit on the full disk: below a segment's header and
/// below any snapshot, so no write to any file of the journal fits.
const FULL: u64 = 16;

fn wait_report(reports: &TestProbe<Report>) -> Report {
    reports.expect_msg(WAIT)
}

/// The child: everything on the full disk, then with room again.
fn child(dir: &Path) {
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::FSIZE).unwrap();
    rlimit::setrlimit(rlimit::Resource::FSIZE, FULL, hard).unwrap();
    let local = Arc::new(LocalJournal::open(dir).unwrap());
    let journal: Arc<dyn Journal> = local.clone();
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");

    // Recovery on the full disk: nothing to write, so it recovers.
    let (ledger, actor) = spawn(
        &system,
        props("acct", &journal, Some(reports.actor_ref()), None),
    );
    assert_eq!(get(&ledger), vec![1, 2, 3, 4, 5], "recovery on a full disk");
    assert!(matches!(
        wait_report(&reports),
        Report::Recovered { seq_nr: 5, .. }
    ));
    println!("recovered on the full disk");

    // A snapshot that cannot be written is reported; the entity goes on.
    ledger.ask(Cmd::Snapshot, WAIT).wait().unwrap();
    local.flush_snapshots();
    let Report::Failed(why) = wait_report(&reports) else {
        panic!("expected the snapshot's failure")
    };
    assert!(
        why.contains("snapshot") && why.contains("File too large"),
        "{why}"
    );
    println!("snapshot refused: {why}");
    assert_eq!(
        get(&ledger),
        vec![1, 2, 3, 4, 5],
        "after the failed snapshot"
    );

    // An append that cannot be written: its asker gets the journal's
    // error, `failed` too, and the entity stops (a failure, not a
    // rejection: the journal could not write).
    let answer = ledger.ask(|r| Cmd::AddResult(6, r), WAIT).wait().unwrap();
    let Err(error @ PersistenceError::Journal(_)) = answer else {
        panic!("expected the journal's error, got {answer:?}")
    };
    assert!(!error.is_rejection());
    assert!(error.to_string().contains("File too large"), "{error}");
    println!("append refused, to the asker: {error}");
    let Report::Failed(why) = wait_report(&reports) else {
        panic!("expected the append's failure")
    };
    assert_eq!(why, error.to_string());
    reports.expect_terminated(&actor, WAIT);

    // Its next activation recovers, still on the full disk; this one
    // restarts through its supervisor when a write fails.
    let (ledger, _) = spawn(
        &system,
        restarting_props("acct", &journal, Some(reports.actor_ref())),
    );
    assert_eq!(
        get(&ledger),
        vec![1, 2, 3, 4, 5],
        "recovery after the failure"
    );
    assert!(matches!(
        wait_report(&reports),
        Report::Recovered { seq_nr: 5, .. }
    ));
    println!("recovered again on the full disk");
    let answer = ledger.ask(|r| Cmd::AddResult(6, r), WAIT).wait().unwrap();
    assert!(
        matches!(answer, Err(PersistenceError::Journal(_))),
        "{answer:?}"
    );
    assert!(matches!(wait_report(&reports), Report::Failed(_)));
    // Restarted, not stopped: the same ref recovers and answers.
    assert!(matches!(
        wait_report(&reports),
        Report::Recovered { seq_nr: 5, .. }
    ));
    assert_eq!(get(&ledger), vec![1, 2, 3, 4, 5], "after the restart");
    println!("restarted and recovered on the full disk");

    // Room again: the same journal, the same entity, takes the append.
    rlimit::setrlimit(rlimit::Resource::FSIZE, hard, hard).unwrap();
    let answer = ledger.ask(|r| Cmd::AddResult(6, r), WAIT).wait().unwrap();
    assert_eq!(answer.unwrap(), 6);
    println!("appended once the disk had room");
    stop(system);
}

#[test]
fn a_full_disk_fails_writes_to_their_askers_and_leaves_recovery_and_reads_working() {
    if let Ok(dir) = std::env::var(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let journal = journal(dir.path());
        let system = system();
        let (ledger, _) = spawn(&system, props("acct", &journal, None, None));
        for n in 1..=5 {
            ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
        }
        stop(system);
    }
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_full_disk_fails_writes_to_their_askers_and_leaves_recovery_and_reads_working",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "the child failed:\n{stderr}");
    // Exactly the acknowledged events, and the journal is sound.
    let mut values = Vec::new();
    LocalJournal::read_events(dir.path(), "acct", &mut |seq_nr, _| {
        values.push(seq_nr);
        Ok(())
    })
    .unwrap();
    assert_eq!(values, vec![1, 2, 3, 4, 5, 6]);
    let journal = journal(dir.path());
    let system = system();
    let (ledger, _) = spawn(&system, props("acct", &journal, None, None));
    assert_eq!(get(&ledger), vec![1, 2, 3, 4, 5, 6]);
    stop(system);
}

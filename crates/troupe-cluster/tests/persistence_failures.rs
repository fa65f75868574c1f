//! Persistence failures reach the asker as a typed error, not as a dropped
//! reply: a rejected command (an event that does not serialise or is over
//! the journal's limit) is answered with the error and the actor goes on;
//! a failed one (here: fenced by a newer activation) is answered with the
//! error and the actor stops. (A full disk is in `persistence_full_disk.rs`.)

mod common;

use common::*;
use troupe_cluster::persistence::PersistenceError;
use troupe_testkit::TestProbe;

#[test]
fn a_rejected_command_reaches_its_asker_as_a_typed_error_and_the_actor_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (ledger, _) = spawn(
        &system,
        props("rejected", &journal, Some(reports.actor_ref()), None),
    );
    reports.expect_msg(WAIT); // recovered
    assert_eq!(
        ledger
            .ask(|r| Cmd::AddResult(1, r), WAIT)
            .wait()
            .unwrap()
            .unwrap(),
        1
    );

    let huge = vec![7u8; troupe_journal::MAX_RECORD];
    match ledger
        .ask(|r| Cmd::BlobResult(huge, r), WAIT)
        .wait()
        .unwrap()
    {
        Err(PersistenceError::TooLarge {
            persistence_id,
            what,
            size,
            limit,
        }) => {
            assert_eq!(
                (persistence_id.as_str(), what),
                ("rejected", "event record")
            );
            assert_eq!(limit, troupe_journal::MAX_RECORD);
            assert!(size > limit, "{size}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(matches!(reports.expect_msg(WAIT), Report::Failed(_)));

    match ledger.ask(Cmd::PoisonResult, WAIT).wait().unwrap() {
        Err(PersistenceError::Serialize { what: "event", .. }) => {}
        other => panic!("expected Serialize, got {other:?}"),
    }
    assert!(matches!(reports.expect_msg(WAIT), Report::Failed(_)));

    // Rejections: nothing written, and the actor goes on.
    assert_eq!(
        ledger
            .ask(|r| Cmd::AddResult(2, r), WAIT)
            .wait()
            .unwrap()
            .unwrap(),
        2
    );
    assert_eq!(get(&ledger), vec![1, 2]);
    assert_eq!(journal.counters().failures(), 2);
    stop(system);
}

#[test]
fn a_fenced_activation_answers_its_asker_with_the_error_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal(dir.path());
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let (a, a_actor) = spawn(
        &system,
        props("fenced", &journal, Some(reports.actor_ref()), None),
    );
    assert_eq!(
        a.ask(|r| Cmd::AddResult(1, r), WAIT)
            .wait()
            .unwrap()
            .unwrap(),
        1
    );
    reports.expect_msg(WAIT); // recovered
    let (b, _) = spawn(&system, props("fenced", &journal, None, None));
    assert_eq!(get(&b), vec![1]);

    match a.ask(|r| Cmd::AddResult(2, r), WAIT).wait().unwrap() {
        Err(PersistenceError::Fenced {
            persistence_id,
            token,
            highest,
        }) => {
            assert_eq!(persistence_id, "fenced");
            assert!(token < highest, "{token} {highest}");
        }
        other => panic!("expected Fenced, got {other:?}"),
    }
    assert!(matches!(reports.expect_msg(WAIT), Report::Fenced));
    reports.expect_terminated(&a_actor, WAIT);
    assert_eq!(
        b.ask(|r| Cmd::AddResult(2, r), WAIT)
            .wait()
            .unwrap()
            .unwrap(),
        2
    );
    stop(system);
}

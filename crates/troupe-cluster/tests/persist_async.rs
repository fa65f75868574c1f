//! `Effect::persist_async`: the commands after an append are handled while
//! it is in flight (seeing the state without it), its follow-ups run in
//! the order the effects were made once acknowledged, a plain `persist`
//! behind it waits for all of them, a failure fails every append in
//! flight, and everything acknowledged is recovered, in order, on both
//! journals (on JetStream, appends queued behind each other go out as
//! one record, across which a snapshot may fall).

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use troupe::Ask;
use troupe_cluster::persistence::{
    Done, EachEvent, JetStreamJournal, Journal, PersistenceError, Replayed, Snapshot,
};
use troupe_remote::testing::NatsServer;
use troupe_testkit::TestProbe;

type Answer = Ask<Result<usize, PersistenceError>>;

/// Answers held back, to hand over later in order.
type HeldAnswers = Arc<Mutex<Vec<Box<dyn FnOnce() + Send>>>>;

/// A journal whose appends' answers are held until released, or failed.
struct Held {
    inner: Arc<dyn Journal>,
    holding: Mutex<bool>,
    held: HeldAnswers,
    fail_next: Mutex<bool>,
    reject_next: Mutex<bool>,
}

impl Held {
    fn new(inner: Arc<dyn Journal>) -> Arc<Held> {
        Arc::new(Held {
            inner,
            holding: Mutex::new(true),
            held: Arc::default(),
            fail_next: Mutex::new(false),
            reject_next: Mutex::new(false),
        })
    }

    /// Hands over the answers held so far, in order, and stops holding.
    fn release(&self) {
        *self.holding.lock().unwrap() = false;
        let held: Vec<_> = std::mem::take(&mut *self.held.lock().unwrap());
        for answer in held {
            answer();
        }
    }
}

impl Journal for Held {
    fn acquire(&self, id: &str, token: Option<u64>, done: Done<u64>) {
        self.inner.acquire(id, token, done)
    }

    fn append(&self, id: &str, token: u64, first: u64, events: Vec<Vec<u8>>, done: Done<u64>) {
        if std::mem::take(&mut *self.reject_next.lock().unwrap()) {
            // Refused at once, as a journal does with an event over its
            // limit, while the appends ahead of it wait.
            return done(Err(PersistenceError::TooLarge {
                persistence_id: id.to_string(),
                what: "event record",
                size: 2,
                limit: 1,
            }));
        }
        if std::mem::take(&mut *self.fail_next.lock().unwrap()) {
            let error = PersistenceError::JetStream {
                op: "append",
                reason: "a failure the test made".into(),
            };
            let held = self.held.clone();
            held.lock()
                .unwrap()
                .push(Box::new(move || done(Err(error))));
            return;
        }
        if !*self.holding.lock().unwrap() {
            return self.inner.append(id, token, first, events, done);
        }
        let held = self.held.clone();
        self.inner.append(
            id,
            token,
            first,
            events,
            Box::new(move |result| {
                held.lock().unwrap().push(Box::new(move || done(result)));
            }),
        )
    }

    fn replay(
        &self,
        id: &str,
        after: u64,
        position: u64,
        each: &mut EachEvent<'_>,
    ) -> Result<Replayed, PersistenceError> {
        self.inner.replay(id, after, position, each)
    }

    fn load_snapshot(&self, id: &str) -> Result<Option<Snapshot>, PersistenceError> {
        self.inner.load_snapshot(id)
    }

    fn save_snapshot(&self, id: &str, snapshot: Snapshot, done: Done<u64>) {
        self.inner.save_snapshot(id, snapshot, done)
    }

    fn counters(&self) -> &troupe_cluster::persistence::Counters {
        self.inner.counters()
    }
}

/// Waits until `journal` holds `n` answers.
fn until_held(journal: &Held, n: usize) {
    let deadline = std::time::Instant::now() + WAIT;
    while journal.held.lock().unwrap().len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the appends did not reach the journal"
        );
        std::thread::yield_now();
    }
}

#[test]
fn commands_are_handled_while_appends_are_in_flight_and_a_plain_persist_waits_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let held = Held::new(journal(dir.path()));
    let system = system();
    let journal_ref = held.clone() as Arc<dyn Journal>;
    let (ledger, _) = spawn(&system, props("a-1", &journal_ref, None, None));
    // Recovered (an empty ledger) before anything is held.
    assert!(get(&ledger).is_empty());
    let first = ledger.ask(|r| Cmd::AddAsync(1, r), WAIT);
    let second = ledger.ask(|r| Cmd::AddAsync(2, r), WAIT);
    until_held(&held, 2);
    // Both appends are in flight and unanswered; the ledger still takes
    // commands, and its state holds only acknowledged events.
    assert!(get(&ledger).is_empty());
    // A plain persist behind them: what follows it waits for all three.
    let third = ledger.ask(|r| Cmd::AddAsk(3, r), WAIT);
    until_held(&held, 3);
    let after = ledger.ask(Cmd::Get, WAIT);
    held.release();
    assert_eq!(first.wait().unwrap().unwrap(), 1);
    assert_eq!(second.wait().unwrap().unwrap(), 2);
    assert_eq!(third.wait().unwrap(), 3);
    assert_eq!(after.wait().unwrap(), vec![1, 2, 3]);
    stop(system);
}

#[test]
fn a_failed_append_fails_every_append_in_flight_behind_it_and_stops_the_actor() {
    let dir = tempfile::tempdir().unwrap();
    let held = Held::new(journal(dir.path()));
    let system = system();
    let reports = TestProbe::<Report>::new(&system, "reports");
    let journal_ref = held.clone() as Arc<dyn Journal>;
    let (ledger, actor) = spawn(
        &system,
        props("a-2", &journal_ref, Some(reports.actor_ref()), None),
    );
    assert!(get(&ledger).is_empty());
    assert!(matches!(reports.expect_msg(WAIT), Report::Recovered { .. }));
    let ok = ledger.ask(|r| Cmd::AddAsync(1, r), WAIT);
    until_held(&held, 1);
    *held.fail_next.lock().unwrap() = true;
    let failed = ledger.ask(|r| Cmd::AddAsync(2, r), WAIT);
    until_held(&held, 2);
    let behind = ledger.ask(|r| Cmd::AddAsync(3, r), WAIT);
    until_held(&held, 3);
    held.release();
    assert_eq!(ok.wait().unwrap().unwrap(), 1);
    for answer in [failed, behind] {
        match answer.wait().unwrap() {
            Err(PersistenceError::JetStream { reason, .. }) => {
                assert_eq!(reason, "a failure the test made")
            }
            other => panic!("expected the failure, got {other:?}"),
        }
    }
    assert!(matches!(reports.expect_msg(WAIT), Report::Failed(_)));
    reports.expect_terminated(&actor, WAIT);
    stop(system);
    drop((held, journal_ref));
    // What was acknowledged is there; the append behind the failure may
    // or may not have been stored (the journal refuses it: its sequence
    // number follows an event that was never written).
    let journal = common::journal(dir.path());
    let system = common::system();
    let (ledger, _) = spawn(&system, props("a-2", &journal, None, None));
    assert_eq!(get(&ledger), vec![1]);
    stop(system);
}

#[test]
fn a_rejection_answered_before_the_appends_ahead_of_it_is_taken_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let held = Held::new(journal(dir.path()));
    let system = system();
    let journal_ref = held.clone() as Arc<dyn Journal>;
    let (ledger, _) = spawn(&system, props("a-3", &journal_ref, None, None));
    assert!(get(&ledger).is_empty());
    let first = ledger.ask(|r| Cmd::AddAsync(1, r), WAIT);
    until_held(&held, 1);
    *held.reject_next.lock().unwrap() = true;
    // Answered (refused) before the first: the ledger takes the answers
    // in order, so the first is applied, then this one is a rejection
    // with nothing behind it, and the ledger goes on.
    let rejected = ledger.ask(|r| Cmd::AddAsync(2, r), WAIT);
    let before = ledger.ask(Cmd::Get, WAIT);
    assert!(
        before.wait().unwrap().is_empty(),
        "the rejection overtook the first append"
    );
    held.release();
    assert_eq!(first.wait().unwrap().unwrap(), 1);
    assert!(matches!(
        rejected.wait().unwrap(),
        Err(PersistenceError::TooLarge { .. })
    ));
    assert_eq!(
        ledger
            .ask(|r| Cmd::AddAsync(3, r), WAIT)
            .wait()
            .unwrap()
            .unwrap(),
        2
    );
    assert_eq!(get(&ledger), vec![1, 3]);
    stop(system);
}

/// `n` commands asked at once, each answered with the ledger's length
/// after it: 1..=n, in order.
fn ask_all(ledger: &troupe::ActorRef<Cmd>, n: u64) {
    let answers: Vec<Answer> = (1..=n)
        .map(|v| ledger.ask(|r| Cmd::AddAsync(v, r), WAIT))
        .collect();
    let lengths: Vec<usize> = answers
        .into_iter()
        .map(|a| a.wait().unwrap().unwrap())
        .collect();
    assert_eq!(lengths, (1..=n as usize).collect::<Vec<_>>());
}

fn recovers_everything(journal: impl Fn() -> Arc<dyn Journal>) {
    const N: u64 = 500;
    let system = system();
    let (ledger, _) = spawn(&system, props("many", &journal(), None, Some(37)));
    ask_all(&ledger, N);
    stop(system);
    // Recovered from the last snapshot and the records after it; a record
    // may hold events on both sides of the snapshot.
    let system = common::system();
    let (ledger, _) = spawn(&system, props("many", &journal(), None, Some(37)));
    assert_eq!(get(&ledger), (1..=N).collect::<Vec<_>>());
    stop(system);
}

#[test]
fn everything_acknowledged_is_recovered_in_order_on_the_local_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let opened: Mutex<Option<Arc<dyn Journal>>> = Mutex::new(None);
    recovers_everything(|| {
        // One journal per directory at a time: the second activation
        // reuses it.
        opened
            .lock()
            .unwrap()
            .get_or_insert_with(|| journal(&path))
            .clone()
    });
}

#[test]
fn everything_acknowledged_is_recovered_in_order_on_jetstream() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // A journal (a node) per activation, on one stream.
    recovers_everything(|| {
        rt.block_on(async {
            let client = async_nats::connect(server.url()).await.unwrap();
            Arc::new(
                JetStreamJournal::open(client, "pipelined", 1)
                    .await
                    .unwrap(),
            ) as Arc<dyn Journal>
        })
    });
}

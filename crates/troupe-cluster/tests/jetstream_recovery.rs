//! Recovery on the JetStream journal at the server's default limits: a
//! burst of 10,000 activations of distinct ids all recover, and leave no
//! JetStream consumer behind (the server allows 1,000 per stream by
//! default, so a journal that made one per recovery refused the rest);
//! each activation wrote exactly one fence, so a recovery never loops
//! writing fences. And a whole restart of 1,000 entities (a new journal on
//! a new connection, as a restarted node) recovers them all; its time is
//! printed for the benchmark notes, never asserted. A history longer than
//! one read's batch replays whole, and from a position on; and when no
//! replica serves direct gets, recovery reads from the stream's leader.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{props, runtime, Cmd, Report};
use troupe::{ActorRef, ActorSystem};
use troupe_cluster::persistence::{self, JetStreamJournal, Journal, PersistenceError};
use troupe_remote::testing::NatsServer;
use troupe_testkit::TestProbe;

/// How long the whole burst may take before the test gives up (a bound on
/// a hang, not a speed assertion).
const BURST_DEADLINE: Duration = Duration::from_secs(300);

/// A journal of `kind` on its own connection to `server` (a node's).
fn open(rt: &tokio::runtime::Runtime, server: &NatsServer, kind: &str) -> Arc<dyn Journal> {
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        Arc::new(JetStreamJournal::open(client, kind, 1).await.unwrap()) as Arc<dyn Journal>
    })
}

/// The stream's consumer and message counts, read from the server.
fn stream_state(rt: &tokio::runtime::Runtime, server: &NatsServer, kind: &str) -> (usize, u64) {
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut stream = js
            .get_stream(format!("troupe-journal-{kind}"))
            .await
            .unwrap();
        let info = stream.info().await.unwrap();
        (info.state.consumer_count, info.state.messages)
    })
}

/// Writes one event, the value `n`, to each of `ids` through the journal
/// (an activation each: a fence, then the event), all in flight at once.
fn seed(journal: &Arc<dyn Journal>, ids: &[String]) {
    let (tx, rx) = mpsc::channel::<Result<(), PersistenceError>>();
    for (n, id) in ids.iter().enumerate() {
        let (journal2, id2, tx) = (journal.clone(), id.clone(), tx.clone());
        journal.acquire(
            id,
            None,
            Box::new(move |token| match token {
                Ok(token) => {
                    let event = postcard::to_allocvec(&common::Event::Added(n as u64)).unwrap();
                    let tx2 = tx.clone();
                    journal2.append(
                        &id2,
                        token,
                        1,
                        vec![event],
                        Box::new(move |r| {
                            let _ = tx2.send(r.map(|_| ()));
                        }),
                    );
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }),
        );
    }
    for _ in ids {
        rx.recv_timeout(BURST_DEADLINE)
            .expect("the journal did not answer a seeding write")
            .unwrap();
    }
}

/// Activates every id at once and waits for each one's recovery report:
/// how many recovered with their one event, and the failures seen.
fn activate_all(
    system: &ActorSystem,
    journal: &Arc<dyn Journal>,
    ids: &[String],
) -> (usize, Vec<String>, Vec<ActorRef<persistence::Msg<Cmd>>>) {
    let reports = TestProbe::<Report>::new(system, "reports");
    let actors: Vec<_> = ids
        .iter()
        .map(|id| {
            system
                .spawn(props(id, journal, Some(reports.actor_ref()), None))
                .unwrap()
        })
        .collect();
    let (mut recovered, mut failures) = (0, Vec::new());
    for _ in ids {
        match reports.expect_msg(BURST_DEADLINE) {
            Report::Recovered {
                seq_nr: 1,
                values: 1,
            } => recovered += 1,
            other => failures.push(format!("{other:?}")),
        }
    }
    (recovered, failures, actors)
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

#[test]
fn a_burst_of_10000_activations_all_recover_and_leave_no_consumer() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server, "seats");
    let ids = ids("seat", 10_000);
    seed(&journal, &ids);

    let system = ActorSystem::builder().threads(4).build().unwrap();
    let (recovered, failures, _actors) = activate_all(&system, &journal, &ids);
    let shown: Vec<_> = failures.iter().take(3).collect();
    assert!(
        failures.is_empty(),
        "{} of {} recoveries failed, e.g. {shown:?}",
        failures.len(),
        ids.len()
    );
    assert_eq!(recovered, ids.len());

    let (consumers, messages) = stream_state(&rt, &server, "seats");
    assert_eq!(consumers, 0, "recoveries left consumers on the stream");
    // Per id: the seeding activation's fence and event, the burst's fence.
    // Nothing else: no recovery wrote a fence twice.
    assert_eq!(messages, 3 * ids.len() as u64);
    troupe_testkit::terminate(&system, BURST_DEADLINE);
}

#[test]
fn a_restart_of_1000_entities_recovers_them_all() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let ids = ids("show", 1_000);
    {
        let journal = open(&rt, &server, "shows");
        seed(&journal, &ids);
    }
    // The restarted node: a new connection, a new journal, every entity
    // activated at once (as a region does when its shards come back).
    let system = ActorSystem::builder().threads(4).build().unwrap();
    let started = Instant::now();
    let journal = open(&rt, &server, "shows");
    let (recovered, failures, actors) = activate_all(&system, &journal, &ids);
    let took = started.elapsed();
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(recovered, ids.len());
    // Each answers with the event it recovered.
    for (n, actor) in actors.iter().enumerate() {
        let ledger = persistence::command_ref(&system, actor);
        assert_eq!(common::get(&ledger), vec![n as u64]);
    }
    eprintln!(
        "a restart of {} entities on the JetStream journal recovered them all in {took:?}",
        ids.len()
    );
    troupe_testkit::terminate(&system, BURST_DEADLINE);
}

#[test]
fn a_history_longer_than_a_batch_replays_whole_and_from_a_position() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server, "diaries");
    let id = "diary-1";
    let wait = |call: &dyn Fn(persistence::Done<u64>)| {
        let (tx, rx) = mpsc::channel();
        call(Box::new(move |r| {
            let _ = tx.send(r);
        }));
        rx.recv_timeout(common::WAIT).unwrap().unwrap()
    };
    let token = wait(&|done| journal.acquire(id, None, done));
    // 2,500 records of two events: three batches of the journal's reads.
    let mut positions = Vec::new();
    for r in 0..2_500u64 {
        let events = vec![
            (2 * r + 1).to_be_bytes().to_vec(),
            (2 * r + 2).to_be_bytes().to_vec(),
        ];
        positions.push(wait(&|done| {
            journal.append(id, token, 2 * r + 1, events.clone(), done)
        }));
    }
    let replay = |after: u64, position: u64| {
        let mut seen = Vec::new();
        let replayed = journal
            .replay(id, after, position, &mut |seq, bytes| {
                assert_eq!(bytes, seq.to_be_bytes());
                seen.push(seq);
                Ok(())
            })
            .unwrap();
        (seen, replayed)
    };
    let (all, replayed) = replay(0, 0);
    assert_eq!(all, (1..=5_000).collect::<Vec<u64>>());
    assert_eq!((replayed.seq_nr, replayed.events), (5_000, 5_000));
    assert_eq!(replayed.position, positions[2_499]);
    // From a snapshot at event 3,000 (the end of record 1,500).
    let (tail, _) = replay(3_000, positions[1_499] + 1);
    assert_eq!(tail, (3_001..=5_000).collect::<Vec<u64>>());
    // A new activation: its token's reads made ahead stop short of a
    // history this long, and the replay reads the rest itself.
    let newer = wait(&|done| journal.acquire(id, None, done));
    assert!(newer > token);
    let (again, replayed) = replay(0, 0);
    assert_eq!(again, (1..=5_000).collect::<Vec<u64>>());
    assert_eq!(replayed.seq_nr, 5_000);
    assert_eq!(stream_state(&rt, &server, "diaries").0, 0);
}

#[test]
fn recovery_reads_from_the_leader_when_no_replica_serves_direct_gets() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server, "notes");
    let ids = ids("note", 3);
    seed(&journal, &ids);
    // Direct gets off: nothing answers them (as for a moment after a
    // restart, while replicas catch up).
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut stream = js.get_stream("troupe-journal-notes").await.unwrap();
        let mut config = stream.info().await.unwrap().config.clone();
        config.allow_direct = false;
        js.update_stream(config).await.unwrap();
    });
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (recovered, failures, _actors) = activate_all(&system, &journal, &ids);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(recovered, ids.len());
    troupe_testkit::terminate(&system, BURST_DEADLINE);
}

//! The JetStream journal under the server's limits, at their defaults: an
//! id too long for a subject, an event or a snapshot over the server's
//! `max_payload`, are refused with a typed error before anything is sent,
//! and the node's connection stays up: other entities' writes in flight at
//! the same moment are all acknowledged, and the client never reconnected
//! (a publish over a limit makes the server close the whole connection).
//! The limit is the server's of the moment: after a reconnect to a server
//! with a lower `max_payload`, that one is enforced.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{runtime, start, Answer, WAIT};
use troupe_cluster::persistence::{JetStreamJournal, Journal, PersistenceError, Snapshot};
use troupe_remote::testing::NatsServer;

/// A journal of `kind` on `server`, and the client it writes through (to
/// watch its connection).
fn open(
    rt: &tokio::runtime::Runtime,
    server: &NatsServer,
    kind: &str,
) -> (Arc<dyn Journal>, async_nats::Client) {
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let journal = JetStreamJournal::open(client.clone(), kind, 1)
            .await
            .unwrap();
        (Arc::new(journal) as Arc<dyn Journal>, client)
    })
}

fn answer<T>(rx: Answer<T>) -> Result<T, PersistenceError> {
    rx.recv_timeout(WAIT).expect("the journal did not answer")
}

/// Whether `r` is the refusal of an id.
fn refused<T>(r: Result<T, PersistenceError>) -> bool {
    matches!(r, Err(PersistenceError::InvalidId { .. }))
}

/// The client is still on its first connection.
fn assert_never_reconnected(client: &async_nats::Client) {
    let connects = client
        .statistics()
        .connects
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        connects, 1,
        "the client lost its connection and reconnected"
    );
    assert_eq!(
        client.connection_state(),
        async_nats::connection::State::Connected
    );
}

/// `n` entities with a token each, ready to append their first event.
fn others(journal: &Arc<dyn Journal>, n: usize) -> Vec<(String, u64)> {
    (0..n)
        .map(|i| {
            let id = format!("other-{i}");
            let token = answer(start(|done| journal.acquire(&id, None, done))).unwrap();
            (id, token)
        })
        .collect()
}

/// Starts one append per entity, sequence number `seq`.
fn append_all(journal: &Arc<dyn Journal>, ids: &[(String, u64)], seq: u64) -> Vec<Answer<u64>> {
    ids.iter()
        .map(|(id, token)| {
            let event = format!("{id} #{seq}").into_bytes();
            start(|done| journal.append(id, *token, seq, vec![event], done))
        })
        .collect()
}

/// Every entity holds exactly its two events, in order.
fn assert_two_events_each(journal: &Arc<dyn Journal>, ids: &[(String, u64)]) {
    for (id, _) in ids {
        let mut events = Vec::new();
        journal
            .replay(id, 0, 0, &mut |seq, bytes| {
                events.push((seq, bytes.to_vec()));
                Ok(())
            })
            .unwrap();
        let expected: Vec<_> = (1..=2)
            .map(|seq| (seq, format!("{id} #{seq}").into_bytes()))
            .collect();
        assert_eq!(events, expected);
    }
}

#[test]
fn an_id_over_the_limit_is_refused_before_anything_is_sent() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let (journal, client) = open(&rt, &server, "tickets");
    let sent = || {
        client
            .statistics()
            .out_messages
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let before = sent();
    // One byte over the limit, and one long enough (escaped) to exceed
    // the server's protocol line of 4,096 bytes.
    let just_over = "a".repeat(troupe_cluster::MAX_ID_BYTES + 1);
    let far_over = "seat/".repeat(1_000);
    for id in [far_over.as_str(), just_over.as_str(), ""] {
        let acquired = answer(start(|done| journal.acquire(id, None, done)));
        assert!(
            refused(acquired.clone()),
            "{} bytes: {acquired:?}",
            id.len()
        );
        assert!(refused(answer(start(|done| journal.append(
            id,
            1,
            1,
            vec![b"e".to_vec()],
            done
        )))));
        let snapshot = Snapshot {
            seq_nr: 1,
            position: 1,
            token: 1,
            state: b"s".to_vec(),
        };
        assert!(refused(answer(start(
            |done| journal.save_snapshot(id, snapshot, done)
        ))));
        assert!(refused(journal.load_snapshot(id).map(|_| ())));
        assert!(refused(
            journal.replay(id, 0, 0, &mut |_, _| Ok(())).map(|_| ())
        ));
    }
    assert_eq!(sent(), before, "a refused id sent something to the server");
    // The longest id that fits works, with bytes that escape to three.
    let longest = "é/".repeat(troupe_cluster::MAX_ID_BYTES / 3);
    assert_eq!(longest.len(), troupe_cluster::MAX_ID_BYTES);
    let token = answer(start(|done| journal.acquire(&longest, None, done))).unwrap();
    answer(start(|done| {
        journal.append(&longest, token, 1, vec![b"one".to_vec()], done)
    }))
    .unwrap();
    let mut n = 0;
    journal
        .replay(&longest, 0, 0, &mut |_, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 1);
    assert_never_reconnected(&client);
}

#[test]
fn an_event_over_max_payload_is_refused_and_nothing_in_flight_is_lost() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let (journal, client) = open(&rt, &server, "bookings");
    let max_payload = client.server_info().max_payload;
    assert_eq!(max_payload, 1024 * 1024, "the server's default");
    let others = others(&journal, 50);
    let big = "big-booking";
    let token = answer(start(|done| journal.acquire(big, None, done))).unwrap();

    // Other entities' appends in flight on both sides of the big one.
    let first = append_all(&journal, &others, 1);
    let refused = start(|done| journal.append(big, token, 1, vec![vec![7; max_payload]], done));
    let second = append_all(&journal, &others, 2);

    match answer(refused) {
        Err(PersistenceError::TooLarge {
            persistence_id,
            what,
            size,
            limit,
        }) => {
            assert_eq!((persistence_id.as_str(), what), (big, "event record"));
            assert_eq!(limit, max_payload);
            assert!(size > max_payload, "{size}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    for rx in first.into_iter().chain(second) {
        answer(rx).unwrap();
    }
    assert_two_events_each(&journal, &others);
    // The refused append left nothing, and the entity writes on: an event
    // of half the limit is carried.
    let half = vec![8; max_payload / 2];
    answer(start(|done| {
        journal.append(big, token, 1, vec![half.clone()], done)
    }))
    .unwrap();
    let mut events = Vec::new();
    journal
        .replay(big, 0, 0, &mut |seq, bytes| {
            events.push((seq, bytes.len()));
            Ok(())
        })
        .unwrap();
    assert_eq!(events, vec![(1, half.len())]);
    assert_never_reconnected(&client);
}

#[test]
fn a_snapshot_over_max_payload_is_refused_and_nothing_in_flight_is_lost() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let (journal, client) = open(&rt, &server, "venues");
    let max_payload = client.server_info().max_payload;
    let others = others(&journal, 50);
    let big = "big-venue";
    let token = answer(start(|done| journal.acquire(big, None, done))).unwrap();
    let at = answer(start(|done| {
        journal.append(big, token, 1, vec![b"e".to_vec()], done)
    }))
    .unwrap();
    let snapshot = |state: Vec<u8>| Snapshot {
        seq_nr: 1,
        position: at,
        token,
        state,
    };

    let first = append_all(&journal, &others, 1);
    let refused = start(|done| journal.save_snapshot(big, snapshot(vec![9; max_payload]), done));
    let second = append_all(&journal, &others, 2);

    match answer(refused) {
        Err(PersistenceError::TooLarge {
            persistence_id,
            what,
            size,
            limit,
        }) => {
            assert_eq!((persistence_id.as_str(), what), (big, "snapshot"));
            assert_eq!(limit, max_payload);
            assert!(size > max_payload, "{size}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    for rx in first.into_iter().chain(second) {
        answer(rx).unwrap();
    }
    assert_two_events_each(&journal, &others);
    assert_eq!(journal.load_snapshot(big).unwrap(), None, "nothing stored");
    // A snapshot of half the limit is stored and loads back whole.
    let half = vec![5; max_payload / 2];
    assert_eq!(
        answer(start(|done| journal.save_snapshot(
            big,
            snapshot(half.clone()),
            done
        )))
        .unwrap(),
        1
    );
    assert_eq!(journal.load_snapshot(big).unwrap(), Some(snapshot(half)));
    assert_never_reconnected(&client);
}

#[test]
fn the_limit_is_learned_again_when_the_client_reconnects() {
    let conf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(conf.path(), "max_payload: 1048576\n").unwrap();
    let conf_path = conf.path().to_str().unwrap().to_string();
    let mut server = NatsServer::start_with(&["-c", &conf_path]).unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let (journal, client) = open(&rt, &server, "rooms");
    let id = "room-1";
    let token = answer(start(|done| journal.acquire(id, None, done))).unwrap();
    let event = vec![1; 100 * 1024];
    answer(start(|done| {
        journal.append(id, token, 1, vec![event.clone()], done)
    }))
    .unwrap();

    // The same server comes back with a lower max_payload.
    std::fs::write(conf.path(), "max_payload: 65536\n").unwrap();
    server.restart().unwrap_or_else(|e| panic!("{e}"));
    let connects = || {
        client
            .statistics()
            .connects
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    // The client takes the new server's INFO as it reconnects.
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.server_info().max_payload != 65536 {
        assert!(Instant::now() < deadline, "the client did not reconnect");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(connects(), 2);

    match answer(start(|done| {
        journal.append(id, token, 2, vec![event], done)
    })) {
        Err(PersistenceError::TooLarge { limit, size, .. }) => {
            assert_eq!(limit, 65536);
            assert!(size > 100 * 1024, "{size}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    answer(start(|done| {
        journal.append(id, token, 2, vec![b"small".to_vec()], done)
    }))
    .unwrap();
    assert_eq!(connects(), 2, "the refused append cost the connection");
}

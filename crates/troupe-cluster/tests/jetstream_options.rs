//! The JetStream journal's stream settings ([`JetStreamOptions`]): what
//! `open_with` asks is what the server holds (storage, limits, replicas
//! on a three-server cluster, where recovery reads from any replica), an
//! existing stream is brought to them (while plain `open` leaves it as it
//! is), and a full stream refuses appends instead of deleting events.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::stream::{Config, DiscardPolicy, StorageType};
use common::{runtime, WAIT};
use troupe_cluster::persistence::{
    JetStreamJournal, JetStreamOptions, Journal, PersistenceError, Storage,
};
use troupe_remote::testing::NatsServer;

fn open_with(
    rt: &tokio::runtime::Runtime,
    url: &str,
    kind: &str,
    options: JetStreamOptions,
) -> Arc<dyn Journal> {
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        let journal = JetStreamJournal::open_with(client, kind, options).await;
        Arc::new(journal.unwrap()) as Arc<dyn Journal>
    })
}

/// The configuration the server holds for stream `name`.
fn config(rt: &tokio::runtime::Runtime, url: &str, name: &str) -> Config {
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut stream = js.get_stream(name).await.unwrap();
        stream.info().await.unwrap().config.clone()
    })
}

/// Waits until the cluster behind `url` can place a stream of `replicas`
/// copies: a meta leader answering JetStream requests is not enough, the
/// servers must also have joined it, or the stream is refused with "no suitable peers for
/// placement" (seen once in CI, right after the meta leader answered).
/// The probe stream is deleted again.
fn until_replicas_can_be_placed(rt: &tokio::runtime::Runtime, url: &str, replicas: usize) {
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let config = Config {
            name: "placement-probe".into(),
            subjects: vec!["placement-probe".into()],
            num_replicas: replicas,
            ..Config::default()
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match js.create_stream(config.clone()).await {
                Ok(_) => break,
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "the cluster cannot place {replicas} replicas: {e}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        js.delete_stream("placement-probe").await.unwrap();
    });
}

fn wait<T: Send + 'static>(
    call: impl FnOnce(Box<dyn FnOnce(Result<T, PersistenceError>) + Send>),
) -> Result<T, PersistenceError> {
    let (tx, rx) = mpsc::channel();
    call(Box::new(move |r| {
        let _ = tx.send(r);
    }));
    rx.recv_timeout(WAIT).expect("the journal did not answer")
}

fn events(journal: &Arc<dyn Journal>, id: &str) -> Vec<(u64, Vec<u8>)> {
    let mut events = Vec::new();
    journal
        .replay(id, 0, 0, &mut |seq, bytes| {
            events.push((seq, bytes.to_vec()));
            Ok(())
        })
        .unwrap();
    events
}

#[test]
fn open_with_makes_the_stream_and_bucket_it_asks_for() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let options = JetStreamOptions::default()
        .storage(Storage::Memory)
        .max_bytes(8 * 1024 * 1024)
        .max_age(Duration::from_secs(3600));
    let journal = open_with(&rt, &server.url(), "carts", options);
    let stream = config(&rt, &server.url(), "troupe-journal-carts");
    assert_eq!(stream.storage, StorageType::Memory);
    assert_eq!(stream.max_bytes, 8 * 1024 * 1024);
    assert_eq!(stream.max_age, Duration::from_secs(3600));
    assert_eq!(stream.discard, DiscardPolicy::New);
    assert_eq!(stream.num_replicas, 1);
    assert!(stream.allow_direct);
    let bucket = config(&rt, &server.url(), "KV_troupe-snapshots-carts");
    assert_eq!(bucket.storage, StorageType::Memory);
    // And it works as a journal.
    let token = wait(|done| journal.acquire("cart-1", None, done)).unwrap();
    wait(|done| journal.append("cart-1", token, 1, vec![b"apple".to_vec()], done)).unwrap();
    assert_eq!(events(&journal, "cart-1"), vec![(1, b"apple".to_vec())]);
}

#[test]
fn open_with_brings_an_existing_stream_to_its_settings_and_open_keeps_them() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let url = server.url();
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        JetStreamJournal::open(client, "orders", 1).await.unwrap();
    });
    assert_eq!(config(&rt, &url, "troupe-journal-orders").max_bytes, -1);
    let limited = JetStreamOptions::default().max_bytes(1 << 30);
    open_with(&rt, &url, "orders", limited);
    assert_eq!(
        config(&rt, &url, "troupe-journal-orders").max_bytes,
        1 << 30
    );
    // The simple form opens the stream as it is.
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        JetStreamJournal::open(client, "orders", 1).await.unwrap();
    });
    assert_eq!(
        config(&rt, &url, "troupe-journal-orders").max_bytes,
        1 << 30
    );
}

#[test]
fn a_full_stream_refuses_appends_and_keeps_every_event() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let options = JetStreamOptions::default().max_bytes(64 * 1024);
    let journal = open_with(&rt, &server.url(), "logs", options);
    let id = "log-1";
    let token = wait(|done| journal.acquire(id, None, done)).unwrap();
    let event = vec![3; 4 * 1024];
    let mut stored = 0;
    let refusal = loop {
        let seq = stored + 1;
        match wait(|done| journal.append(id, token, seq, vec![event.clone()], done)) {
            Ok(_) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 100, "64 KiB held {stored} events of 4 KiB");
    };
    match &refusal {
        PersistenceError::JetStream { reason, .. } => {
            assert!(reason.contains("maximum bytes"), "{refusal}")
        }
        other => panic!("expected the server's refusal, got {other:?}"),
    }
    assert!(stored >= 10, "only {stored} events stored");
    // Nothing was deleted to make room: every acknowledged event replays.
    let replayed = events(&journal, id);
    assert_eq!(replayed.len() as u64, stored);
    assert!(replayed
        .iter()
        .enumerate()
        .all(|(i, (seq, _))| *seq == i as u64 + 1));
}

#[test]
fn three_replicas_on_a_three_server_cluster_recover_from_any_server() {
    let servers = NatsServer::start_cluster(3).unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    until_replicas_can_be_placed(&rt, &servers[0].url(), 3);
    let options = JetStreamOptions::default().replicas(3);
    // Two nodes, on two different servers of the cluster.
    let here = open_with(&rt, &servers[0].url(), "ledgers", options.clone());
    let there = open_with(&rt, &servers[2].url(), "ledgers", options);
    let stream = config(&rt, &servers[1].url(), "troupe-journal-ledgers");
    assert_eq!(stream.num_replicas, 3);
    let bucket = config(&rt, &servers[1].url(), "KV_troupe-snapshots-ledgers");
    assert_eq!(bucket.num_replicas, 3);

    for n in 0..20u64 {
        let id = format!("ledger-{n}");
        let token = wait(|done| here.acquire(&id, None, done)).unwrap();
        for seq in 1..=3 {
            let event = format!("{id} #{seq}").into_bytes();
            wait(|done| here.append(&id, token, seq, vec![event], done)).unwrap();
        }
        // The entity moves to the other node: it takes the id, then
        // replays everything acknowledged before (direct gets may be
        // answered by any replica).
        wait(|done| there.acquire(&id, None, done)).unwrap();
        let expected: Vec<_> = (1..=3)
            .map(|seq| (seq, format!("{id} #{seq}").into_bytes()))
            .collect();
        assert_eq!(events(&there, &id), expected);
    }
}

//! The JetStream journal's writer (one task publishing every id's appends
//! back to back and gathering their acknowledgements): appends an id makes
//! before its earlier ones are answered are stored once each, in order;
//! appends in flight when the server is killed and restarted are all
//! answered, and each acknowledged one is stored exactly once (a write
//! whose acknowledgement was lost is sent again, refused as out of date,
//! and found to be the writer's own by asking the stream's leader).
//! The lost acknowledgements are made by a loopback proxy between the
//! journal and the server that swallows what the server sends, then cuts
//! the connection.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::{runtime, start, Answer, WAIT};
use troupe_cluster::persistence::{JetStreamJournal, Journal, PersistenceError};
use troupe_remote::testing::NatsServer;

fn open(rt: &tokio::runtime::Runtime, url: &str, kind: &str) -> Arc<dyn Journal> {
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        let journal = JetStreamJournal::open(client, kind, 1).await.unwrap();
        Arc::new(journal) as Arc<dyn Journal>
    })
}

/// The answer, within the retries' time (a lost acknowledgement is waited
/// for 5 s before the write is sent again).
fn answer<T>(rx: Answer<T>) -> Result<T, PersistenceError> {
    rx.recv_timeout(2 * WAIT)
        .expect("the journal did not answer")
}

fn event(id: &str, seq: u64) -> Vec<u8> {
    format!("{id} #{seq}").into_bytes()
}

/// `n` ids with a token each.
fn acquire_all(journal: &Arc<dyn Journal>, prefix: &str, n: usize) -> Vec<(String, u64)> {
    (0..n)
        .map(|i| {
            let id = format!("{prefix}-{i}");
            let token = answer(start(|done| journal.acquire(&id, None, done))).unwrap();
            (id, token)
        })
        .collect()
}

/// Every id holds exactly events 1..=`last`, in order, each once.
fn assert_holds(journal: &Arc<dyn Journal>, ids: &[(String, u64)], last: u64) {
    for (id, _) in ids {
        let mut events = Vec::new();
        journal
            .replay(id, 0, 0, &mut |seq, bytes| {
                events.push((seq, bytes.to_vec()));
                Ok(())
            })
            .unwrap();
        let expected: Vec<_> = (1..=last).map(|seq| (seq, event(id, seq))).collect();
        assert_eq!(events, expected, "{id}");
    }
}

#[test]
fn appends_made_before_earlier_ones_are_answered_are_stored_once_in_order() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server.url(), "queued");
    let ids = acquire_all(&journal, "queued", 50);
    const APPENDS: u64 = 20;
    // Every append of every id at once: an id's later appends queue
    // behind its first and go out together when it is answered.
    let answers: Vec<Vec<Answer<u64>>> = ids
        .iter()
        .map(|(id, token)| {
            (1..=APPENDS)
                .map(|seq| {
                    start(|done| journal.append(id, *token, seq, vec![event(id, seq)], done))
                })
                .collect()
        })
        .collect();
    for ((id, _), answers) in ids.iter().zip(answers) {
        let sequences: Vec<u64> = answers
            .into_iter()
            .map(|a| answer(a).unwrap_or_else(|e| panic!("{id}: {e}")))
            .collect();
        // Stream sequences in the order of the appends (equal when two
        // went out as one record).
        assert!(
            sequences.windows(2).all(|w| w[0] <= w[1]),
            "{id}: {sequences:?}"
        );
    }
    assert_holds(&journal, &ids, APPENDS);
}

#[test]
fn appends_in_flight_across_a_server_restart_are_answered_and_stored_once() {
    let mut server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server.url(), "restart");
    let ids = acquire_all(&journal, "restart", 100);
    const ROUNDS: u64 = 6;
    for seq in 1..=ROUNDS {
        let answers: Vec<Answer<u64>> = ids
            .iter()
            .map(|(id, token)| {
                start(|done| journal.append(id, *token, seq, vec![event(id, seq)], done))
            })
            .collect();
        if seq == ROUNDS / 2 {
            // With this round's appends in flight: sent, stored and not
            // acknowledged, or still in the client's buffer.
            server.restart().unwrap_or_else(|e| panic!("{e}"));
        }
        for ((id, _), a) in ids.iter().zip(answers) {
            answer(a).unwrap_or_else(|e| panic!("{id} #{seq}: {e}"));
        }
    }
    assert_holds(&journal, &ids, ROUNDS);
}

/// A loopback TCP proxy to the server that can swallow what the server
/// sends (its acknowledgements) and cut every connection.
struct Proxy {
    port: u16,
    swallow: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(server_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let swallow = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (s, st) = (swallow.clone(), streams.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(("127.0.0.1", server_port)).unwrap();
                st.lock().unwrap().push(client.try_clone().unwrap());
                st.lock().unwrap().push(server.try_clone().unwrap());
                let never = Arc::new(AtomicBool::new(false));
                pipe(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    never,
                );
                pipe(server, client, s.clone());
            }
        });
        Proxy {
            port,
            swallow,
            streams,
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Cuts every connection; the next ones forward everything.
    fn cut(&self) {
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        self.swallow.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either closes, dropping the bytes while
/// `swallow` is set.
fn pipe(mut from: TcpStream, mut to: TcpStream, swallow: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if !swallow.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// Messages in the journal stream of `kind`, asked of the server directly.
fn stored(rt: &tokio::runtime::Runtime, server: &NatsServer, kind: &str) -> u64 {
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut stream = js
            .get_stream(format!("troupe-journal-{kind}"))
            .await
            .unwrap();
        stream.info().await.unwrap().state.messages
    })
}

#[test]
fn appends_whose_acknowledgements_were_lost_are_found_stored_and_answered_once() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let proxy = Proxy::start(server.port());
    let rt = runtime();
    let journal = open(&rt, &proxy.url(), "lost");
    let ids = acquire_all(&journal, "lost", 100);
    let fences = ids.len() as u64;
    proxy.swallow.store(true, Ordering::SeqCst);
    let answers: Vec<Answer<u64>> = ids
        .iter()
        .map(|(id, token)| start(|done| journal.append(id, *token, 1, vec![event(id, 1)], done)))
        .collect();
    // The server stored every append; none of its acknowledgements got
    // through.
    let deadline = std::time::Instant::now() + WAIT;
    while stored(&rt, &server, "lost") < fences + ids.len() as u64 {
        assert!(
            std::time::Instant::now() < deadline,
            "the appends were not stored"
        );
        std::thread::yield_now();
    }
    proxy.cut();
    for ((id, _), a) in ids.iter().zip(answers) {
        answer(a).unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    // Stored once each, and the ids write on from there.
    let answers: Vec<Answer<u64>> = ids
        .iter()
        .map(|(id, token)| start(|done| journal.append(id, *token, 2, vec![event(id, 2)], done)))
        .collect();
    for ((id, _), a) in ids.iter().zip(answers) {
        answer(a).unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    assert_holds(&journal, &ids, 2);
    assert_eq!(stored(&rt, &server, "lost"), fences + 2 * ids.len() as u64);
}

#[test]
fn an_append_queued_behind_its_token_is_in_the_replay_after_it() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server.url(), "behind");
    let first = acquire_all(&journal, "behind", 1);
    let (id, token) = &first[0];
    let appended = start(|done| journal.append(id, *token, 1, vec![event(id, 1)], done));
    answer(appended).unwrap();
    // A second activation, its append made before its token is answered:
    // the reads made ahead while the token was taken do not hold it.
    let acquired = start(|done| journal.acquire(id, Some(token + 1), done));
    let appended = start(|done| journal.append(id, token + 1, 2, vec![event(id, 2)], done));
    assert_eq!(answer(acquired).unwrap(), token + 1);
    answer(appended).unwrap();
    assert_holds(&journal, &[(id.clone(), token + 1)], 2);
}

#[test]
fn a_recovery_reads_what_was_read_while_its_token_was_taken() {
    let mut server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let journal = open(&rt, &server.url(), "ahead");
    let first = acquire_all(&journal, "ahead", 1);
    let (id, token) = &first[0];
    for seq in 1..=3 {
        let appended = start(|done| journal.append(id, *token, seq, vec![event(id, seq)], done));
        answer(appended).unwrap();
    }
    // A new activation takes its token; then the server goes away. Its
    // snapshot load and replay need no server: they were read ahead.
    let acquired = start(|done| journal.acquire(id, Some(token + 1), done));
    assert_eq!(answer(acquired).unwrap(), token + 1);
    server.stop();
    assert!(journal.load_snapshot(id).unwrap().is_none());
    let mut events = Vec::new();
    journal
        .replay(id, 0, 0, &mut |seq, bytes| {
            events.push((seq, bytes.to_vec()));
            Ok(())
        })
        .unwrap();
    let expected: Vec<_> = (1..=3).map(|seq| (seq, event(id, seq))).collect();
    assert_eq!(events, expected);
}

//! Crash safety: a child process appends with group commit from four
//! threads and prints every acknowledged record; the parent kills it with
//! SIGKILL after a random number of acknowledgements, reopens the journal,
//! and checks that every acknowledged record is there, intact, at the
//! sequence number it was acknowledged with. Repeated on the same journal,
//! so every round also recovers from the previous round's torn tail.
//!
//! `TROUPE_JOURNAL_CRASH_ITERS` sets the number of rounds (default 30).
//!
//! The child is this same test binary running this same test: the parent
//! starts it with `TROUPE_JOURNAL_CRASH_CHILD` set, which turns the test
//! into the writer. So there is no ignored test and no test that passes by
//! doing nothing.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use troupe_journal::{read_from, Durability, Journal, Options};

const CHILD_DIR: &str = "TROUPE_JOURNAL_CRASH_CHILD";
const CHILD_ROUND: &str = "TROUPE_JOURNAL_CRASH_ROUND";

fn options() -> Options {
    Options {
        durability: Durability::GroupCommit,
        segment_bytes: 32 << 10,
    }
}

/// The record a child writes for (round, thread, counter): its identity
/// plus filler whose length varies, so records straddle pages and segments.
fn record(round: u64, thread: u64, i: u64) -> Vec<u8> {
    let mut r = format!("{round}:{thread}:{i}:").into_bytes();
    r.extend(std::iter::repeat_n(
        b'a' + (i % 26) as u8,
        ((i * 7919) % 300) as usize,
    ));
    r
}

/// The child: appends into `dir` until killed.
fn child_writer(dir: String) -> ! {
    let round: u64 = std::env::var(CHILD_ROUND).unwrap().parse().unwrap();
    let journal = Arc::new(Journal::open(dir, options()).expect("the journal opens"));
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (journal, out) = (journal.clone(), out.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    let seq = journal.append(&record(round, t, i)).expect("append");
                    let mut out = out.lock().unwrap();
                    writeln!(out, "ACK {t} {i} {seq}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    unreachable!("the writers append until the process is killed")
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn read_all(dir: &Path) -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    read_from(dir, 0, |r| records.push(r.payload)).expect("the log reads");
    records
}

#[test]
fn kill_9_at_random_points_loses_no_acknowledged_record() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        child_writer(dir);
    }
    let rounds: u64 = std::env::var("TROUPE_JOURNAL_CRASH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let dir = std::env::temp_dir().join(format!("troupe-journal-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Rng(seed | 1);
    // (seq) -> the record acknowledged there
    let mut acked: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut total_acks = 0u64;
    for round in 0..rounds {
        let target = 1 + rng.below(800);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "kill_9_at_random_points_loses_no_acknowledged_record",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, &dir)
            .env(CHILD_ROUND, round.to_string())
            .stdout(Stdio::piped())
            // A child that dies before it is killed says why here.
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut seen = 0;
        for line in stdout.lines() {
            let line = line.unwrap();
            let Some(rest) = line.strip_prefix("ACK ") else {
                continue;
            };
            let f: Vec<u64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
            acked.insert(f[2], record(round, f[0], f[1]));
            seen += 1;
            if seen == target {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
        child.wait().unwrap();
        assert_eq!(
            seen, target,
            "round {round}: the child stopped early (seed {seed})"
        );
        total_acks += seen;

        // Recovery: opening truncates the torn tail; every ack survives.
        let journal =
            Journal::open(&dir, options()).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let records = read_all(&dir);
        assert_eq!(journal.next_seq(), records.len() as u64);
        drop(journal);
        for (seq, want) in &acked {
            let got = records.get(*seq as usize);
            assert_eq!(
                got,
                Some(want),
                "round {round}: acknowledged record {seq} (seed {seed})"
            );
        }
    }
    // Still appendable after all that.
    let journal = Journal::open(&dir, options()).unwrap();
    let seq = journal.append(b"the end").unwrap();
    drop(journal);
    assert_eq!(read_all(&dir)[seq as usize], b"the end");
    eprintln!(
        "crash test: {rounds} SIGKILLs, {total_acks} acknowledged records, all intact (seed {seed})"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

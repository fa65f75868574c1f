//! Append throughput per durability policy, 100-byte records, in a fresh
//! directory under the system's temp dir (set TMPDIR to measure another
//! disk): one appender for each policy, then group commit with 4 and 16
//! appender threads.
//!
//! `cargo run --release -p troupe-journal --example journal_bench`

use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe_journal::{Durability, Journal, Options};

fn run(durability: Durability, threads: usize, per_thread: usize) -> (f64, Duration) {
    let dir = std::env::temp_dir().join(format!("journal-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let journal = Arc::new(
        Journal::open(
            &dir,
            Options {
                durability,
                ..Options::default()
            },
        )
        .expect("journal opens"),
    );
    let record = [0x5au8; 100];
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let journal = journal.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    journal.append(&record).expect("append");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    journal.sync().expect("sync");
    let elapsed = start.elapsed();
    drop(journal);
    std::fs::remove_dir_all(&dir).unwrap();
    (
        (threads * per_thread) as f64 / elapsed.as_secs_f64(),
        elapsed,
    )
}

fn main() {
    for (name, durability, threads, per_thread) in [
        ("none, 1 appender", Durability::None, 1, 500_000),
        ("sync-each, 1 appender", Durability::SyncEach, 1, 2_000),
        (
            "group-commit, 1 appender",
            Durability::GroupCommit,
            1,
            2_000,
        ),
        (
            "group-commit, 4 appenders",
            Durability::GroupCommit,
            4,
            2_000,
        ),
        (
            "group-commit, 16 appenders",
            Durability::GroupCommit,
            16,
            2_000,
        ),
    ] {
        let (rate, elapsed) = run(durability, threads, per_thread);
        println!(
            "{name:<28} {:>10.0} records/s {:>8.2} MB/s ({} records in {:.3} s)",
            rate,
            rate * 108.0 / 1e6,
            threads * per_thread,
            elapsed.as_secs_f64()
        );
    }
}

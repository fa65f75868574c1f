//! A pool of workers behind a router, each with a small bounded mailbox:
//! a producer much faster than the workers is held back (it waits for
//! room) instead of queueing without limit. Every job is done exactly once.
//!
//! `cargo run -p troupe --example worker_pool`

use std::sync::mpsc;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, Props, Router, Routing};

const WORKERS: usize = 4;
const CAPACITY: usize = 8;
const JOBS: u64 = 2_000;

/// Squares numbers, slowly (about 50 us of work per job).
struct Worker {
    done: mpsc::Sender<u64>,
}

impl Actor for Worker {
    type Msg = u64;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, n: u64) {
        let until = Instant::now() + Duration::from_micros(50);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        self.done.send(n * n).unwrap();
    }
}

fn main() {
    let system = ActorSystem::builder()
        .name("pool")
        .threads(2)
        .build()
        .unwrap();
    let (done, results) = mpsc::channel();
    let props = Props::new(move || Worker { done: done.clone() })
        .name("worker")
        .mailbox(MailboxConfig::bounded(CAPACITY, Overflow::Fail));
    let pool = Router::pool(&system, WORKERS, props, Routing::RoundRobin).unwrap();

    let start = Instant::now();
    let mut most_queued = 0;
    for n in 0..JOBS {
        // Waits while the chosen worker's mailbox is full: backpressure.
        pool.send_blocking(n, Duration::from_secs(10)).unwrap();
        let queued: usize = pool.routees().iter().map(|w| w.queued()).sum();
        most_queued = most_queued.max(queued);
    }
    println!(
        "{JOBS} jobs handed over in {:?}; at most {most_queued} queued (bound: {})",
        start.elapsed(),
        WORKERS * CAPACITY
    );
    assert!(most_queued <= WORKERS * CAPACITY);

    let sum: u64 = results.iter().take(JOBS as usize).sum();
    let expected: u64 = (0..JOBS).map(|n| n * n).sum();
    assert_eq!(sum, expected, "every job done exactly once");
    println!("all {JOBS} results in after {:?}", start.elapsed());

    pool.stop();
    system.shutdown();
    system.await_termination().unwrap();
}

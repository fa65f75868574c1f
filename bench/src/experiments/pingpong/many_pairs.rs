//! The many-pairs rows: `pairs` actor pairs play ping-pong at once with
//! `balls` messages in flight per pair, for aggregate throughput (the shape of
//! the "50 million messages per second" claims, where many messages wait in
//! each mailbox and the throughput budget lets a run handle them in a batch).
//! Each pinger checks that its pongs come back in order; the row checks that
//! every pair finished with every message.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use troupe::prelude::*;

use crate::shared::SystemGuard;
use crate::experiments::pingpong::hops;
use crate::runner::{expect_eq, Stopwatch, Workload, WorkloadError};

enum Msg {
    /// Play `rounds` round trips against the peer, `balls` at a time.
    Serve {
        peer: ActorRef<Msg>,
        rounds: u64,
        balls: u64,
    },
    Ping(u64),
    Pong(u64),
}

struct Player {
    peer: Option<ActorRef<Msg>>,
    target: u64,
    sent: u64,
    received: u64,
    in_order: bool,
    /// Pairs still playing; the last to finish reports the total.
    remaining: Arc<AtomicU64>,
    /// Sum of all in-order messages received by pingers.
    total: Arc<AtomicU64>,
    done: mpsc::Sender<()>,
}

impl Actor for Player {
    type Msg = Msg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Serve {
                peer,
                rounds,
                balls,
            } => {
                self.target = rounds;
                self.received = 0;
                self.in_order = true;
                self.sent = balls.min(rounds);
                for i in 1..=self.sent {
                    peer.tell(Msg::Ping(i));
                }
                self.peer = Some(peer);
            }
            Msg::Ping(i) => {
                // The ponger was spawned knowing its pinger.
                self.peer.as_ref().expect("peer known").tell(Msg::Pong(i));
                let _ = ctx;
            }
            Msg::Pong(i) => {
                self.received += 1;
                self.in_order &= i == self.received;
                if self.sent < self.target {
                    self.sent += 1;
                    self.peer
                        .as_ref()
                        .expect("served")
                        .tell(Msg::Ping(self.sent));
                } else if self.received == self.target {
                    if self.in_order {
                        self.total.fetch_add(self.received, Ordering::Relaxed);
                    }
                    if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                        let _ = self.done.send(());
                    }
                }
            }
        }
    }
}

/// The many-pairs row.
pub fn workload(
    pairs: usize,
    balls: u64,
    workers: usize,
    throughput: usize,
    repetitions: u64,
) -> Workload {
    let variant = format!("actor-{pairs}x{balls}-pairs-tp{throughput}-w{workers}");
    Workload::with_setup(variant, move || {
        let system = ActorSystem::builder()
            .name("pairs")
            .threads(workers)
            .throughput(throughput)
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let remaining = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let mut games = Vec::with_capacity(pairs);
        for _ in 0..pairs {
            let make = |peer: Option<ActorRef<Msg>>| {
                let (remaining, total, done) = (remaining.clone(), total.clone(), tx.clone());
                Props::new(move || Player {
                    peer: peer.clone(),
                    target: 0,
                    sent: 0,
                    received: 0,
                    in_order: true,
                    remaining: remaining.clone(),
                    total: total.clone(),
                    done: done.clone(),
                })
            };
            let spawn = |p| {
                system
                    .spawn(p)
                    .map_err(|e| WorkloadError::new(e.to_string()))
            };
            let pinger = spawn(make(None))?;
            let ponger = spawn(make(Some(pinger.clone())))?;
            games.push((pinger, ponger));
        }
        let guard = SystemGuard(system);
        Ok(move || {
            let _keep = &guard;
            let per_pair = hops(repetitions)?;
            let expected = per_pair * pairs as u64;
            remaining.store(pairs as u64, Ordering::Release);
            total.store(0, Ordering::Release);
            let clock = Stopwatch::start();
            for (pinger, ponger) in &games {
                pinger.tell(Msg::Serve {
                    peer: ponger.clone(),
                    rounds: repetitions,
                    balls,
                });
            }
            rx.recv_timeout(Duration::from_secs(600))
                .map_err(|_| WorkloadError::new("the pairs did not finish within 600 s"))?;
            let sample = clock.stop(expected);
            expect_eq(
                "in-order pongs over all pairs",
                repetitions * pairs as u64,
                total.load(Ordering::Acquire),
            )?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("pairs", pairs)
    .param("balls", balls)
    .param("workers", workers)
    .param("throughput", throughput)
    .param("repetitions", repetitions)
}

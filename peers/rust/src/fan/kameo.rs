//! Fan-in and fan-out on kameo: producers that `tell(..).await` in a loop
//! from their handler (kameo's default bounded mailbox of 64 makes a fast
//! producer wait for room: its backpressure), receivers that count, and
//! the counts read with `ask`.

use std::sync::Arc;
use std::time::Instant;

use ::kameo::prelude::*;

use super::{Counts, Fans, Sequence, PRODUCERS, WORKERS};
use crate::harness::{tokio_runtime, Latch};

struct Receiver {
    seq: Sequence,
    expected: u64,
    done: Arc<Latch>,
}

impl Actor for Receiver {
    type Args = Self;
    type Error = ::kameo::error::Infallible;

    async fn on_start(state: Self, _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(state)
    }
}

/// Message `seq` of producer `from`.
struct Item {
    from: usize,
    seq: u64,
}

impl Message<Item> for Receiver {
    type Reply = ();

    async fn handle(&mut self, Item { from, seq }: Item, _: &mut Context<Self, ()>) {
        self.seq.arrived(from, seq);
        if self.seq.counts().received == self.expected {
            self.done.count_down();
        }
    }
}

struct GetCounts;

impl Message<GetCounts> for Receiver {
    type Reply = (u64, u64);

    async fn handle(&mut self, _: GetCounts, _: &mut Context<Self, Self::Reply>) -> (u64, u64) {
        let c = self.seq.counts();
        (c.received, c.disorder)
    }
}

#[derive(Actor)]
struct Producer {
    id: usize,
}

/// Send `n` messages round-robin to `to`.
struct Produce {
    to: Vec<ActorRef<Receiver>>,
    n: u64,
}

impl Message<Produce> for Producer {
    type Reply = ();

    async fn handle(&mut self, Produce { to, n }: Produce, _: &mut Context<Self, ()>) {
        for seq in 0..n {
            let r = &to[(seq % to.len() as u64) as usize];
            // A refused message shows as a missing count (a failed check).
            let _ = r
                .tell(Item {
                    from: self.id,
                    seq: seq / to.len() as u64,
                })
                .await;
        }
    }
}

/// Runs with `producers` producers, `receivers` receivers and `n` messages
/// per producer; every receiver expects `expected`.
async fn fan(
    producers: usize,
    receivers: usize,
    n: u64,
    expected: u64,
) -> Result<(f64, Counts), String> {
    let done = Arc::new(Latch::new(receivers));
    let to: Vec<ActorRef<Receiver>> = (0..receivers)
        .map(|_| {
            Receiver::spawn(Receiver {
                seq: Sequence::new(producers),
                expected,
                done: done.clone(),
            })
        })
        .collect();
    let from: Vec<ActorRef<Producer>> = (0..producers)
        .map(|id| Producer::spawn(Producer { id }))
        .collect();
    for r in &to {
        r.wait_for_startup().await;
    }
    for p in &from {
        p.wait_for_startup().await;
    }
    let t0 = Instant::now();
    for p in &from {
        p.tell(Produce { to: to.clone(), n })
            .await
            .map_err(|e| e.to_string())?;
    }
    done.wait("the fan").await?;
    let ns = t0.elapsed().as_nanos() as f64;
    let mut total = Counts::default();
    for r in &to {
        let (received, disorder) = r.ask(GetCounts).await.map_err(|e| e.to_string())?;
        total.received += received;
        total.disorder += disorder;
    }
    for p in &from {
        p.stop_gracefully().await.map_err(|e| e.to_string())?;
    }
    for r in &to {
        r.stop_gracefully().await.map_err(|e| e.to_string())?;
    }
    Ok((ns, total))
}

/// Runs on a tokio runtime.
pub struct Runner {
    rt: tokio::runtime::Runtime,
}

impl Runner {
    /// A runner on `threads` threads.
    pub fn new(threads: usize) -> Result<Runner, String> {
        Ok(Runner {
            rt: tokio_runtime(threads)?,
        })
    }
}

impl Fans for Runner {
    fn fan_in(&mut self, per_producer: u64) -> Result<(f64, Counts), String> {
        self.rt.block_on(fan(
            PRODUCERS,
            1,
            per_producer,
            per_producer * PRODUCERS as u64,
        ))
    }

    fn fan_out(&mut self, per_worker: u64) -> Result<(f64, Counts), String> {
        self.rt
            .block_on(fan(1, WORKERS, per_worker * WORKERS as u64, per_worker))
    }
}

//! Fan-in and fan-out on actix: producers that `do_send` in a loop from
//! their handler, receivers that count, the counts read with `send`. The
//! actors are started round-robin over the run's Arbiters (receivers
//! first, then producers).

use std::sync::Arc;
use std::time::Instant;

use ::actix::prelude::*;

use super::{Counts, Fans, Sequence, PRODUCERS, WORKERS};
use crate::actix_system::Arbiters;
use crate::harness::Latch;

struct Receiver {
    seq: Sequence,
    expected: u64,
    done: Arc<Latch>,
}

impl Actor for Receiver {
    type Context = Context<Self>;
}

/// Message `seq` of producer `from`.
#[derive(Message)]
#[rtype(result = "()")]
struct Item {
    from: usize,
    seq: u64,
}

impl Handler<Item> for Receiver {
    type Result = ();

    fn handle(&mut self, Item { from, seq }: Item, _: &mut Context<Self>) {
        self.seq.arrived(from, seq);
        if self.seq.counts().received == self.expected {
            self.done.count_down();
        }
    }
}

#[derive(Message)]
#[rtype(result = "Counts")]
struct GetCounts;

impl Handler<GetCounts> for Receiver {
    type Result = MessageResult<GetCounts>;

    fn handle(&mut self, _: GetCounts, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.seq.counts())
    }
}

struct Producer {
    id: usize,
}

impl Actor for Producer {
    type Context = Context<Self>;
}

/// Send `n` messages round-robin to `to`.
#[derive(Message)]
#[rtype(result = "()")]
struct Produce {
    to: Vec<Addr<Receiver>>,
    n: u64,
}

impl Handler<Produce> for Producer {
    type Result = ();

    fn handle(&mut self, Produce { to, n }: Produce, _: &mut Context<Self>) {
        for seq in 0..n {
            let r = &to[(seq % to.len() as u64) as usize];
            r.do_send(Item {
                from: self.id,
                seq: seq / to.len() as u64,
            });
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

impl Handler<Stop> for Receiver {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

impl Handler<Stop> for Producer {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Runs on a System's Arbiters.
pub struct Runner {
    arbiters: Arbiters,
}

impl Runner {
    /// A runner on `threads` Arbiters.
    pub fn new(threads: usize) -> Runner {
        Runner {
            arbiters: Arbiters::new(threads),
        }
    }

    /// Runs with `producers` producers, `receivers` receivers and `n`
    /// messages per producer; every receiver expects `expected`.
    fn fan(
        &self,
        producers: usize,
        receivers: usize,
        n: u64,
        expected: u64,
    ) -> Result<(f64, Counts), String> {
        let arbiters: Vec<ArbiterHandle> = (0..self.arbiters.len())
            .map(|i| self.arbiters.handle(i))
            .collect();
        self.arbiters.block_on(async move {
            let done = Arc::new(Latch::new(receivers));
            let to: Vec<Addr<Receiver>> = (0..receivers)
                .map(|i| {
                    let done = done.clone();
                    Receiver::start_in_arbiter(&arbiters[i % arbiters.len()], move |_| Receiver {
                        seq: Sequence::new(producers),
                        expected,
                        done,
                    })
                })
                .collect();
            let from: Vec<Addr<Producer>> = (0..producers)
                .map(|id| {
                    Producer::start_in_arbiter(
                        &arbiters[(receivers + id) % arbiters.len()],
                        move |_| Producer { id },
                    )
                })
                .collect();
            let t0 = Instant::now();
            for p in &from {
                p.do_send(Produce { to: to.clone(), n });
            }
            done.wait("the fan").await?;
            let ns = t0.elapsed().as_nanos() as f64;
            let mut total = Counts::default();
            for r in &to {
                let c = r.send(GetCounts).await.map_err(|e| e.to_string())?;
                total.received += c.received;
                total.disorder += c.disorder;
                r.do_send(Stop);
            }
            for p in &from {
                p.do_send(Stop);
            }
            Ok((ns, total))
        })
    }
}

impl Fans for Runner {
    fn fan_in(&mut self, per_producer: u64) -> Result<(f64, Counts), String> {
        self.fan(PRODUCERS, 1, per_producer, per_producer * PRODUCERS as u64)
    }

    fn fan_out(&mut self, per_worker: u64) -> Result<(f64, Counts), String> {
        self.fan(1, WORKERS, per_worker * WORKERS as u64, per_worker)
    }
}

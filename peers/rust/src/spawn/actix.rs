//! Spawn and stop on actix: `start_in_arbiter` round-robin over the run's
//! Arbiters, each actor counting its `started` and `stopped` hooks, and a
//! message whose handler calls `ctx.stop()`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ::actix::prelude::*;

use super::{rss_bytes, Cycle, Spawns};
use crate::actix_system::Arbiters;
use crate::harness::Latch;

struct Idle {
    started: Arc<(Latch, AtomicU64)>,
    stopped: Arc<(Latch, AtomicU64)>,
}

impl Actor for Idle {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.started.1.fetch_add(1, Ordering::Relaxed);
        self.started.0.count_down();
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stopped.1.fetch_add(1, Ordering::Relaxed);
        self.stopped.0.count_down();
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

impl Handler<Stop> for Idle {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Cycles on a System's Arbiters.
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
}

impl Spawns for Runner {
    fn cycle(&mut self, actors: usize) -> Result<Cycle, String> {
        let arbiters: Vec<ArbiterHandle> = (0..self.arbiters.len())
            .map(|i| self.arbiters.handle(i))
            .collect();
        self.arbiters.block_on(async move {
            let started = Arc::new((Latch::new(actors), AtomicU64::new(0)));
            let stopped = Arc::new((Latch::new(actors), AtomicU64::new(0)));
            let mut refs = Vec::with_capacity(actors);
            let before = rss_bytes();
            let t0 = Instant::now();
            for i in 0..actors {
                let (a, b) = (started.clone(), stopped.clone());
                refs.push(Idle::start_in_arbiter(
                    &arbiters[i % arbiters.len()],
                    move |_| Idle {
                        started: a,
                        stopped: b,
                    },
                ));
            }
            started.0.wait("the actors' start").await?;
            let grown = rss_bytes() - before;
            for r in &refs {
                r.do_send(Stop);
            }
            stopped.0.wait("the actors' stop").await?;
            Ok(Cycle {
                ns: t0.elapsed().as_nanos() as f64,
                grown,
                refs: (refs.capacity() * std::mem::size_of::<Addr<Idle>>()) as f64,
                started: started.1.load(Ordering::Relaxed),
                stopped: stopped.1.load(Ordering::Relaxed),
            })
        })
    }
}

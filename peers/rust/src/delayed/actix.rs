//! Delayed messages on actix: each worker answers its job with
//! `ctx.run_later(delay, ..)`, actix's timer in the actor's context, whose
//! closure sends the reply (`do_send`). Jobs are sent with `do_send`; the
//! workers are spread round-robin over the Arbiters, the manager on the
//! first.

use std::time::{Duration, Instant};

use ::actix::prelude::*;
use tokio::sync::oneshot;

use super::{Runs, Seen, Tally, WORKERS};
use crate::actix_system::Arbiters;
use crate::harness::RUN_DEADLINE;

struct Manager {
    tally: Option<Tally>,
    done: Option<oneshot::Sender<Tally>>,
}

impl Actor for Manager {
    type Context = Context<Self>;
}

/// The answer to job `id`, due at `due`.
#[derive(Message)]
#[rtype(result = "()")]
struct Reply {
    id: usize,
    due: Instant,
}

impl Handler<Reply> for Manager {
    type Result = ();

    fn handle(&mut self, Reply { id, due }: Reply, ctx: &mut Context<Self>) {
        if let Some(tally) = self.tally.as_mut() {
            if tally.reply(id, due) {
                if let (Some(done), Some(t)) = (self.done.take(), self.tally.take()) {
                    let _ = done.send(t);
                }
                ctx.stop();
            }
        }
    }
}

struct Worker {
    manager: Addr<Manager>,
    delay: Duration,
}

impl Actor for Worker {
    type Context = Context<Self>;
}

/// Job `id`.
#[derive(Message)]
#[rtype(result = "()")]
struct Job(usize);

impl Handler<Job> for Worker {
    type Result = ();

    fn handle(&mut self, Job(id): Job, ctx: &mut Context<Self>) {
        let due = Instant::now() + self.delay;
        ctx.run_later(self.delay, move |worker, _| {
            worker.manager.do_send(Reply { id, due });
        });
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

impl Handler<Stop> for Worker {
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
}

impl Runs for Runner {
    fn run(&mut self, jobs: usize, delay: Duration) -> Result<(f64, Seen), String> {
        let arbiters: Vec<ArbiterHandle> = (0..self.arbiters.len())
            .map(|i| self.arbiters.handle(i))
            .collect();
        self.arbiters.block_on(async move {
            let (done, tally) = oneshot::channel();
            let manager = Manager::start_in_arbiter(&arbiters[0], move |_| Manager {
                tally: Some(Tally::new(jobs)),
                done: Some(done),
            });
            let workers: Vec<Addr<Worker>> = (0..WORKERS)
                .map(|i| {
                    let manager = manager.clone();
                    Worker::start_in_arbiter(&arbiters[i % arbiters.len()], move |_| Worker {
                        manager,
                        delay,
                    })
                })
                .collect();
            let t0 = Instant::now();
            for id in 0..jobs {
                workers[id % WORKERS].do_send(Job(id));
            }
            let tally = tokio::time::timeout(RUN_DEADLINE, tally)
                .await
                .map_err(|_| "not every job was answered".to_string())?
                .map_err(|_| "the manager stopped without its tally".to_string())?;
            let total = t0.elapsed().as_secs_f64();
            for w in &workers {
                w.do_send(Stop);
            }
            Ok((total, tally.into_seen()))
        })
    }
}

//! Delayed messages on kameo: each worker answers its job with
//! `tell(reply).send_after(delay)`, kameo's own delayed send (a tokio task
//! that sleeps, then sends). Jobs are sent with `tell(..).await` into the
//! workers' default bounded mailboxes (64), so a producer faster than the
//! workers waits for room, as troupe's bounded workers make it.

use std::time::{Duration, Instant};

use ::kameo::prelude::*;
use tokio::sync::oneshot;

use super::{Runs, Seen, Tally, WORKERS};
use crate::harness::{tokio_runtime, RUN_DEADLINE};

struct Manager {
    tally: Option<Tally>,
    done: Option<oneshot::Sender<Tally>>,
}

impl Actor for Manager {
    type Args = Self;
    type Error = ::kameo::error::Infallible;

    async fn on_start(state: Self, _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(state)
    }
}

/// The answer to job `id`, due at `due`.
struct Reply {
    id: usize,
    due: Instant,
}

impl Message<Reply> for Manager {
    type Reply = ();

    async fn handle(&mut self, Reply { id, due }: Reply, ctx: &mut Context<Self, ()>) {
        let Some(tally) = self.tally.as_mut() else {
            return;
        };
        if tally.reply(id, due) {
            if let (Some(done), Some(t)) = (self.done.take(), self.tally.take()) {
                let _ = done.send(t);
            }
            ctx.stop();
        }
    }
}

#[derive(Actor)]
struct Worker {
    manager: ActorRef<Manager>,
    delay: Duration,
}

/// Job `id`.
struct Job(usize);

impl Message<Job> for Worker {
    type Reply = ();

    async fn handle(&mut self, Job(id): Job, _: &mut Context<Self, ()>) {
        let due = Instant::now() + self.delay;
        // Fire and forget (the handle could cancel it); a refused reply
        // leaves its job unanswered, which the run's check counts.
        drop(self.manager.tell(Reply { id, due }).send_after(self.delay));
    }
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

impl Runs for Runner {
    fn run(&mut self, jobs: usize, delay: Duration) -> Result<(f64, Seen), String> {
        self.rt.block_on(async {
            let (done, tally) = oneshot::channel();
            let manager = Manager::spawn(Manager {
                tally: Some(Tally::new(jobs)),
                done: Some(done),
            });
            let workers: Vec<ActorRef<Worker>> = (0..WORKERS)
                .map(|_| {
                    Worker::spawn(Worker {
                        manager: manager.clone(),
                        delay,
                    })
                })
                .collect();
            let t0 = Instant::now();
            for id in 0..jobs {
                workers[id % WORKERS]
                    .tell(Job(id))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let tally = tokio::time::timeout(RUN_DEADLINE, tally)
                .await
                .map_err(|_| "not every job was answered".to_string())?
                .map_err(|_| "the manager stopped without its tally".to_string())?;
            let total = t0.elapsed().as_secs_f64();
            for w in &workers {
                w.stop_gracefully().await.map_err(|e| e.to_string())?;
            }
            Ok((total, tally.into_seen()))
        })
    }
}

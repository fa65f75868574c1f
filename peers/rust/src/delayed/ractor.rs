//! Delayed messages on ractor: each worker answers its job with
//! `ActorRef::send_after(delay, || reply)`, ractor's timer (a task that
//! sleeps, then sends). Jobs are sent with `cast` (ractor's mailboxes are
//! unbounded).

use std::time::{Duration, Instant};

use ::ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use super::{Runs, Seen, Tally, WORKERS};
use crate::harness::{tokio_runtime, RUN_DEADLINE};

struct Manager;

struct ManagerState {
    tally: Option<Tally>,
    done: Option<oneshot::Sender<Tally>>,
}

/// The answer to job `id`, due at `due`.
struct Reply {
    id: usize,
    due: Instant,
}

impl Actor for Manager {
    type Msg = Reply;
    type State = ManagerState;
    type Arguments = ManagerState;

    async fn pre_start(
        &self,
        _: ActorRef<Reply>,
        state: ManagerState,
    ) -> Result<ManagerState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Reply>,
        Reply { id, due }: Reply,
        s: &mut ManagerState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(tally) = s.tally.as_mut() {
            if tally.reply(id, due) {
                if let (Some(done), Some(t)) = (s.done.take(), s.tally.take()) {
                    let _ = done.send(t);
                }
                myself.stop(None);
            }
        }
        Ok(())
    }
}

struct Worker;

/// Job `id`.
struct Job(usize);

impl Actor for Worker {
    type Msg = Job;
    type State = (ActorRef<Reply>, Duration);
    type Arguments = (ActorRef<Reply>, Duration);

    async fn pre_start(
        &self,
        _: ActorRef<Job>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<Job>,
        Job(id): Job,
        (manager, delay): &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let due = Instant::now() + *delay;
        // A refused reply leaves its job unanswered: the run's check counts it.
        manager.send_after(*delay, move || Reply { id, due });
        Ok(())
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
            let state = ManagerState {
                tally: Some(Tally::new(jobs)),
                done: Some(done),
            };
            let (manager, _) = Actor::spawn(None, Manager, state)
                .await
                .map_err(|e| e.to_string())?;
            let mut workers = Vec::with_capacity(WORKERS);
            for _ in 0..WORKERS {
                let (w, h) = Actor::spawn(None, Worker, (manager.clone(), delay))
                    .await
                    .map_err(|e| e.to_string())?;
                workers.push((w, h));
            }
            let t0 = Instant::now();
            for id in 0..jobs {
                workers[id % WORKERS]
                    .0
                    .cast(Job(id))
                    .map_err(|e| e.to_string())?;
            }
            let tally = tokio::time::timeout(RUN_DEADLINE, tally)
                .await
                .map_err(|_| "not every job was answered".to_string())?
                .map_err(|_| "the manager stopped without its tally".to_string())?;
            let total = t0.elapsed().as_secs_f64();
            for (w, h) in workers {
                w.stop(None);
                h.await.map_err(|e| e.to_string())?;
            }
            Ok((total, tally.into_seen()))
        })
    }
}

//! Spawn and stop on ractor: `Actor::spawn` (which returns once the actor's
//! `pre_start` has run), `stop` and the actor's join handle.

use std::time::Instant;

use ::ractor::{Actor, ActorProcessingErr, ActorRef};

use super::{rss_bytes, Cycle, Spawns};
use crate::harness::tokio_runtime;

struct Idle;

impl Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

/// Cycles on a tokio runtime.
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

impl Spawns for Runner {
    fn cycle(&mut self, actors: usize) -> Result<Cycle, String> {
        self.rt.block_on(async {
            let mut refs = Vec::with_capacity(actors);
            let before = rss_bytes();
            let t0 = Instant::now();
            for _ in 0..actors {
                refs.push(
                    Actor::spawn(None, Idle, ())
                        .await
                        .map_err(|e| e.to_string())?,
                );
            }
            // `Actor::spawn` returns once `pre_start` has run: every
            // reference held is a started actor.
            let started = refs.len() as u64;
            let grown = rss_bytes() - before;
            for (r, _) in &refs {
                r.stop(None);
            }
            let mut stopped = 0;
            let size = std::mem::size_of_val(&refs[0]);
            let capacity = refs.capacity();
            for (_, handle) in refs {
                handle.await.map_err(|e| e.to_string())?;
                stopped += 1;
            }
            Ok(Cycle {
                ns: t0.elapsed().as_nanos() as f64,
                grown,
                refs: (capacity * size) as f64,
                started,
                stopped,
            })
        })
    }
}

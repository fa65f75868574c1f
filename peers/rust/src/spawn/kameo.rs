//! Spawn and stop on kameo: `Spawn::spawn` (the default bounded mailbox),
//! `wait_for_startup`, `stop_gracefully` and `wait_for_shutdown`.

use std::time::Instant;

use ::kameo::prelude::*;

use super::{rss_bytes, Cycle, Spawns};
use crate::harness::tokio_runtime;

#[derive(Actor)]
struct Idle;

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
                refs.push(Idle::spawn(Idle));
            }
            let mut started = 0;
            for r in &refs {
                r.wait_for_startup().await;
                started += u64::from(r.is_alive());
            }
            let grown = rss_bytes() - before;
            for r in &refs {
                r.stop_gracefully().await.map_err(|e| e.to_string())?;
            }
            let mut stopped = 0;
            for r in &refs {
                r.wait_for_shutdown().await;
                stopped += u64::from(!r.is_alive());
            }
            Ok(Cycle {
                ns: t0.elapsed().as_nanos() as f64,
                grown,
                refs: (refs.capacity() * std::mem::size_of::<ActorRef<Idle>>()) as f64,
                started,
                stopped,
            })
        })
    }
}

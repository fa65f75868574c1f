//! actix's runtime for a run: a `System` (its own thread, the caller's,
//! drives the measuring code) and `threads` Arbiters, each a thread with
//! its own single-threaded event loop, on which the actors are started
//! with `start_in_arbiter`. Running the actors on Arbiters rather than on
//! the System's thread keeps the shape of troupe's rows and of the tokio
//! runtimes here: N threads run the actors, the caller's thread waits.

use std::future::Future;

use ::actix::prelude::*;

/// A System and its Arbiters, stopped and joined when dropped.
pub struct Arbiters {
    system: SystemRunner,
    arbiters: Vec<Arbiter>,
}

impl Arbiters {
    /// A System with `threads` Arbiters.
    pub fn new(threads: usize) -> Arbiters {
        let system = System::new();
        let arbiters = system.block_on(async { (0..threads).map(|_| Arbiter::new()).collect() });
        Arbiters { system, arbiters }
    }

    /// The Arbiters.
    pub fn len(&self) -> usize {
        self.arbiters.len()
    }

    /// Arbiter `i` (modulo their number), to start an actor on.
    pub fn handle(&self, i: usize) -> ArbiterHandle {
        self.arbiters[i % self.arbiters.len()].handle()
    }

    /// Runs `f` on the System's thread until it completes.
    pub fn block_on<T>(&self, f: impl Future<Output = T>) -> T {
        self.system.block_on(f)
    }
}

impl Drop for Arbiters {
    fn drop(&mut self) {
        for a in self.arbiters.drain(..) {
            a.stop();
            let _ = a.join();
        }
    }
}

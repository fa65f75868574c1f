//! The troupe ping-pong rows: two actors bounce a numbered ball, one message
//! in flight, under one dispatcher setting per row.
//!
//! The pinger sends `Ping(i)`, the ponger answers `Pong(i)`, and the pinger
//! sends the next ping until `repetitions` round trips are done, then reports
//! on a channel. Each actor counts what it received and checks the sequence
//! numbers, so a lost, duplicated or reordered message fails the row. The
//! ponger learns the pinger's address once per game, so a hop carries a plain
//! number (as the busy-spin baseline does) and no reference-count traffic.

use std::sync::mpsc;
use std::time::Duration;

use troupe::prelude::*;

use crate::experiments::pingpong::hops;
use crate::runner::{expect_eq, Stopwatch, Workload, WorkloadError};
use crate::shared::SystemGuard;

/// A dispatcher setting for one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// A work-stealing pool of `workers` threads with throughput `throughput`.
    Pool {
        /// Worker threads.
        workers: usize,
        /// Messages per actor per run.
        throughput: usize,
    },
    /// Each actor on a thread of its own (the post's pinned configuration).
    Pinned,
}

impl Setting {
    fn variant(self) -> String {
        match self {
            Setting::Pool {
                workers,
                throughput,
            } => format!("actor-tp{throughput}-w{workers}"),
            Setting::Pinned => "actor-pinned".to_string(),
        }
    }
}

/// Starts a game of `n` round trips against `peer`.
struct Serve {
    peer: ActorRef<Msg>,
    n: u64,
    done: mpsc::Sender<u64>,
}

/// Boxed `Serve` keeps the message small (24 bytes): the hops carry a number.
enum Msg {
    Serve(Box<Serve>),
    /// Tells the ponger whom to answer.
    Hello(ActorRef<Msg>),
    Ping(u64),
    Pong(u64),
}

#[derive(Default)]
struct Player {
    peer: Option<ActorRef<Msg>>,
    target: u64,
    received: u64,
    done: Option<mpsc::Sender<u64>>,
    fault: Option<String>,
}

impl Actor for Player {
    type Msg = Msg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Serve(serve) => {
                let Serve { peer, n, done } = *serve;
                self.target = n;
                self.received = 0;
                self.done = Some(done);
                peer.tell(Msg::Hello(ctx.myself()));
                peer.tell(Msg::Ping(1));
                self.peer = Some(peer);
            }
            Msg::Hello(pinger) => {
                self.received = 0;
                self.peer = Some(pinger);
            }
            Msg::Ping(i) => {
                self.received += 1;
                if i != self.received && self.fault.is_none() {
                    self.fault = Some(format!("ping {i} arrived as number {}", self.received));
                }
                self.peer.as_ref().expect("said hello").tell(Msg::Pong(i));
            }
            Msg::Pong(i) => {
                self.received += 1;
                if i != self.received {
                    self.fault = Some(format!("pong {i} arrived as number {}", self.received));
                }
                if i < self.target && self.fault.is_none() {
                    self.peer.as_ref().expect("served").tell(Msg::Ping(i + 1));
                } else if let Some(done) = self.done.take() {
                    let _ = done.send(if self.fault.is_some() {
                        0
                    } else {
                        self.received
                    });
                }
            }
        }
    }
}

/// The ping-pong row for `setting`.
pub fn workload(setting: Setting, repetitions: u64) -> Workload {
    let (workers, throughput, pinned) = match setting {
        Setting::Pool {
            workers,
            throughput,
        } => (workers, throughput, false),
        Setting::Pinned => (2, 1, true),
    };
    Workload::with_setup(setting.variant(), move || {
        let mut builder = ActorSystem::builder()
            .name("pingpong")
            .threads(workers)
            .throughput(throughput);
        if pinned {
            builder = builder.dispatcher("pinned", DispatcherConfig::pinned().throughput(1));
        }
        let system = builder
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let props = || {
            let p = Props::new(Player::default);
            if pinned {
                p.dispatcher("pinned")
            } else {
                p
            }
        };
        let spawn = |p| {
            system
                .spawn(p)
                .map_err(|e| WorkloadError::new(e.to_string()))
        };
        let (pinger, ponger) = (spawn(props())?, spawn(props())?);
        let guard = SystemGuard(system);
        Ok(move || {
            let _keep = &guard;
            let expected = hops(repetitions)?;
            let (tx, rx) = mpsc::channel();
            let clock = Stopwatch::start();
            pinger.tell(Msg::Serve(Box::new(Serve {
                peer: ponger.clone(),
                n: repetitions,
                done: tx,
            })));
            let pongs = rx
                .recv_timeout(Duration::from_secs(600))
                .map_err(|_| WorkloadError::new("the game did not finish within 600 s"))?;
            let sample = clock.stop(expected);
            expect_eq("pongs received in order", repetitions, pongs)?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("workers", if pinned { 0 } else { workers })
    .param("throughput", throughput)
    .param("pinned", pinned)
    .param("repetitions", repetitions)
}

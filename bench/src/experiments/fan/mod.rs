//! Fan-in and fan-out (docs/experiments.md, fan): how fast many actors feed
//! one, and one feeds many.
//!
//! - `fan-in-4`: 4 producer actors each send M/4 numbered messages to one
//!   consumer actor, which counts them and checks that each producer's
//!   arrive in order.
//! - `fan-out-32`: one producer actor sends M numbered messages
//!   round-robin to 32 worker actors, each of which counts its own and
//!   checks their order.
//!
//! The actors are spawned for each run, outside the clock; the clock runs
//! from the producers' start to the last message handled, and `ns_per_msg`
//! is that time over the messages. Both rows run on a pool of the
//! machine's cores (throughput 5, troupe's default), and so do the Rust
//! peers' twins ([`rust_peers`]).

mod experiment;
pub mod rust_peers;

use std::sync::Arc;
use std::time::Duration;

use troupe::prelude::*;

pub use experiment::Fan;

use crate::report::Row;
use crate::runner::{expect_eq, RunOptions, Scale, Stopwatch, Workload, WorkloadError};
use crate::shared::{run_experiment, Countdown, SystemGuard};

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "fan";

/// Producers of the fan-in.
pub const PRODUCERS: usize = 4;
/// Workers of the fan-out.
pub const WORKERS: usize = 32;

/// The sizes of a run.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Messages per run (divided among the producers or the workers).
    pub msgs: u64,
    /// Worker threads of the pool.
    pub workers: usize,
}

impl Settings {
    /// The sizes for a scale.
    pub fn for_scale(scale: Scale) -> Self {
        Settings {
            msgs: match scale {
                Scale::Quick => 200_000,
                Scale::Default => 2_000_000,
                Scale::Full => 20_000_000,
            },
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

enum ReceiverMsg {
    /// Message `seq` of producer `from`.
    Item { from: usize, seq: u64 },
    /// Asks for (received, out of order).
    Counts(ReplyTo<(u64, u64)>),
}

struct Receiver {
    next: Vec<u64>,
    received: u64,
    disorder: u64,
    expected: u64,
    done: Arc<Countdown>,
}

impl Actor for Receiver {
    type Msg = ReceiverMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ReceiverMsg) {
        match msg {
            ReceiverMsg::Item { from, seq } => {
                self.received += 1;
                self.disorder += u64::from(self.next[from] != seq);
                self.next[from] = seq + 1;
                if self.received == self.expected {
                    self.done.count_down();
                }
            }
            ReceiverMsg::Counts(reply) => {
                reply.reply((self.received, self.disorder));
            }
        }
    }
}

/// Send `n` messages round-robin to `to`.
struct Produce {
    to: Arc<Vec<ActorRef<ReceiverMsg>>>,
    n: u64,
}

struct Producer {
    id: usize,
}

impl Actor for Producer {
    type Msg = Produce;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, Produce { to, n }: Produce) {
        let k = to.len() as u64;
        for seq in 0..n {
            to[(seq % k) as usize].tell(ReceiverMsg::Item {
                from: self.id,
                seq: seq / k,
            });
        }
    }
}

/// A row of `producers` producers sending `per_producer` messages each to
/// `receivers` receivers.
fn workload(
    variant: &str,
    producers: usize,
    receivers: usize,
    per_producer: u64,
    workers: usize,
) -> Workload {
    let total = per_producer * producers as u64;
    let expected = total / receivers as u64;
    Workload::with_setup(variant, move || {
        let system = ActorSystem::builder()
            .name("fan")
            .threads(workers)
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let guard = SystemGuard(system);
        let done = Arc::new(Countdown::new());
        Ok(move || {
            let spawn = |e| WorkloadError::new(format!("cannot spawn: {e}"));
            done.arm(receivers);
            let to: Vec<ActorRef<ReceiverMsg>> = (0..receivers)
                .map(|_| {
                    let done = done.clone();
                    guard.0.spawn(Props::new(move || Receiver {
                        next: vec![0; producers],
                        received: 0,
                        disorder: 0,
                        expected,
                        done: done.clone(),
                    }))
                })
                .collect::<Result<_, _>>()
                .map_err(spawn)?;
            let from: Vec<ActorRef<Produce>> = (0..producers)
                .map(|id| guard.0.spawn(Props::new(move || Producer { id })))
                .collect::<Result<_, _>>()
                .map_err(spawn)?;
            let to = Arc::new(to);
            let clock = Stopwatch::start();
            for p in &from {
                p.tell(Produce {
                    to: to.clone(),
                    n: per_producer,
                });
            }
            done.wait("the fan")?;
            let sample = clock.stop(total);
            let (mut received, mut disorder) = (0, 0);
            for r in to.iter() {
                let (n, d) = r
                    .ask(ReceiverMsg::Counts, Duration::from_secs(30))
                    .wait()
                    .map_err(|e| WorkloadError::new(e.to_string()))?;
                received += n;
                disorder += d;
                guard.0.stop(r);
            }
            for p in &from {
                guard.0.stop(p);
            }
            expect_eq("messages received", total, received)?;
            expect_eq("messages out of order", 0, disorder)?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("producers", producers)
    .param("receivers", receivers)
    .param("workers", workers)
}

/// The fan-in and fan-out rows.
pub fn workloads(s: &Settings) -> Vec<Workload> {
    vec![
        workload(
            "fan-in-4",
            PRODUCERS,
            1,
            s.msgs / PRODUCERS as u64,
            s.workers,
        ),
        workload(
            "fan-out-32",
            1,
            WORKERS,
            s.msgs / WORKERS as u64 * WORKERS as u64,
            s.workers,
        ),
    ]
}

/// Runs the selected rows.
pub fn run(s: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    run_experiment(EXPERIMENT, workloads(s), options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_delivers_every_message_in_order() {
        let _machine = crate::runner::tests::one_experiment_at_a_time();
        let options = RunOptions {
            repeats: 1,
            filter: None,
        };
        let rows = run(
            &Settings {
                msgs: 3_200,
                workers: 2,
            },
            &options,
        )
        .unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.variant.as_str()).collect();
        assert_eq!(names, ["fan-in-4", "fan-out-32"]);
        assert!(rows.iter().all(|r| r.msgs == 3_200 && r.failure.is_none()));
    }
}

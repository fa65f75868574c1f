//! Ping-pong between two tokio tasks over two bounded `tokio::sync::mpsc`
//! channels: the closest thing to an actor pair that a Rust programmer would
//! write without an actor runtime, and so the baseline the troupe actor rows
//! have to beat.
//!
//! The ping task sends `i` and waits for `i` back; the pong task echoes every
//! value it receives until the ping side hangs up. The channels are bounded
//! (capacity 1 by default) because only one message is ever in flight, and a
//! bounded channel is what a careful user would pick.
//!
//! The runtime is built once per row, outside the clock, and reused by the
//! warm-up and every measured run, so that a run measures message passing
//! and not thread start-up.

use tokio::runtime::{Builder, Runtime};
use tokio::sync::mpsc;

use crate::experiments::pingpong;
use crate::runner::{expect_eq, Sample, Stopwatch, Workload, WorkloadError};

/// Which tokio scheduler runs the two tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Both tasks on the one thread that calls `block_on`: no cross-thread
    /// wake-ups at all.
    CurrentThread,
    /// The work-stealing scheduler with this many worker threads.
    MultiThread {
        /// Worker threads.
        workers: usize,
    },
}

impl Flavor {
    /// The variant name in tables and JSON.
    pub fn variant(self) -> String {
        match self {
            Flavor::CurrentThread => "tokio-mpsc-ct".to_string(),
            Flavor::MultiThread { workers } => format!("tokio-mpsc-mt-w{workers}"),
        }
    }

    fn runtime_name(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current_thread",
            Flavor::MultiThread { .. } => "multi_thread",
        }
    }

    fn workers(self) -> usize {
        match self {
            Flavor::CurrentThread => 1,
            Flavor::MultiThread { workers } => workers,
        }
    }

    fn build(self) -> std::io::Result<Runtime> {
        match self {
            Flavor::CurrentThread => Builder::new_current_thread().build(),
            Flavor::MultiThread { workers } => Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("tokio-mpsc-worker")
                .build(),
        }
    }
}

/// The tokio row for `flavor`: `repetitions` round trips over channels of
/// `capacity`.
pub fn workload(flavor: Flavor, repetitions: u64, capacity: usize) -> Workload {
    Workload::with_setup(flavor.variant(), move || {
        let runtime = flavor
            .build()
            .map_err(|e| WorkloadError::new(format!("cannot build the tokio runtime: {e}")))?;
        Ok(move || run(&runtime, repetitions, capacity))
    })
    .param("runtime", "baseline")
    .param("flavor", flavor.runtime_name())
    .param("workers", flavor.workers())
    .param("capacity", capacity)
    .param("repetitions", repetitions)
}

/// Runs `repetitions` round trips on `runtime` and returns the time per
/// one-way hop (`msgs` = 2 × repetitions), after checking that every value
/// came back in order and the pong task echoed each one exactly once.
pub fn run(runtime: &Runtime, repetitions: u64, capacity: usize) -> Result<Sample, WorkloadError> {
    let msgs = pingpong::hops(repetitions)?;
    if capacity == 0 {
        return Err(WorkloadError::new(
            "tokio channels need a capacity of at least 1",
        ));
    }
    runtime.block_on(async move {
        let (ping_tx, mut ping_rx) = mpsc::channel::<u64>(capacity);
        let (pong_tx, mut pong_rx) = mpsc::channel::<u64>(capacity);
        let ponger = tokio::spawn(async move {
            let mut echoed = 0u64;
            while let Some(value) = ping_rx.recv().await {
                if pong_tx.send(value).await.is_err() {
                    break;
                }
                echoed += 1;
            }
            echoed
        });
        // Both tasks are spawned rather than one running inside `block_on`,
        // because on the multi-thread runtime `block_on` runs on the calling
        // thread, which is not one of the workers being measured.
        let pinger = tokio::spawn(async move {
            let clock = Stopwatch::start();
            for i in 0..repetitions {
                ping_tx
                    .send(i)
                    .await
                    .map_err(|_| WorkloadError::new("the pong task hung up early"))?;
                match pong_rx.recv().await {
                    Some(value) => expect_eq("value echoed by the pong task", i, value)?,
                    None => return Err(WorkloadError::new("the pong task hung up early")),
                }
            }
            // Returning drops `ping_tx`, which ends the pong task's loop.
            Ok(clock.stop(msgs))
        });
        let sample = pinger
            .await
            .map_err(|e| WorkloadError::new(format!("the ping task failed: {e}")))??;
        let echoed = ponger
            .await
            .map_err(|e| WorkloadError::new(format!("the pong task failed: {e}")))?;
        expect_eq("values echoed by the pong task", repetitions, echoed)?;
        Ok(sample)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_thread_run_validates_and_counts_two_hops_per_repetition() {
        let runtime = Flavor::MultiThread { workers: 2 }.build().unwrap();
        let sample = run(&runtime, 1_000, 1).unwrap();
        assert_eq!(sample.msgs, 2_000);
    }

    #[test]
    fn current_thread_run_validates() {
        let runtime = Flavor::CurrentThread.build().unwrap();
        assert_eq!(run(&runtime, 1_000, 4).unwrap().msgs, 2_000);
    }

    #[test]
    fn variant_names_say_the_scheduler() {
        assert_eq!(Flavor::CurrentThread.variant(), "tokio-mpsc-ct");
        assert_eq!(
            Flavor::MultiThread { workers: 2 }.variant(),
            "tokio-mpsc-mt-w2"
        );
    }

    #[test]
    fn zero_capacity_is_refused_instead_of_panicking() {
        let runtime = Flavor::CurrentThread.build().unwrap();
        assert!(run(&runtime, 10, 0).is_err());
    }
}

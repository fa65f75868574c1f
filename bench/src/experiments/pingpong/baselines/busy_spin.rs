//! The busy-spin ping-pong of the ping-pong experiment (see
//! docs/experiments.md, ping-pong; originally a workshop exercise):
//! two threads hand a counter back and forth through two atomic words, each
//! spinning until the other has answered. It is the floor for a one-way hop
//! between two cores: one cache line travelling each way, nothing else.
//!
//! # Protocol
//!
//! - The ping thread writes `ping = i`, then spins until `pong == i`.
//! - The pong thread spins until `ping == i`, then writes `pong = i`.
//! - Both words start at [`NONE`], a value the counter never takes (it stops
//!   below `repetitions`, which is at most `u64::MAX`), so that
//!   neither thread can mistake the initial state for repetition 0.
//! - A start gate opens only once both threads exist (a lone spinner would
//!   wait for its partner forever), and the ping thread starts the clock only
//!   once the pong thread is running.
//!
//! Each word has one writer, so plain stores suffice. Release stores and
//! acquire loads are what a Java `volatile` read gives; Java's `volatile`
//! store also adds a full fence, which this baseline leaves out because the
//! hop does not need it. That makes it, if anything, a slightly faster floor
//! than the post's.
//!
//! The spin loops deliberately have no `spin_loop` hint, as in the original:
//! on x86 the `pause` it emits can cost more than the hop being measured.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::thread;

use crate::experiments::pingpong;
use crate::runner::{expect_eq, Sample, Stopwatch, Workload, WorkloadError};

/// The variant name in tables and JSON.
pub const VARIANT: &str = "busy-spin";

/// The value of both words before the first repetition.
const NONE: u64 = u64::MAX;

/// The start gate is closed until both threads have been spawned.
const GATE_CLOSED: u8 = 0;
/// Both threads exist: run.
const GATE_OPEN: u8 = 1;
/// A thread could not be spawned: the other returns without running.
const GATE_ABORT: u8 = 2;

/// The busy-spin row: `repetitions` round trips, two one-way hops each.
pub fn workload(repetitions: u64) -> Workload {
    Workload::new(VARIANT, move || run(repetitions))
        .param("runtime", "baseline")
        .param("repetitions", repetitions)
        .param("threads", 2)
        .param("pinned", false)
}

/// Runs `repetitions` round trips and returns the time per one-way hop
/// (`msgs` = 2 × repetitions), after checking that both words ended on the
/// last repetition.
pub fn run(repetitions: u64) -> Result<Sample, WorkloadError> {
    let msgs = pingpong::hops(repetitions)?;
    let ping = AtomicU64::new(NONE);
    let pong = AtomicU64::new(NONE);
    let gate = AtomicU8::new(GATE_CLOSED);
    let pong_running = AtomicBool::new(false);
    let (pinger, ponger) = thread::scope(|scope| {
        let ponger = thread::Builder::new()
            .name("busy-spin-pong".into())
            .spawn_scoped(scope, || {
                if !wait_for_gate(&gate) {
                    return None;
                }
                pong_running.store(true, Ordering::Release);
                let mut answered = 0u64;
                for i in 0..repetitions {
                    while ping.load(Ordering::Acquire) != i {}
                    pong.store(i, Ordering::Release);
                    answered += 1;
                }
                Some(answered)
            });
        let pinger = thread::Builder::new()
            .name("busy-spin-ping".into())
            .spawn_scoped(scope, || {
                if !wait_for_gate(&gate) {
                    return None;
                }
                // The clock starts once both threads run, so that thread
                // start-up is not part of the first hop.
                while !pong_running.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                let clock = Stopwatch::start();
                for i in 0..repetitions {
                    ping.store(i, Ordering::Release);
                    while pong.load(Ordering::Acquire) != i {}
                }
                Some(clock.stop(msgs))
            });
        // The gate opens only when both threads exist: a lone thread would
        // spin forever waiting for its partner, and the scope would never end.
        let both = ponger.is_ok() && pinger.is_ok();
        gate.store(if both { GATE_OPEN } else { GATE_ABORT }, Ordering::Release);
        (join(pinger, "ping"), join(ponger, "pong"))
    });
    let (sample, answered) = match (pinger?, ponger?) {
        (Some(sample), Some(answered)) => (sample, answered),
        _ => return Err(WorkloadError::new("a busy-spin thread did not run")),
    };
    expect_eq(
        "repetitions answered by the pong thread",
        repetitions,
        answered,
    )?;
    expect_eq(
        "final ping value",
        repetitions - 1,
        ping.load(Ordering::Acquire),
    )?;
    expect_eq(
        "final pong value",
        repetitions - 1,
        pong.load(Ordering::Acquire),
    )?;
    Ok(sample)
}

/// Waits for a busy-spin thread, turning a failed spawn or a panic into an
/// error that names the thread's role.
fn join<T>(
    handle: io::Result<thread::ScopedJoinHandle<'_, Option<T>>>,
    role: &str,
) -> Result<Option<T>, WorkloadError> {
    let handle =
        handle.map_err(|e| WorkloadError::new(format!("cannot spawn the {role} thread: {e}")))?;
    handle
        .join()
        .map_err(|_| WorkloadError::new(format!("the {role} thread panicked")))
}

/// Waits until the gate leaves [`GATE_CLOSED`]; true if it opened.
///
/// This wait happens before the clock starts, so it yields instead of
/// spinning hard: the other thread may still be starting on the same core.
fn wait_for_gate(gate: &AtomicU8) -> bool {
    loop {
        match gate.load(Ordering::Acquire) {
            GATE_CLOSED => thread::yield_now(),
            state => return state == GATE_OPEN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_validates_and_counts_two_hops_per_repetition() {
        let _machine = crate::runner::tests::one_experiment_at_a_time();
        // Small, because on a loaded 2-core machine a preempted spinner can
        // make each hop wait for a scheduler tick.
        let sample = run(1_000).unwrap();
        assert_eq!(sample.msgs, 2_000);
    }

    #[test]
    fn zero_repetitions_is_refused() {
        assert!(run(0).is_err());
    }
}

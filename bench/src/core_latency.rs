//! The machine's own cost of moving a cache line between two CPUs: two
//! threads hand one atomic counter back and forth and the round trip is
//! timed. On this project's virtual 2-CPU machine it is not a constant:
//! the hypervisor sometimes runs the two virtual CPUs close together
//! (about 55 ns a round trip) and sometimes far apart (about 330 ns), and
//! the mode changes over seconds to minutes. Every cross-thread message of
//! a runtime pays it, so a throughput row carries the probe taken before
//! and after it (`core_rtt_ns`): without it, a slow row cannot be told from
//! a slow runtime. See docs/experiments.md, "Reading the figures".

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The row parameter that carries the probes: `[before, after]` in ns.
pub const PARAM: &str = "core_rtt_ns";

/// The probe taken before a piece of work; [`Around::finish`] takes the
/// one after it and gives the parameter's value.
pub struct Around {
    before: f64,
}

impl Around {
    /// Probes now, before the work.
    pub fn start() -> Around {
        Around {
            before: round_trip_ns(),
        }
    }

    /// Probes again and returns `[before, after]`, rounded to whole ns.
    pub fn finish(self) -> serde_json::Value {
        serde_json::json!([self.before.round(), round_trip_ns().round()])
    }
}

/// Round trips per probe at most: a few tens of milliseconds in either mode.
const ROUND_TRIPS: u64 = 100_000;

/// Wall time per probe at most. When the two threads share one CPU (a
/// loaded machine, parallel tests, a container given one CPU) every hand-off
/// waits for the scheduler, and 100,000 of them would take minutes: the
/// probe then stops early and reports what the round trips it made cost.
const BUDGET: Duration = Duration::from_millis(50);

/// Spins before a waiting thread yields its CPU, so that a partner on the
/// same CPU gets to run; far more than a round trip takes on two CPUs.
const SPINS_BEFORE_YIELD: u32 = 1 << 14;

/// Written instead of the next odd value to tell the echo thread to stop.
const STOP: u64 = u64::MAX;

/// The counter alone on its cache lines (a neighbour would add traffic).
#[repr(align(128))]
struct Line(AtomicU64);

/// Median nanoseconds of one round trip of a cache line between two
/// threads, over three probes. The threads are not pinned: two spinning
/// threads on an otherwise idle 2-CPU machine run on different CPUs.
///
/// Both threads are the probe's own, and the caller only waits for them.
/// When the calling thread did the spinning itself, the kernel went on
/// treating it as CPU-bound for the next milliseconds and woke the row's
/// worker on the other CPU instead of its own; a row made of short
/// hand-offs between the calling thread and one worker (the chameneos
/// sweep's small games) then paid a wake-up across CPUs per game: about
/// 65 us a ten-creature game of one meeting instead of 8 us, measured on
/// the project's machine on 2026-11-26 with the probe on the caller's thread
/// and on threads of its own, alternated.
pub fn round_trip_ns() -> f64 {
    let mut probes: Vec<f64> = std::thread::spawn(|| (0..3).map(|_| probe()).collect())
        .join()
        .expect("the probe threads do not panic");
    probes.sort_by(f64::total_cmp);
    probes[1]
}

/// Waits until the line holds `want` (true) or [`STOP`] (false).
fn wait_for(line: &Line, want: u64) -> bool {
    let mut spins = 0u32;
    loop {
        match line.0.load(Ordering::Acquire) {
            v if v == want => return true,
            STOP => return false,
            _ => {}
        }
        spins += 1;
        if spins < SPINS_BEFORE_YIELD {
            std::hint::spin_loop();
        } else {
            spins = 0;
            std::thread::yield_now();
        }
    }
}

fn probe() -> f64 {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let other = line.clone();
    let echo = std::thread::spawn(move || {
        let mut i = 0;
        while wait_for(&other, 2 * i + 1) {
            other.0.store(2 * i + 2, Ordering::Release);
            i += 1;
        }
    });
    let start = Instant::now();
    let mut done = 0;
    while done < ROUND_TRIPS {
        line.0.store(2 * done + 1, Ordering::Release);
        wait_for(&line, 2 * done + 2);
        done += 1;
        // Reading the clock costs about as much as a round trip, so only
        // every 256th one looks at it.
        if done % 256 == 0 && start.elapsed() > BUDGET {
            break;
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / done as f64;
    line.0.store(STOP, Ordering::Release);
    echo.join().expect("the echo thread does not panic");
    ns
}

#[cfg(test)]
mod tests {
    /// A figure comes back, positive and finite. No upper bound: how long
    /// a round trip takes is the machine's (about 1 ms when its two CPUs
    /// are time-shared, or when the other tests of this binary keep them
    /// busy), a measurement for the bench rows, not a property to test.
    #[test]
    fn a_round_trip_takes_some_time() {
        let ns = super::round_trip_ns();
        assert!(ns > 0.0 && ns.is_finite(), "{ns}");
    }

    /// Both threads on one CPU: each hand-off waits for the other thread to
    /// be scheduled. Before the budget and the yield this took minutes (and
    /// hung a CI run whose tests shared the CPUs); now it returns. The
    /// probe runs in this test binary started again under `taskset`, as the
    /// crate has no unsafe code to set the affinity itself.
    #[test]
    fn two_threads_on_one_cpu_still_finish_a_probe() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new("taskset")
            .args(["-c", "0"])
            .arg(exe)
            .args(["--exact", "core_latency::tests::one_probe", "--ignored"])
            .output()
            .expect("taskset (util-linux) runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("1 passed"), "{stdout}");
    }

    /// Run by the test above on one CPU; ignored on its own.
    #[test]
    #[ignore = "run pinned by two_threads_on_one_cpu_still_finish_a_probe"]
    fn one_probe() {
        let ns = super::probe();
        assert!(ns > 0.0, "{ns}");
    }
}

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
use std::time::Instant;

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

/// Round trips per probe: a few tens of milliseconds in either mode.
const ROUND_TRIPS: u64 = 100_000;

/// The counter alone on its cache lines (a neighbour would add traffic).
#[repr(align(128))]
struct Line(AtomicU64);

/// Median nanoseconds of one round trip of a cache line between two
/// threads, over three probes. The threads are not pinned: two spinning
/// threads on an otherwise idle 2-CPU machine run on different CPUs.
pub fn round_trip_ns() -> f64 {
    let mut probes: Vec<f64> = (0..3).map(|_| probe()).collect();
    probes.sort_by(f64::total_cmp);
    probes[1]
}

fn probe() -> f64 {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let other = line.clone();
    let echo = std::thread::spawn(move || {
        for i in 0..ROUND_TRIPS {
            while other.0.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.0.store(2 * i + 2, Ordering::Release);
        }
    });
    let start = Instant::now();
    for i in 0..ROUND_TRIPS {
        line.0.store(2 * i + 1, Ordering::Release);
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / ROUND_TRIPS as f64;
    echo.join().expect("the echo thread does not panic");
    ns
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_round_trip_takes_some_time_and_less_than_a_millisecond() {
        let ns = super::round_trip_ns();
        assert!(ns > 0.0 && ns < 1e6, "{ns}");
    }
}

//! Micro-benchmark of the wheel (target: insert + fire under 100 ns per
//! timer, amortised). Each run inserts N timers into a fresh wheel of 4,096
//! first-level slots, then advances tick by tick until all have fired, and
//! checks that each fired at its own tick; a second phase inserts N timers
//! and cancels them all. Deadlines are either random over 1..=1000 ticks
//! (the hard case: a tick's timers are scattered over the slab) or
//! increasing with the insertion (what a scheduler sees for timers of one
//! delay). Prints the median, min and max of the runs and the memory taken.
//!
//! `cargo run --release -p troupe-timer --example wheel_bench -- [N] [RUNS] [random|increasing]`
//! (defaults: 10,000,000 timers, 5 runs, both spreads).

use std::time::Instant;

use troupe_timer::Wheel;

/// How deadlines are drawn.
#[derive(Clone, Copy, Debug)]
enum Spread {
    /// Uniform over 1..=1000 ticks.
    Random,
    /// `1000 + i / 10_000`: ten thousand timers per tick, in order.
    Increasing,
}

/// Deadlines for `n` timers (drawn before timing, so the timed loops only
/// insert).
fn deadlines(spread: Spread, n: u64) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| match spread {
            Spread::Random => {
                // xorshift64
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                1 + x % 1000
            }
            Spread::Increasing => 1000 + i / 10_000,
        })
        .collect()
}

/// One run's nanoseconds per timer and the wheel's footprint.
struct Sample {
    insert: f64,
    insert_fire: f64,
    cancel: f64,
    places: usize,
    heap_bytes: usize,
}

fn run_once(deadlines: &[u64]) -> Sample {
    let n = deadlines.len();
    let mut wheel = Wheel::new(4096, 0);
    let started = Instant::now();
    for (i, &deadline) in deadlines.iter().enumerate() {
        wheel.insert(deadline, i as u64);
    }
    let inserted = started.elapsed();
    let (mut fired, mut tick, mut late) = (0usize, 0u64, 0usize);
    while !wheel.is_empty() {
        tick += 1;
        wheel.advance_to(tick, |at, _, _| {
            fired += 1;
            late += usize::from(at != tick);
        });
    }
    let insert_fire = started.elapsed();
    assert_eq!((fired, late), (n, 0), "every timer fires once, at its tick");
    let (places, heap_bytes) = (wheel.places(), wheel.heap_bytes());

    // Cancel: the same timers again (reusing the fired places), then all
    // cancelled in insertion order.
    let keys: Vec<_> = deadlines
        .iter()
        .map(|&d| wheel.insert(tick + d, 0u64))
        .collect();
    let started = Instant::now();
    for &key in &keys {
        wheel.cancel(key);
    }
    let cancel = started.elapsed();
    assert!(wheel.is_empty());

    let per = |d: std::time::Duration| d.as_nanos() as f64 / n as f64;
    Sample {
        insert: per(inserted),
        insert_fire: per(insert_fire),
        cancel: per(cancel),
        places,
        heap_bytes,
    }
}

/// Median, min and max.
fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(10_000_000, |a| a.parse().expect("N"));
    let runs: usize = args.next().map_or(5, |a| a.parse().expect("RUNS"));
    let only = args.next();
    println!(
        "wheel_bench: {n} timers, {runs} runs, 4096 first-level slots, {} bytes per u64 timer",
        Wheel::<u64>::ENTRY_SIZE
    );
    for spread in [Spread::Random, Spread::Increasing] {
        if only
            .as_deref()
            .is_some_and(|o| !format!("{spread:?}").eq_ignore_ascii_case(o))
        {
            continue;
        }
        let deadlines = deadlines(spread, n);
        let samples: Vec<Sample> = (0..runs).map(|_| run_once(&deadlines)).collect();
        let show = |name: &str, f: fn(&Sample) -> f64| {
            let (median, min, max) = stats(samples.iter().map(f).collect());
            format!("{name} {median:.1} ns (min {min:.1}, max {max:.1})")
        };
        let last = &samples[samples.len() - 1];
        println!(
            "{spread:?} deadlines: {}; {}; {} per timer; slab {} places x {} B = {:.0} MB, heap {:.0} MB",
            show("insert + fire", |s| s.insert_fire),
            show("insert alone", |s| s.insert),
            show("cancel", |s| s.cancel),
            last.places,
            Wheel::<u64>::ENTRY_SIZE,
            (last.places * Wheel::<u64>::ENTRY_SIZE) as f64 / 1e6,
            last.heap_bytes as f64 / 1e6,
        );
    }
}

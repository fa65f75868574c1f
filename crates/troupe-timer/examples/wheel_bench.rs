//! Micro-benchmark of the wheel: insert N timers with deadlines spread over
//! 1..=1000 ticks, then advance tick by tick until all have fired; prints ns
//! per timer (insert + fire, amortised) and per cancel, medians of 5 runs.
//!
//! `cargo run --release -p troupe-timer --example wheel_bench -- [N]`

use std::time::Instant;

use troupe_timer::Wheel;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Deadlines of timer `i`: random over 1..=1000 ticks, or increasing with
/// `i` (as a scheduler sees timers of equal delay inserted over time).
#[derive(Clone, Copy, Debug)]
enum Spread {
    Random,
    Increasing,
}

fn main() {
    for spread in [Spread::Random, Spread::Increasing] {
        run(spread);
    }
}

fn run(spread: Spread) {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a number"))
        .unwrap_or(10_000_000);
    let mut fire_ns = Vec::new();
    let mut cancel_ns = Vec::new();
    let mut insert_ns = Vec::new();
    let mut places = 0;
    for _ in 0..5 {
        let mut wheel = Wheel::new(4096, 0);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let started = Instant::now();
        for i in 0..n {
            // xorshift: deadlines spread over 1..=1000 ticks.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let deadline = match spread {
                Spread::Random => 1 + x % 1000,
                Spread::Increasing => 1000 + i / 10_000,
            };
            wheel.insert(deadline, i);
        }
        let inserted = started.elapsed();
        let mut fired = 0u64;
        let mut tick = 0;
        while fired < n {
            tick += 1;
            wheel.advance_to(tick, |_, _, _| fired += 1);
        }
        fire_ns.push(started.elapsed().as_nanos() as f64 / n as f64);
        insert_ns.push(inserted.as_nanos() as f64 / n as f64);
        places = wheel.places();

        let mut keys = Vec::with_capacity(n as usize / 10);
        for i in 0..n / 10 {
            keys.push(wheel.insert(tick + 1 + i % 1000, i));
        }
        let started = Instant::now();
        for key in keys {
            wheel.cancel(key);
        }
        cancel_ns.push(started.elapsed().as_nanos() as f64 / (n / 10) as f64);
    }
    let entry = Wheel::<u64>::ENTRY_OVERHEAD + std::mem::size_of::<u64>();
    println!(
        "{spread:?} deadlines, {n} timers: insert + fire {:.1} ns per timer (insert alone {:.1}), cancel {:.1} ns \
         (medians of 5); slab {places} places x {entry} bytes = {:.0} MB",
        median(fire_ns),
        median(insert_ns),
        median(cancel_ns),
        (places * entry) as f64 / 1e6
    );
}

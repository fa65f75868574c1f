//! The memory budget: ten million pending timers must fit in well under a
//! gigabyte with their messages, so an entry is 16 bytes of bookkeeping
//! plus its value (and a tag when the value has no niche), and a million
//! `u64` timers take about 32 MB of slab.
//! Sizes are checked, not timed.

use std::mem::size_of;

use troupe_timer::{TimerKey, Wheel};

#[test]
fn entries_stay_within_budget() {
    assert_eq!(Wheel::<()>::ENTRY_OVERHEAD, 20);
    assert_eq!(Wheel::<u64>::ENTRY_SIZE, 32);
    assert_eq!(Wheel::<u32>::ENTRY_SIZE, 24);
    // A boxed closure: a fat pointer, whose niche holds the tag.
    assert_eq!(Wheel::<Box<dyn FnOnce() + Send>>::ENTRY_SIZE, 32);
    assert_eq!(Wheel::<&'static str>::ENTRY_SIZE, 32);
    assert_eq!(size_of::<TimerKey>(), 8);
}

#[test]
fn a_million_u64_timers_take_about_32_bytes_each() {
    const N: u64 = 1_000_000;
    let mut wheel = Wheel::new(4096, 0);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..N {
        // xorshift: deadlines spread over 1..=1000 ticks.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        wheel.insert(1 + x % 1000, i);
    }
    assert_eq!(wheel.len(), N as usize);
    assert_eq!(wheel.places(), N as usize);
    // The slab's `Vec` grows by doubling: at most 2^20 places here, plus
    // the wheel's fixed lists and bitmaps.
    let per_timer = wheel.heap_bytes() as f64 / N as f64;
    assert!(per_timer <= 34.0, "{per_timer:.1} bytes per timer");
    assert!(wheel.capacity() * Wheel::<u64>::ENTRY_SIZE <= 32 << 20);
    let mut fired = 0u64;
    let mut tick = 0;
    while !wheel.is_empty() {
        tick += 1;
        wheel.advance_to(tick, |at, _, _| {
            assert_eq!(at, tick);
            fired += 1;
        });
    }
    assert_eq!((fired, tick), (N, 1000));
    // Fired timers' places are kept for reuse, not returned.
    assert_eq!(wheel.places(), N as usize);
    wheel.insert(tick + 1, 0);
    assert_eq!(wheel.places(), N as usize);
}

#[test]
fn with_capacity_leaves_no_slack() {
    let wheel: Wheel<u64> = Wheel::with_capacity(4096, 0, 10_000_000);
    assert_eq!(wheel.capacity(), 10_000_000);
    // Ten million u64 timers: 320 MB of slab, plus 53 KiB of wheel.
    assert!(wheel.heap_bytes() < 320_000_000 + 55_000);
}

//! Journal recovery and reading over arbitrary segment bytes: never a
//! panic; either the journal opens (then reading agrees with its record
//! count and it accepts a new record) or the damage is reported.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use troupe_journal::{read_from, Durability, Journal, Options};

static RUN: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!(
        "journal-fuzz-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    // The first byte splits the input into two segments when it is odd.
    let (first, second) = match data.split_first() {
        Some((&b, rest)) if b % 2 == 1 => rest.split_at((b as usize).min(rest.len())),
        Some((_, rest)) => (rest, &[][..]),
        None => (&[][..], &[][..]),
    };
    std::fs::write(dir.join("00000000000000000000.log"), first).unwrap();
    if !second.is_empty() {
        // Named after however many records the first segment holds, if valid.
        let mut n = 0u64;
        let _ = read_from(&dir, 0, |_| n += 1);
        std::fs::write(dir.join(format!("{n:020}.log")), second).unwrap();
    }
    let options = Options {
        durability: Durability::None,
        segment_bytes: 1 << 20,
    };
    if let Ok(journal) = Journal::open(&dir, options) {
        let mut count = 0u64;
        read_from(&dir, 0, |_| count += 1).expect("an opened journal reads back");
        assert_eq!(count, journal.next_seq());
        assert_eq!(journal.append(b"next").unwrap(), count);
    }
    std::fs::remove_dir_all(&dir).unwrap();
});

//! Journal recovery and reading over arbitrary segment bytes: never a
//! panic; either the journal opens (then reading agrees with its record
//! count and it accepts a new record) or the damage is reported. Most
//! inputs get a valid segment header put in front (written here from the
//! format the crate documents), so the fuzzer reaches the records.
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
    // The first byte's low bit splits the input into two segments; its
    // second bit leaves the segments without the header put in front.
    let (flags, rest) = data.split_first().map_or((0, &[][..]), |(&b, r)| (b, r));
    let (first, second) = if flags % 2 == 1 {
        rest.split_at((flags as usize).min(rest.len()))
    } else {
        (rest, &[][..])
    };
    let raw = flags & 2 != 0;
    let segment = |base: u64, bytes: &[u8]| {
        let mut out = Vec::new();
        if !raw {
            out.extend_from_slice(b"TJNL");
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&base.to_le_bytes());
            let crc = crc32c::crc32c(&out);
            out.extend_from_slice(&crc.to_le_bytes());
        }
        out.extend_from_slice(bytes);
        out
    };
    std::fs::write(dir.join("00000000000000000000.log"), segment(0, first)).unwrap();
    if !second.is_empty() {
        // Named after however many records the first segment holds, if valid.
        let mut n = 0u64;
        let _ = read_from(&dir, 0, |_| n += 1);
        std::fs::write(dir.join(format!("{n:020}.log")), segment(n, second)).unwrap();
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

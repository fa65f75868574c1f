//! Journal behaviour through its public API: round trips under every
//! policy, segment rotation and reading from any position, torn tails cut
//! at every byte, bit flips in the middle reported with segment and offset
//! (a full disk is in `full_disk.rs`, missing segments in
//! `missing_segments.rs`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use troupe_journal::{read_from, Durability, Journal, JournalError, Options};

#[path = "support/temp.rs"]
mod temp;
use temp::temp_dir;

fn all(dir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    read_from(dir, 0, |r| {
        assert_eq!(r.seq, out.len() as u64);
        out.push(r.payload);
    })
    .unwrap();
    out
}

/// Bytes of a segment's header, before its first record.
const SEGMENT_HEADER: usize = 20;

fn payload(i: usize) -> Vec<u8> {
    format!("record {i} {}", "x".repeat(i % 37)).into_bytes()
}

fn options(durability: Durability, segment_bytes: u64) -> Options {
    Options {
        durability,
        segment_bytes,
    }
}

#[test]
fn every_policy_round_trips_and_continues_after_reopen() {
    for durability in [
        Durability::None,
        Durability::GroupCommit,
        Durability::SyncEach,
    ] {
        let dir = temp_dir("roundtrip");
        {
            let j = Journal::open(&dir, options(durability, 1 << 20)).unwrap();
            for i in 0..100 {
                assert_eq!(j.append(&payload(i)).unwrap(), i as u64);
            }
        }
        {
            let j = Journal::open(&dir, options(durability, 1 << 20)).unwrap();
            assert_eq!(j.next_seq(), 100);
            assert_eq!(j.append(&payload(100)).unwrap(), 100);
        }
        assert_eq!(
            all(&dir),
            (0..=100).map(payload).collect::<Vec<_>>(),
            "{durability:?}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn segments_rotate_and_reads_start_anywhere() {
    let dir = temp_dir("rotate");
    let j = Journal::open(&dir, options(Durability::None, 200)).unwrap();
    for i in 0..60 {
        j.append(&payload(i)).unwrap();
    }
    drop(j);
    let count = segments(&dir).len();
    assert!(count > 5, "{count} segments");
    for from in [0u64, 1, 17, 59, 60, 100] {
        let mut seqs = Vec::new();
        read_from(&dir, from, |r| {
            assert_eq!(r.payload, payload(r.seq as usize));
            seqs.push(r.seq);
        })
        .unwrap();
        assert_eq!(seqs, (from..60).collect::<Vec<_>>(), "from {from}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// The segment files of `dir`, in log order (the `LOCK` file left out).
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

fn last_segment(dir: &Path) -> PathBuf {
    segments(dir).pop().unwrap()
}

#[test]
fn a_torn_tail_is_truncated_at_every_byte_of_the_last_record() {
    let dir = temp_dir("torn-src");
    let j = Journal::open(&dir, options(Durability::SyncEach, 1 << 20)).unwrap();
    for i in 0..4 {
        j.append(&payload(i)).unwrap();
    }
    let before_last = fs::metadata(last_segment(&dir)).unwrap().len();
    j.append(&payload(4)).unwrap();
    drop(j);
    let full = fs::read(last_segment(&dir)).unwrap();
    assert!(
        full.len() > before_last as usize + 8,
        "the last record is in the file"
    );
    for cut in before_last as usize..full.len() {
        let copy = temp_dir("torn");
        fs::create_dir_all(&copy).unwrap();
        let name = last_segment(&dir).file_name().unwrap().to_owned();
        fs::write(copy.join(&name), &full[..cut]).unwrap();
        let j = Journal::open(&copy, options(Durability::SyncEach, 1 << 20)).unwrap();
        assert_eq!(j.next_seq(), 4, "cut at {cut}");
        assert_eq!(fs::metadata(copy.join(&name)).unwrap().len(), before_last);
        j.append(b"after").unwrap();
        drop(j);
        let mut want: Vec<_> = (0..4).map(payload).collect();
        want.push(b"after".to_vec());
        assert_eq!(all(&copy), want, "cut at {cut}");
        fs::remove_dir_all(&copy).unwrap();
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bit_flip_in_a_middle_segment_names_the_segment_and_offset() {
    let dir = temp_dir("flip");
    let j = Journal::open(&dir, options(Durability::None, 300)).unwrap();
    for i in 0..40 {
        j.append(&payload(i)).unwrap();
    }
    drop(j);
    let files = segments(&dir);
    assert!(files.len() >= 3, "{} segments", files.len());
    let victim = files[files.len() / 2].clone();
    let mut bytes = fs::read(&victim).unwrap();
    // Somewhere inside the second record of that segment.
    let first_len = SEGMENT_HEADER
        + u32::from_le_bytes(
            bytes[SEGMENT_HEADER..SEGMENT_HEADER + 4]
                .try_into()
                .unwrap(),
        ) as usize
        + 8;
    bytes[first_len + 10] ^= 0x04;
    fs::write(&victim, &bytes).unwrap();

    for err in [
        Journal::open(&dir, Options::default()).err().unwrap(),
        read_from(&dir, 0, |_| {}).unwrap_err(),
    ] {
        match &err {
            JournalError::Corrupt {
                segment, offset, ..
            } => {
                assert_eq!(segment, &victim);
                assert_eq!(*offset, first_len as u64);
                let text = err.to_string();
                assert!(text.contains(&format!("at byte {first_len}")), "{text}");
            }
            other => panic!("expected corruption, got {other}"),
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unopenable_directory_is_a_clear_error() {
    let file = temp_dir("not-a-dir");
    fs::write(&file, b"a file, not a directory").unwrap();
    let err = Journal::open(&file, Options::default()).err().unwrap();
    assert!(
        matches!(
            err,
            JournalError::Io {
                op: "create directory",
                ..
            }
        ),
        "{err}"
    );
    fs::remove_file(&file).unwrap();
}

#[test]
fn group_commit_acknowledges_every_append_from_many_threads_in_log_order() {
    let dir = temp_dir("group");
    let j = Arc::new(Journal::open(&dir, options(Durability::GroupCommit, 4096)).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let j = j.clone();
            std::thread::spawn(move || {
                (0..250)
                    .map(|i| (j.append(format!("{t}:{i}").as_bytes()).unwrap(), t, i))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut acks: Vec<_> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    acks.sort();
    assert_eq!(acks.len(), 1000);
    drop(j);
    let records = all(&dir);
    for (seq, t, i) in acks {
        assert_eq!(records[seq as usize], format!("{t}:{i}").into_bytes());
    }
    fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn appends_survive_reopening_in_any_shape(
        sizes in prop::collection::vec(0usize..600, 1..80),
        segment_bytes in 64u64..4096,
        policy in 0..3u8,
        reopen_every in 1usize..30,
    ) {
        let durability = [Durability::None, Durability::GroupCommit, Durability::SyncEach][policy as usize];
        let dir = temp_dir("prop");
        let records: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| vec![i as u8; n]).collect();
        for chunk in records.chunks(reopen_every) {
            let j = Journal::open(&dir, options(durability, segment_bytes)).unwrap();
            for r in chunk {
                j.append(r).unwrap();
            }
        }
        prop_assert_eq!(all(&dir), records);
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_second_writer_on_the_same_directory_is_refused_until_the_first_closes() {
    let dir = temp_dir("lock");
    let first = Journal::open(&dir, Options::default()).unwrap();
    first.append(b"one").unwrap();
    match Journal::open(&dir, Options::default()) {
        Err(JournalError::Locked { dir: locked }) => assert_eq!(locked, dir),
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("a second writer opened the journal"),
    }
    // Reading needs no lock.
    assert_eq!(all(&dir), vec![b"one".to_vec()]);
    drop(first);
    let again = Journal::open(&dir, Options::default()).unwrap();
    assert_eq!(again.append(b"two").unwrap(), 1);
    drop(again);
    fs::remove_dir_all(&dir).unwrap();
}

/// A one-segment journal holding `payload(0..count)`: its directory, the
/// segment, and the byte offset of every record's frame in it.
fn one_segment(name: &str, count: usize) -> (PathBuf, PathBuf, Vec<usize>) {
    let dir = temp_dir(name);
    let j = Journal::open(&dir, options(Durability::None, 1 << 20)).unwrap();
    for i in 0..count {
        j.append(&payload(i)).unwrap();
    }
    drop(j);
    let files = segments(&dir);
    assert_eq!(files.len(), 1, "the records fit in one segment");
    let offsets = (0..count)
        .scan(SEGMENT_HEADER, |at, i| {
            let here = *at;
            *at += 8 + payload(i).len();
            Some(here)
        })
        .collect();
    (dir, files[0].clone(), offsets)
}

/// Asserts that both opening and reading `dir` report damage at `offset`
/// of `segment`, and that the failed open left the file as it was.
fn assert_corrupt_at(dir: &Path, segment: &Path, offset: usize, context: &str) {
    let before = fs::read(segment).unwrap();
    for err in [
        Journal::open(dir, options(Durability::SyncEach, 1 << 20))
            .err()
            .unwrap_or_else(|| panic!("{context}: the damaged journal opened")),
        read_from(dir, 0, |_| {}).unwrap_err(),
    ] {
        match &err {
            JournalError::Corrupt {
                segment: s,
                offset: o,
                ..
            } => {
                assert_eq!(s, segment, "{context}");
                assert_eq!(*o, offset as u64, "{context}: {err}");
                let text = err.to_string();
                assert!(text.contains(&format!("at byte {offset}")), "{text}");
            }
            other => panic!("{context}: expected corruption, got {other}"),
        }
    }
    assert_eq!(
        fs::read(segment).unwrap(),
        before,
        "{context}: recovery changed a damaged segment"
    );
}

#[test]
fn a_flipped_length_bit_in_the_middle_of_the_last_segment_is_reported_not_truncated() {
    // Every bit of the length: high bits make an impossible length, middle
    // ones a frame running past the end of the file, low ones a frame that
    // ends inside a later record. All of them used to be cut as a torn tail,
    // dropping the acknowledged records after them.
    let (dir, segment, offsets) = one_segment("length-flip", 20);
    let victim = offsets[10];
    let good = fs::read(&segment).unwrap();
    for bit in 0..32 {
        let mut bytes = good.clone();
        bytes[victim + bit / 8] ^= 1 << (bit % 8);
        fs::write(&segment, &bytes).unwrap();
        assert_corrupt_at(&dir, &segment, victim, &format!("length bit {bit}"));
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_adjacent_damaged_records_followed_by_good_ones_are_reported() {
    let (dir, segment, offsets) = one_segment("two-damaged", 20);
    let mut bytes = fs::read(&segment).unwrap();
    // A checksum bit of the first and a length bit of the second: the first
    // frame's declared end lands on a bad frame, the old rule's signal for
    // a torn tail.
    bytes[offsets[12] + 4] ^= 0x01;
    bytes[offsets[13] + 1] ^= 0x40;
    fs::write(&segment, &bytes).unwrap();
    assert_corrupt_at(&dir, &segment, offsets[12], "records 12 and 13");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_zero_filled_tail_after_good_records_is_truncated_and_appendable() {
    // What a crash can leave when the file's size reached the disk but its
    // last pages did not: zeroes, after whole records or inside one.
    for cut_inside_last in [false, true] {
        let (dir, segment, offsets) = one_segment("zero-tail", 8);
        let mut bytes = fs::read(&segment).unwrap();
        let keep = if cut_inside_last {
            offsets[7] + 5
        } else {
            bytes.len()
        };
        bytes.truncate(keep);
        bytes.resize(keep + 3 * 4096, 0);
        fs::write(&segment, &bytes).unwrap();

        let j = Journal::open(&dir, options(Durability::SyncEach, 1 << 20)).unwrap();
        let kept = if cut_inside_last { 7 } else { 8 };
        assert_eq!(j.next_seq(), kept as u64, "cut inside: {cut_inside_last}");
        let end = offsets.get(kept).copied().unwrap_or(keep);
        assert_eq!(fs::metadata(&segment).unwrap().len(), end as u64);
        assert_eq!(j.append(b"after").unwrap(), kept as u64);
        drop(j);
        let mut want: Vec<_> = (0..kept).map(payload).collect();
        want.push(b"after".to_vec());
        assert_eq!(all(&dir), want, "cut inside: {cut_inside_last}");
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn after_pending_is_called_once_every_earlier_append_is_answered() {
    use std::sync::atomic::{AtomicU64, Ordering};
    for durability in [
        Durability::None,
        Durability::GroupCommit,
        Durability::SyncEach,
    ] {
        let dir = temp_dir("barrier");
        let j = Journal::open(&dir, options(durability, 1 << 20)).unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        for round in 0..20u64 {
            for i in 0..50 {
                let answered = answered.clone();
                j.append_with(&payload(i), move |r| {
                    r.unwrap();
                    answered.fetch_add(1, Ordering::SeqCst);
                });
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let seen = answered.clone();
            j.after_pending(move |r| {
                r.unwrap();
                tx.send(seen.load(Ordering::SeqCst)).unwrap()
            });
            assert!(rx.recv().unwrap() >= (round + 1) * 50, "{durability:?}");
            assert!(j.acknowledged() >= (round + 1) * 50, "{durability:?}");
        }
        drop(j);
        fs::remove_dir_all(&dir).unwrap();
    }
}

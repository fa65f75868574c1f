//! Whole segments gone or emptied: the log must notice and refuse to open
//! (and to be read), naming the file and byte offset where the evidence
//! is, instead of reading on from a later record or taking a lost segment
//! for a torn tail. An interrupted rotation (the crash window between
//! creating a segment and sealing the one before it) is not damage and
//! must open with every record.

use std::fs;
use std::path::{Path, PathBuf};

use troupe_journal::{read_from, Durability, Journal, JournalError, Options};

#[path = "support/temp.rs"]
mod temp;
use temp::temp_dir;

fn payload(i: usize) -> Vec<u8> {
    format!("record {i:04} {}", "y".repeat(i % 11)).into_bytes()
}

/// A journal of `count` records in segments of about 200 bytes (so there
/// are several), written with fsync per append: every record here was
/// acknowledged with a durable policy.
fn journal(name: &str, count: usize) -> (PathBuf, Vec<PathBuf>) {
    let dir = temp_dir(name);
    let options = Options {
        durability: Durability::SyncEach,
        segment_bytes: 200,
    };
    let j = Journal::open(&dir, options).unwrap();
    for i in 0..count {
        assert_eq!(j.append(&payload(i)).unwrap(), i as u64);
    }
    drop(j);
    let segments = segments(&dir);
    assert!(segments.len() >= 4, "{} segments", segments.len());
    (dir, segments)
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

/// Both opening and reading `dir` fail with damage in `segment` at
/// `offset`, with `words` in the message; returns the message.
fn refused(dir: &Path, segment: &Path, offset: u64, words: &str) -> String {
    let mut text = String::new();
    for (what, result) in [
        (
            "open",
            Journal::open(dir, Options::default()).map(|_| ()).err(),
        ),
        ("read", read_from(dir, 0, |_| {}).map(|_| ()).err()),
    ] {
        let err = result.unwrap_or_else(|| panic!("{what}: the damaged journal was accepted"));
        match &err {
            JournalError::Corrupt {
                segment: s,
                offset: o,
                ..
            } => {
                assert_eq!(s, segment, "{what}: {err}");
                assert_eq!(*o, offset, "{what}: {err}");
            }
            other => panic!("{what}: expected damage to be reported, got {other}"),
        }
        text = err.to_string();
        assert!(text.contains(words), "{what}: {text}");
        assert!(
            text.contains(&segment.display().to_string()),
            "{what}: {text}"
        );
    }
    text
}

#[test]
fn a_deleted_first_segment_is_refused_not_read_from_a_later_record() {
    let (dir, files) = journal("first-gone", 60);
    fs::remove_file(&files[0]).unwrap();
    let text = refused(&dir, &files[1], 0, "missing");
    println!("{text}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deleted_last_segment_is_refused_not_taken_for_a_torn_tail() {
    let (dir, files) = journal("last-gone", 60);
    let last = files.last().unwrap();
    fs::remove_file(last).unwrap();
    let before = &files[files.len() - 2];
    // The segment before it says where the deleted one began: its seal.
    let sealed_at = fs::metadata(before).unwrap().len() - 16;
    let text = refused(&dir, before, sealed_at, "missing");
    assert!(
        text.contains(&last.file_name().unwrap().to_string_lossy().to_string()),
        "{text}"
    );
    println!("{text}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_emptied_last_segment_is_refused() {
    let (dir, files) = journal("last-empty", 60);
    let last = files.last().unwrap();
    fs::write(last, b"").unwrap();
    let text = refused(&dir, last, 0, "header");
    println!("{text}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_emptied_middle_segment_is_refused() {
    let (dir, files) = journal("middle-empty", 60);
    let victim = &files[files.len() / 2];
    fs::write(victim, b"").unwrap();
    refused(&dir, victim, 0, "header");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deleted_middle_segment_is_refused() {
    let (dir, files) = journal("middle-gone", 60);
    let victim = files.len() / 2;
    fs::remove_file(&files[victim]).unwrap();
    refused(&dir, &files[victim + 1], 0, "expected");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_middle_segment_cut_at_a_record_boundary_is_refused() {
    // The seal is what is cut: nothing says the segment was whole.
    let (dir, files) = journal("middle-cut", 60);
    let victim = &files[1];
    let len = fs::metadata(victim).unwrap().len();
    let file = fs::OpenOptions::new().write(true).open(victim).unwrap();
    file.set_len(len - 16).unwrap();
    refused(&dir, victim, len - 16, "seal");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_renamed_segment_is_refused() {
    // A segment's header names its first record: a file moved to another
    // name (or copied in from another journal) does not pass.
    let (dir, files) = journal("renamed", 60);
    let last = files.last().unwrap();
    let bytes = fs::read(last).unwrap();
    let name = last.file_name().unwrap().to_string_lossy().to_string();
    let base: u64 = name.trim_end_matches(".log").parse().unwrap();
    let moved = dir.join(format!("{:020}.log", base + 1));
    fs::remove_file(last).unwrap();
    fs::write(&moved, bytes).unwrap();
    let open = Journal::open(&dir, Options::default()).err().unwrap();
    assert!(matches!(open, JournalError::Corrupt { .. }), "{open}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_interrupted_rotation_opens_with_every_record_and_stays_checked() {
    // The crash window of a rotation: the new segment exists (created whole,
    // by rename) but the one before it was not sealed yet.
    let (dir, files) = journal("rotation-cut", 60);
    let before = &files[files.len() - 2];
    let last = files.last().unwrap();
    let len = fs::metadata(before).unwrap().len();
    let header = 20;
    // Take the last segment's records out (they were never written in
    // this crash), and the seal of the one before it.
    let mut survivors = Vec::new();
    let name = last.file_name().unwrap().to_string_lossy().to_string();
    let base: u64 = name.trim_end_matches(".log").parse().unwrap();
    read_from(&dir, 0, |r| {
        if r.seq < base {
            survivors.push(r.payload)
        }
    })
    .unwrap();
    let bytes = fs::read(last).unwrap();
    fs::write(last, &bytes[..header]).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(before)
        .unwrap()
        .set_len(len - 16)
        .unwrap();
    // A temporary file of a rotation that crashed before its rename.
    fs::write(dir.join(format!("{:020}.log.tmp", base + 5)), b"junk").unwrap();

    let j = Journal::open(&dir, Options::default()).unwrap();
    assert_eq!(j.next_seq(), base);
    j.append(b"after").unwrap();
    drop(j);
    survivors.push(b"after".to_vec());
    let mut all = Vec::new();
    read_from(&dir, 0, |r| all.push(r.payload)).unwrap();
    assert_eq!(all, survivors);
    // The open sealed the segment it found unsealed, so deleting the last
    // one now is noticed too.
    fs::remove_file(last).unwrap();
    assert!(Journal::open(&dir, Options::default()).is_err());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn each_step_of_taking_the_last_segment_off_leaves_a_log_that_opens() {
    // What a repair does to a segment a rotation created after the last
    // acknowledgement, one step at a time, as a crash could leave it: the
    // log must read (and open) after every step, with every record of
    // the segments before it.
    let (dir, files) = journal("take-off", 60);
    let last = files.last().unwrap();
    let before = &files[files.len() - 2];
    let name = last.file_name().unwrap().to_string_lossy().to_string();
    let base: u64 = name.trim_end_matches(".log").parse().unwrap();
    let count = || {
        let mut n = 0u64;
        read_from(&dir, 0, |_| n += 1).unwrap_or_else(|e| panic!("{e}"));
        n
    };
    // 1. The last segment emptied to its header.
    fs::OpenOptions::new()
        .write(true)
        .open(last)
        .unwrap()
        .set_len(20)
        .unwrap();
    assert_eq!(count(), base);
    // 2. The seal of the one before it cut off.
    let len = fs::metadata(before).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(before)
        .unwrap()
        .set_len(len - 16)
        .unwrap();
    assert_eq!(count(), base);
    // 3. The empty segment removed.
    fs::remove_file(last).unwrap();
    assert_eq!(count(), base);
    let j = Journal::open(&dir, Options::default()).unwrap();
    assert_eq!(j.next_seq(), base);
    drop(j);
    fs::remove_dir_all(&dir).unwrap();
}

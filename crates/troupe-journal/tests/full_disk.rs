//! A full disk, for real and without root: the writer runs in a child
//! process (this test binary, started again with an environment variable
//! naming its task) whose file-size limit (`RLIMIT_FSIZE`) sits a few
//! records past the end of the log. The kernel then treats a write that
//! crosses it as it treats one on a full disk: the bytes up to the limit
//! are written, the rest fails (`EFBIG` instead of `ENOSPC`; the child
//! ignores `SIGXFSZ`, inherited from the `sh` that starts it, so the write
//! returns the error instead of killing the process).
//!
//! What must hold: the append that hit the limit gets the IO error, every
//! later one is refused (nothing is acknowledged behind a partial frame);
//! a repair on the still-full disk cuts the partial frame (it needs no
//! room) and the next append fails again; once the child raises its limit
//! (the disk has room) a repair lets appends go on in the same journal;
//! and reopening keeps exactly the acknowledged records.

#![cfg(target_os = "linux")]

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use troupe_journal::{read_from, Durability, Journal, Options};

#[path = "support/temp.rs"]
mod temp;
use temp::temp_dir;

/// Set in the child: `<task>|<dir>|<policy>|<file size limit>`.
const CHILD: &str = "TROUPE_JOURNAL_FULL_DISK_CHILD";

const POLICIES: [Durability; 3] = [
    Durability::None,
    Durability::GroupCommit,
    Durability::SyncEach,
];

fn options(durability: Durability) -> Options {
    Options {
        durability,
        segment_bytes: 1 << 20,
    }
}

fn payload(i: u64) -> Vec<u8> {
    format!("{i:>100}").into_bytes()
}

/// Bytes of one record's frame.
const FRAME: u64 = 8 + 100;

/// The child: appends under the limit until an append fails, then once
/// more, printing what each got; exits without running the test's body.
fn child(task: &str) -> ! {
    let mut parts = task.split('|');
    if parts.next() == Some("rotation") {
        let (dir, policy, limit) = (parts.next().unwrap(), parts.next().unwrap(), parts.next());
        rotation_child(
            dir,
            policy.parse().unwrap(),
            limit.unwrap().parse().unwrap(),
        );
    }
    let dir = parts.next().unwrap();
    let policy: usize = parts.next().unwrap().parse().unwrap();
    let limit: u64 = parts.next().unwrap().parse().unwrap();
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::FSIZE).unwrap();
    rlimit::setrlimit(rlimit::Resource::FSIZE, limit, hard).unwrap();
    let mut journal = Journal::open(dir, options(POLICIES[policy])).unwrap();
    for i in journal.next_seq().. {
        match journal.append(&payload(i)) {
            Ok(seq) => println!("ACK {seq}"),
            Err(e) => {
                println!("ERR {e}");
                break;
            }
        }
    }
    match journal.append(b"after the failure") {
        Ok(seq) => println!("THEN acknowledged {seq}"),
        Err(e) => println!("THEN {e}"),
    }
    // A reader waiting for the appends before it learns the log failed.
    let (tx, rx) = std::sync::mpsc::channel();
    journal.after_pending(move |r| tx.send(r.is_err()).unwrap());
    println!("BARRIER failed {}", rx.recv().unwrap());
    let segment = Path::new(dir).join("00000000000000000000.log");
    let len = |what: &str| {
        let len = std::fs::metadata(&segment).unwrap().len();
        println!("LEN {what} {len}");
    };
    len("failed");
    // Still full: the repair cuts the partial frame, the append fails again.
    println!(
        "REPAIR {:?}",
        journal.repair().map(|()| journal.is_failed())
    );
    len("repaired");
    match journal.append(&payload(13)) {
        Ok(seq) => println!("FULL acknowledged {seq}"),
        Err(e) => println!("FULL {e}"),
    }
    // Room again.
    rlimit::setrlimit(rlimit::Resource::FSIZE, hard, hard).unwrap();
    println!(
        "REPAIR {:?}",
        journal.repair().map(|()| journal.is_failed())
    );
    match journal.append(&payload(13)) {
        Ok(seq) => println!("ROOM acknowledged {seq} of {}", journal.acknowledged()),
        Err(e) => println!("ROOM {e}"),
    }
    drop(journal);
    std::process::exit(0)
}

/// Runs the child on `dir` and returns its output lines.
fn run_child(test: &str, task: &str, dir: &Path, policy: usize, limit: u64) -> Vec<String> {
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{task}|{}|{policy}|{limit}", dir.display()))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the child failed: {:?}", out.status);
    BufReader::new(&out.stdout[..])
        .lines()
        .map(Result::unwrap)
        // The harness prints the test's name on the line the first answer
        // goes to.
        .filter_map(|l| {
            let at = [
                "ACK ", "ERR ", "THEN ", "BARRIER ", "LEN ", "REPAIR ", "FULL ", "ROOM ",
            ]
            .iter()
            .filter_map(|m| l.find(m))
            .min()?;
            Some(l[at..].to_string())
        })
        .collect()
}

#[test]
fn a_full_disk_fails_the_append_and_everything_after_it_and_a_repair_goes_on_once_there_is_room() {
    if let Ok(task) = std::env::var(CHILD) {
        child(&task);
    }
    let name =
        "a_full_disk_fails_the_append_and_everything_after_it_and_a_repair_goes_on_once_there_is_room";
    for (policy, durability) in POLICIES.into_iter().enumerate() {
        let dir = temp_dir("full");
        let journal = Journal::open(&dir, options(durability)).unwrap();
        for i in 0..10 {
            journal.append(&payload(i)).unwrap();
        }
        drop(journal);
        let segment = dir.join("00000000000000000000.log");
        let size = fs::metadata(&segment).unwrap().len();
        // Room for three more records and half of a fourth.
        let limit = size + 3 * FRAME + FRAME / 2;

        let lines = run_child(name, "append", &dir, policy, limit);
        let acks: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("ACK "))
            .collect();
        assert_eq!(acks, ["10", "11", "12"], "{durability:?}: {lines:?}");
        let err = &lines[3];
        assert!(
            err.starts_with("ERR journal: write") && err.contains("File too large"),
            "{durability:?}: {err}"
        );
        let rest: Vec<&str> = lines[4..].iter().map(String::as_str).collect();
        let good = size + 3 * FRAME;
        assert!(rest[0].contains("an earlier write failed"), "{rest:?}");
        assert_eq!(rest[1], "BARRIER failed true", "{rest:?}");
        // The partial frame is on disk until the repair, which needs no
        // room; the disk is still full.
        assert_eq!(rest[2], format!("LEN failed {limit}"));
        assert_eq!(rest[3], "REPAIR Ok(false)", "{rest:?}");
        assert_eq!(rest[4], format!("LEN repaired {good}"));
        assert!(
            rest[5].starts_with("FULL journal: write") && rest[5].contains("File too large"),
            "{rest:?}"
        );
        // Room again: the same journal appends.
        assert_eq!(rest[6], "REPAIR Ok(false)", "{rest:?}");
        assert_eq!(rest[7], "ROOM acknowledged 13 of 14", "{rest:?}");

        let journal = Journal::open(&dir, options(durability)).unwrap();
        assert_eq!(journal.next_seq(), 14, "{durability:?}");
        assert_eq!(fs::metadata(&segment).unwrap().len(), good + FRAME);
        drop(journal);
        let mut records = Vec::new();
        read_from(&dir, 0, |r| records.push(r.payload)).unwrap();
        assert_eq!(records, (0..14).map(payload).collect::<Vec<_>>());
        println!("{durability:?}: {err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}

/// Segments of at most 300 bytes: a header and two 108-byte frames fit.
fn small_segments(durability: Durability) -> Options {
    Options {
        durability,
        segment_bytes: 300,
    }
}

/// A record whose frame is 508 bytes: alone in a segment, it crosses a
/// 400-byte file-size limit.
fn big() -> Vec<u8> {
    vec![b'b'; 500]
}

/// The child of the rotation test: a big record makes the journal rotate
/// into a new segment, where the write fails; the repair takes that
/// segment off and the seal of the one before.
fn rotation_child(dir: &str, policy: usize, limit: u64) -> ! {
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::FSIZE).unwrap();
    rlimit::setrlimit(rlimit::Resource::FSIZE, limit, hard).unwrap();
    let mut journal = Journal::open(dir, small_segments(POLICIES[policy])).unwrap();
    let segments = || {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        names.sort();
        let sizes: Vec<String> = names
            .iter()
            .map(|n| {
                format!(
                    "{}:{}",
                    &n[16..20],
                    fs::metadata(Path::new(dir).join(n)).unwrap().len()
                )
            })
            .collect();
        sizes.join(" ")
    };
    for round in 0..2 {
        match journal.append(&big()) {
            Ok(seq) => println!("ACK big {seq}"),
            Err(e) => println!("ERR {e}"),
        }
        println!("LEN failed {}", segments());
        println!(
            "REPAIR {:?}",
            journal.repair().map(|()| journal.is_failed())
        );
        println!("LEN repaired {}", segments());
        if round == 0 {
            println!("ACK small {}", journal.append(&payload(2)).unwrap());
            println!("LEN small {}", segments());
        }
    }
    rlimit::setrlimit(rlimit::Resource::FSIZE, hard, hard).unwrap();
    println!("ACK big {}", journal.append(&big()).unwrap());
    println!("LEN room {}", segments());
    drop(journal);
    std::process::exit(0)
}

#[test]
fn a_write_that_fails_in_a_new_segment_is_repaired_back_into_the_one_before() {
    if let Ok(task) = std::env::var(CHILD) {
        child(&task);
    }
    let name = "a_write_that_fails_in_a_new_segment_is_repaired_back_into_the_one_before";
    for (policy, durability) in POLICIES.into_iter().enumerate() {
        let dir = temp_dir("rotation");
        let journal = Journal::open(&dir, small_segments(durability)).unwrap();
        for i in 0..2 {
            journal.append(&payload(i)).unwrap();
        }
        drop(journal);
        let lines = run_child(name, "rotation", &dir, policy, 400);
        let text = lines.join("\n");
        // Each big record: the rotation seals segment N and creates the
        // next, the write crosses the limit there, and the repair leaves
        // segment N as it was before the rotation (no seal, nothing after).
        let expected = [
            "ERR journal: write",
            "LEN failed 0000:252 0002:400",
            "REPAIR Ok(false)",
            "LEN repaired 0000:236",
            "ACK small 2",
            "LEN small 0000:252 0002:128",
            "ERR journal: write",
            "LEN failed 0000:252 0002:144 0003:400",
            "REPAIR Ok(false)",
            "LEN repaired 0000:252 0002:128",
            "ACK big 3",
            "LEN room 0000:252 0002:144 0003:528",
        ];
        assert_eq!(lines.len(), expected.len(), "{durability:?}:\n{text}");
        for (line, want) in lines.iter().zip(expected) {
            assert!(
                line.starts_with(want),
                "{durability:?}: {line:?}, expected {want:?}\n{text}"
            );
        }
        let mut records = Vec::new();
        read_from(&dir, 0, |r| records.push(r.payload)).unwrap();
        assert_eq!(records, vec![payload(0), payload(1), payload(2), big()]);
        let journal = Journal::open(&dir, small_segments(durability)).unwrap();
        assert_eq!(journal.next_seq(), 4);
        drop(journal);
        fs::remove_dir_all(&dir).unwrap();
    }
}

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
//! later one is refused (nothing is acknowledged behind a partial frame),
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

/// Set in the child: `<dir>|<policy>|<file size limit>`.
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
    let dir = parts.next().unwrap();
    let policy: usize = parts.next().unwrap().parse().unwrap();
    let limit: u64 = parts.next().unwrap().parse().unwrap();
    rlimit::setrlimit(rlimit::Resource::FSIZE, limit, limit).unwrap();
    let journal = Journal::open(dir, options(POLICIES[policy])).unwrap();
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
    drop(journal);
    std::process::exit(0)
}

/// Runs the child on `dir` and returns its output lines.
fn run_child(test: &str, dir: &Path, policy: usize, limit: u64) -> Vec<String> {
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{}|{policy}|{limit}", dir.display()))
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
            let at = ["ACK ", "ERR ", "THEN "]
                .iter()
                .filter_map(|m| l.find(m))
                .min()?;
            Some(l[at..].to_string())
        })
        .collect()
}

#[test]
fn a_full_disk_fails_the_append_and_everything_after_it_and_keeps_the_acknowledged() {
    if let Ok(task) = std::env::var(CHILD) {
        child(&task);
    }
    let name = "a_full_disk_fails_the_append_and_everything_after_it_and_keeps_the_acknowledged";
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

        let lines = run_child(name, &dir, policy, limit);
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
        assert!(
            lines[4].contains("an earlier write failed"),
            "{durability:?}: {}",
            lines[4]
        );
        // The partial frame is on disk until the journal reopens.
        assert_eq!(fs::metadata(&segment).unwrap().len(), limit);

        let journal = Journal::open(&dir, options(durability)).unwrap();
        assert_eq!(journal.next_seq(), 13, "{durability:?}");
        assert_eq!(fs::metadata(&segment).unwrap().len(), size + 3 * FRAME);
        assert_eq!(journal.append(&payload(13)).unwrap(), 13);
        drop(journal);
        let mut records = Vec::new();
        read_from(&dir, 0, |r| records.push(r.payload)).unwrap();
        assert_eq!(records, (0..14).map(payload).collect::<Vec<_>>());
        println!("{durability:?}: {err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}

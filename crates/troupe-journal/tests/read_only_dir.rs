//! A journal directory the process cannot write: opening a journal there is
//! a clear error, and a journal whose directory becomes unwritable while it
//! is open reports the failed segment rotation to the append that needed
//! it, acknowledges nothing after it, and reopens with exactly the
//! acknowledged records.
//!
//! Permission bits do not stop root (CAP_DAC_OVERRIDE), and these tests run
//! as root here and in CI. So each test first checks, at run time, whether
//! a `chmod 0555` directory really refuses a new file; if it does not, it
//! uses a directory of a kernel filesystem that refuses new files to root
//! too (`/sys`, else `/proc/self`), and prints which case ran. If no
//! directory refuses, the test fails rather than pass without checking.

#![cfg(target_os = "linux")]

use std::fs::{self, File};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use troupe_journal::{read_from, Durability, Journal, JournalError, Options};

#[path = "support/temp.rs"]
mod temp;
use temp::temp_dir;

fn set_mode(dir: &Path, mode: u32) {
    fs::set_permissions(dir, fs::Permissions::from_mode(mode)).unwrap();
}

/// How this process can be refused a new file in a directory.
enum Refusal {
    /// `chmod 0555` is enough (not root).
    Chmod,
    /// Permission bits are ignored (root); this directory refuses anyway.
    Kernel(PathBuf),
}

/// Finds out, by trying, which [`Refusal`] works here, and says so.
fn refusal() -> Refusal {
    let dir = temp_dir("ro-probe");
    fs::create_dir_all(&dir).unwrap();
    set_mode(&dir, 0o555);
    let probe = File::create_new(dir.join("probe"));
    set_mode(&dir, 0o755);
    fs::remove_dir_all(&dir).unwrap();
    if let Err(e) = probe {
        println!("unwritable directory: chmod 0555 ({e})");
        return Refusal::Chmod;
    }
    for candidate in ["/sys", "/proc/self"] {
        let dir = Path::new(candidate);
        match File::create_new(dir.join("troupe-journal-probe")) {
            Err(e) if dir.is_dir() => {
                println!(
                    "unwritable directory: {candidate}, since chmod 0555 does not stop \
                     this user (uid 0 ignores permission bits): a new file there fails ({e})"
                );
                return Refusal::Kernel(dir.to_path_buf());
            }
            Err(_) => {}
            Ok(_) => {
                let _ = fs::remove_file(dir.join("troupe-journal-probe"));
            }
        }
    }
    panic!("found no directory that refuses this process a new file: nothing to test with");
}

#[test]
fn opening_a_journal_in_an_unwritable_directory_is_a_clear_error() {
    let (dir, made) = match refusal() {
        Refusal::Chmod => {
            let dir = temp_dir("ro-open");
            fs::create_dir_all(&dir).unwrap();
            set_mode(&dir, 0o555);
            (dir, true)
        }
        Refusal::Kernel(dir) => (dir, false),
    };

    // The directory exists: the first file the journal creates is its lock.
    let err = Journal::open(&dir, Options::default()).err().unwrap();
    match &err {
        JournalError::Io { op, path, .. } => {
            assert_eq!(*op, "open lock file", "{err}");
            assert_eq!(path, &dir.join("LOCK"));
        }
        other => panic!("expected an IO error, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&dir.join("LOCK").display().to_string()),
        "{text}"
    );
    println!("open: {text}");

    // The journal's own directory would be created inside it.
    let inner = dir.join("journal");
    let err = Journal::open(&inner, Options::default()).err().unwrap();
    assert!(
        matches!(&err, JournalError::Io { op: "create directory", path, .. } if *path == inner),
        "{err}"
    );
    println!("open of a new subdirectory: {err}");

    if made {
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            0,
            "a refused open left files behind"
        );
        set_mode(&dir, 0o755);
        fs::remove_dir_all(&dir).unwrap();
    }
}

fn payload(i: usize) -> Vec<u8> {
    format!("record number {i:08}").into_bytes()
}

#[test]
fn a_directory_that_becomes_unwritable_fails_the_rotation_and_nothing_after_it() {
    let refusal = refusal();
    let frame = 8 + payload(0).len();
    let options = |durability| Options {
        durability,
        // The header and three records fit; the fourth needs a new segment.
        segment_bytes: (20 + 3 * frame + frame / 2) as u64,
    };
    for durability in [
        Durability::None,
        Durability::GroupCommit,
        Durability::SyncEach,
    ] {
        // The journal is opened through a symlink, so that under root the
        // directory can "become unwritable" by pointing the link at one
        // that refuses new files; the open segment stays writable, as it
        // does after a chmod.
        let real = temp_dir("ro-real");
        fs::create_dir_all(&real).unwrap();
        let link = temp_dir("ro-link");
        symlink(&real, &link).unwrap();

        let mut journal = Journal::open(&link, options(durability)).unwrap();
        for i in 0..3 {
            assert_eq!(journal.append(&payload(i)).unwrap(), i as u64);
        }
        match &refusal {
            Refusal::Chmod => set_mode(&real, 0o555),
            Refusal::Kernel(elsewhere) => {
                fs::remove_file(&link).unwrap();
                symlink(elsewhere, &link).unwrap();
            }
        }

        let err = journal.append(&payload(3)).unwrap_err();
        match &err {
            JournalError::Io { op, path, .. } => {
                assert_eq!(*op, "create segment", "{durability:?}: {err}");
                assert_eq!(path, &link.join("00000000000000000003.log"));
            }
            other => panic!("{durability:?}: expected an IO error, got {other}"),
        }
        println!("{durability:?}: {err}");
        // Failed for good: nothing is acknowledged after the failure.
        assert!(matches!(
            journal.append(&payload(4)),
            Err(JournalError::Failed)
        ));
        let (tx, rx) = std::sync::mpsc::channel();
        journal.append_with(&payload(5), move |r| tx.send(r).unwrap());
        assert!(matches!(rx.recv().unwrap(), Err(JournalError::Failed)));
        assert!(journal.sync().is_err(), "{durability:?}");
        // A repair while the directory still refuses: nothing to cut back
        // (the rotation created nothing), and the rotation fails again.
        journal.repair().unwrap();
        assert!(!journal.is_failed(), "{durability:?}");
        assert!(
            matches!(
                journal.append(&payload(3)),
                Err(JournalError::Io {
                    op: "create segment",
                    ..
                })
            ),
            "{durability:?}"
        );
        assert!(journal.is_failed(), "{durability:?}");
        drop(journal);

        match &refusal {
            Refusal::Chmod => set_mode(&real, 0o755),
            Refusal::Kernel(_) => {
                fs::remove_file(&link).unwrap();
                symlink(&real, &link).unwrap();
            }
        }
        // Exactly the acknowledged records, and no partial frame after them.
        let segments: Vec<_> = fs::read_dir(&real)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".log"))
            .collect();
        assert_eq!(segments.len(), 1, "{durability:?}: {segments:?}");
        assert_eq!(
            fs::metadata(real.join("00000000000000000000.log"))
                .unwrap()
                .len(),
            (20 + 3 * frame) as u64,
            "{durability:?}: the header and three records, nothing after them"
        );
        let journal = Journal::open(&link, options(durability)).unwrap();
        assert_eq!(journal.next_seq(), 3, "{durability:?}");
        // Writable again: the rotation that failed now happens.
        assert_eq!(journal.append(&payload(3)).unwrap(), 3);
        drop(journal);
        let mut records = Vec::new();
        read_from(&link, 0, |r| records.push(r.payload)).unwrap();
        assert_eq!(records, (0..4).map(payload).collect::<Vec<_>>());

        fs::remove_file(&link).unwrap();
        fs::remove_dir_all(&real).unwrap();
    }
}

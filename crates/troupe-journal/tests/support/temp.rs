//! Fresh scratch directories for the journal's integration tests: one name
//! per call (process id plus a counter), removed first if a previous run
//! left it behind. Shared by the test files through `#[path]`.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A path under the system's temporary directory, unique to this call; the
/// directory itself is not created.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "troupe-journal-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    dir
}

//! Ctrl-C and SIGTERM for the cluster's processes. A node treats either as
//! "leave now" (as when its standard input closes); a launcher notes it,
//! stops waiting, and tears the cluster down in order (every node told to
//! leave, then the temporary logs removed, then the server stopped) instead
//! of dying with children, a server and a log directory left behind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Resolves when the process gets SIGINT or SIGTERM (and marks it
/// [`interrupted`]). Installing it replaces the signals' default action
/// (exit) for the rest of the process's life, so it must be awaited by
/// something that acts on it.
pub async fn signalled() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether this process was told to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The error a launcher's wait ends with once interrupted.
pub const INTERRUPTED_ERROR: &str = "interrupted (Ctrl-C or SIGTERM): the cluster was stopped";

/// Sleeps `d`, or less if interrupted (then an error).
pub fn sleep(d: Duration) -> Result<(), String> {
    let deadline = Instant::now() + d;
    loop {
        if interrupted() {
            return Err(INTERRUPTED_ERROR.into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(POLL));
    }
}

/// How often a launcher's blocking waits look at [`interrupted`].
pub const POLL: Duration = Duration::from_millis(50);

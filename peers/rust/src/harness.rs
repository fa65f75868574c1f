//! What every experiment shares besides the protocol: the validation of its
//! runs ([`Check`]), the signal that a run finished ([`Latch`]), and the
//! runtimes the libraries run on (a tokio runtime of 1 or 2 threads for
//! kameo and ractor; actix brings its own System and Arbiters).
//!
//! The latch is the harness's, not a way around the libraries: actors talk
//! to each other only through their library; the latch only tells the
//! measuring code that the last actor is done, as the Pekko peer's
//! `CountDownLatch` does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::Notify;

/// The longest a run may take before it is declared stuck.
pub const RUN_DEADLINE: Duration = Duration::from_secs(600);

/// The checks of an experiment's runs: every failed check is kept (the
/// first one is reported) and the runs go on, so that a wrong result comes
/// back as a RESULT with a `failure` field, not as a missing row.
#[derive(Default)]
pub struct Check {
    first: Option<String>,
    failed: usize,
}

impl Check {
    /// Records `message` as a failure unless `ok`.
    pub fn that(&mut self, ok: bool, message: impl FnOnce() -> String) {
        if ok {
            return;
        }
        let message = message();
        eprintln!("check failed: {message}");
        self.failed += 1;
        self.first.get_or_insert(message);
    }

    /// The first failed check and how many failed, or `None`.
    pub fn failure(&self) -> Option<String> {
        let first = self.first.clone()?;
        Some(match self.failed {
            1 => first,
            n => format!("{first} (and {} more failed checks)", n - 1),
        })
    }
}

/// Counts down from `n`; [`Latch::wait`] returns when it reaches zero.
pub struct Latch {
    remaining: AtomicUsize,
    zero: Notify,
}

impl Latch {
    /// A latch that opens after `n` calls of [`Latch::count_down`].
    pub fn new(n: usize) -> Latch {
        Latch {
            remaining: AtomicUsize::new(n),
            zero: Notify::new(),
        }
    }

    /// One of the `n` things is done.
    pub fn count_down(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            // A stored permit: the waiter may not be waiting yet.
            self.zero.notify_one();
        }
    }

    /// Waits until the count is zero, at most [`RUN_DEADLINE`].
    pub async fn wait(&self, what: &str) -> Result<(), String> {
        let open = async {
            while self.remaining.load(Ordering::Acquire) > 0 {
                self.zero.notified().await;
            }
        };
        tokio::time::timeout(RUN_DEADLINE, open)
            .await
            .map_err(|_| format!("{what} did not finish within {} s", RUN_DEADLINE.as_secs()))
    }
}

/// Whether one thread means tokio's current-thread scheduler (`true`) or
/// the multi-thread scheduler with one worker; `--one-thread
/// current|multi`, set once by `main`.
pub static ONE_THREAD_CURRENT: OnceLock<bool> = OnceLock::new();

/// A tokio runtime of `threads` threads for kameo and ractor, which run on
/// whatever tokio runtime they are spawned in: on one thread, by default,
/// the multi-thread scheduler with one worker (`#[tokio::main(worker_threads
/// = 1)]`: the worker runs the actors and the caller's thread waits, as in
/// troupe's one-worker rows), or the current-thread scheduler with
/// `--one-thread current`; on more, the multi-thread scheduler with that
/// many workers (`#[tokio::main(worker_threads = 2)]`).
pub fn tokio_runtime(threads: usize) -> Result<tokio::runtime::Runtime, String> {
    let current = *ONE_THREAD_CURRENT.get().unwrap_or(&false);
    let mut builder = if threads == 1 && current {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime: {e}"))
}

/// Nanoseconds per message of a run of `msgs` messages that took `elapsed`.
pub fn ns_per(elapsed: Duration, msgs: u64) -> f64 {
    elapsed.as_nanos() as f64 / msgs.max(1) as f64
}

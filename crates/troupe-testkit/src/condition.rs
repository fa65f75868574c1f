//! [`await_condition`]: for state that no message announces (a timer
//! re-armed inside an actor, a count reached), checked until it holds.

use std::time::{Duration, Instant};

/// Waits until `condition` holds, checking it again and again (yielding
/// the CPU in between), at most `timeout`. For outcomes that no message
/// tells of; when one does, expect the message on a [`TestProbe`](crate::TestProbe)
/// instead.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let done = Arc::new(AtomicBool::new(false));
/// let flag = done.clone();
/// std::thread::spawn(move || flag.store(true, Ordering::Release));
/// troupe_testkit::await_condition("the flag", Duration::from_secs(5), || {
///     done.load(Ordering::Acquire)
/// });
/// ```
///
/// # Panics
///
/// If `condition` still does not hold after `timeout`, naming `what`.
#[track_caller]
pub fn await_condition(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    let mut checks: u32 = 0;
    while !condition() {
        if start.elapsed() > timeout {
            panic!("expected {what} within {timeout:?}; it did not happen ({checks} checks)");
        }
        checks += 1;
        // Yield first (the other thread is usually about to get there),
        // then back off to short parks so a long wait costs little CPU.
        if checks < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(Duration::from_micros(200));
        }
    }
}

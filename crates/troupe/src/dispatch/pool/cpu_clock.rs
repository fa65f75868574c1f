//! A worker thread's CPU clock: the CPU time the thread has used, which the
//! governor reads from its own thread to weigh what spreading costs (see
//! `governor.rs`, "What pays").
//!
//! Linux gives every thread a clock (`pthread_getcpuclockid`) that any
//! thread of the process can read; reading it is a system call (well under
//! a microsecond), made twice per worker per governor window (5 ms). On
//! other platforms, and under Miri, there is no clock: the governor then
//! decides on speed alone.

use std::time::Duration;

/// The CPU clock of one thread.
#[derive(Debug, Clone, Copy)]
pub(super) struct CpuClock {
    #[cfg(all(target_os = "linux", not(miri)))]
    id: libc::clockid_t,
}

impl CpuClock {
    /// The calling thread's clock, where the platform has one.
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(super) fn of_current_thread() -> Option<CpuClock> {
        let mut id: libc::clockid_t = 0;
        // `pthread_self()` is the calling thread's own handle, alive for this
        // call, and `id` is a valid place for the answer.
        // SAFETY: by the argument just above.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        (rc == 0).then_some(CpuClock { id })
    }

    /// The calling thread's clock, where the platform has one.
    #[cfg(not(all(target_os = "linux", not(miri))))]
    pub(super) fn of_current_thread() -> Option<CpuClock> {
        None
    }

    /// CPU time the thread has used so far; `None` if the clock cannot be
    /// read (the thread has exited).
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(super) fn read(self) -> Option<Duration> {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // `now` is a valid place for the answer; a clock whose thread has
        // exited makes the call fail with EINVAL, not misbehave.
        // SAFETY: by the argument just above.
        let rc = unsafe { libc::clock_gettime(self.id, &mut now) };
        (rc == 0).then(|| Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
    }

    /// CPU time the thread has used so far (never known here).
    #[cfg(not(all(target_os = "linux", not(miri))))]
    pub(super) fn read(self) -> Option<Duration> {
        None
    }
}

#[cfg(all(test, target_os = "linux", not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_reads_its_own_and_another_threads_cpu_time() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let busy = std::thread::spawn(move || {
            let clock = CpuClock::of_current_thread().expect("linux has thread clocks");
            // Burn CPU until this thread's own clock shows 20 ms used.
            let mut x = 0u64;
            while clock.read().unwrap() < Duration::from_millis(20) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            tx.send(clock).unwrap();
            done_rx.recv().unwrap();
        });
        let clock = rx.recv().unwrap();
        // Read from this thread while the other is parked on `recv`.
        let used = clock.read().expect("the thread is alive");
        assert!(used >= Duration::from_millis(20), "{used:?}");
        done_tx.send(()).unwrap();
        busy.join().unwrap();
    }
}

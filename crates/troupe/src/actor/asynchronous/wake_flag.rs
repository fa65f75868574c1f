//! The flag of an async actor's waker: a wake sends the cell one
//! `SystemMsg::Wake` until the host's next poll re-arms it, so that a
//! future that wakes often costs the cell one run, not one per wake.
//!
//! # Why no wake is lost
//!
//! A wake stores what it announces (a value in a channel, a timer's
//! firing) before it raises the flag. If it finds the flag clear, it sends
//! a `Wake`, which polls the handler again after that store. If it finds
//! the flag raised, a `Wake` is on its way already, and the poll it causes
//! re-arms the flag first: both are read-modify-writes, so the re-arm
//! reads this wake's raise (or a later one) and synchronises with it, and
//! the poll that follows sees what the wake announced. A plain store to
//! re-arm would not synchronise: the poll could miss the value while the
//! wake, having found the flag raised, sends nothing (the store-buffer
//! pattern). `models` checks this under loom.

use crate::sync::{AtomicBool, Ordering};

/// Whether a `Wake` has been sent since the last re-arm.
pub(crate) struct WakeFlag(AtomicBool);

impl WakeFlag {
    pub(crate) fn new() -> Self {
        WakeFlag(AtomicBool::new(false))
    }

    /// Before each poll: a wake from here on sends a fresh `Wake`.
    ///
    /// Only a raised flag needs the read-modify-write (most polls, those
    /// of a message, find it clear, and a load is cheaper): a flag this
    /// load reads clear, while a wake has raised it, was raised by a wake
    /// that found it clear and so sent a `Wake`, which polls again after
    /// the cell takes it, and that poll's load reads the raise (it happens
    /// after it, through the system lane) and re-arms by a swap.
    #[inline]
    pub(crate) fn rearm(&self) {
        if self.0.load(Ordering::Relaxed) {
            self.0.swap(false, Ordering::AcqRel);
        }
    }

    /// A wake: true if the caller must send the cell a `Wake`.
    #[inline]
    pub(crate) fn raise(&self) -> bool {
        !self.0.swap(true, Ordering::AcqRel)
    }
}

#[cfg(all(test, loom))]
mod models {
    use super::WakeFlag;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    /// Two wakers each announce an event and wake; the owner polls once,
    /// then once per `Wake` sent, as the cell does. Once both wakers are
    /// done and every `Wake` is handled, the last poll has seen both
    /// events: no wake was lost.
    #[test]
    fn no_wake_is_lost() {
        crate::sync::loom_check(|| {
            let flag = Arc::new(WakeFlag::new());
            let events = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
            let sent = Arc::new(AtomicUsize::new(0));
            let done = Arc::new(AtomicUsize::new(0));
            for i in 0..2 {
                let (flag, events, sent, done) =
                    (flag.clone(), events.clone(), sent.clone(), done.clone());
                thread::spawn(move || {
                    events[i].store(true, Ordering::Release);
                    if flag.raise() {
                        sent.fetch_add(1, Ordering::Release);
                    }
                    done.fetch_add(1, Ordering::Release);
                });
            }
            let poll = |seen: &mut [bool; 2]| {
                flag.rearm();
                for (i, event) in events.iter().enumerate() {
                    seen[i] |= event.load(Ordering::Acquire);
                }
            };
            let mut seen = [false; 2];
            poll(&mut seen);
            let mut handled = 0;
            loop {
                if handled < sent.load(Ordering::Acquire) {
                    handled += 1;
                    seen = [false; 2];
                    poll(&mut seen);
                } else if done.load(Ordering::Acquire) == 2 {
                    if handled == sent.load(Ordering::Acquire) {
                        break;
                    }
                } else {
                    thread::yield_now();
                }
            }
            // The future is "both events": the last poll must see both.
            assert!(
                seen[0] && seen[1],
                "a wake was lost: the last poll saw {seen:?}"
            );
        });
    }
}

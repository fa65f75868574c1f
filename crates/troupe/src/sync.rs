//! The loom shim: the only module that names `std::sync::atomic`, `std::thread`
//! and `UnsafeCell` for the lock-free parts of the runtime.
//!
//! Under `--cfg loom` every primitive comes from loom, so the same code of the
//! mailbox queue and the mailbox state machine is model-checked by the models in
//! `mailbox/models.rs`. `UnsafeCell` exposes loom's closure API (`with`,
//! `with_mut`) in both builds so that loom can track every access. `Mutex`
//! is here for the one lock the mailbox's models must see: the queue of a
//! `DropOldest` mailbox (`mailbox/drop_oldest.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

/// Hint to the processor (or to loom's scheduler) that this thread is spinning.
#[cfg(loom)]
pub(crate) fn spin_hint() {
    loom::thread::yield_now();
}

/// Hint to the processor (or to loom's scheduler) that this thread is spinning.
#[cfg(not(loom))]
#[inline]
pub(crate) fn spin_hint() {
    std::hint::spin_loop();
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `std::cell::UnsafeCell` with loom's closure-based access API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared raw pointer to the contents.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a mutable raw pointer to the contents.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Checks `f` with loom's model checker, preemptions bounded at 3 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise: the one loom set-up of every
/// model test (the mailbox's and the pool's).
#[cfg(all(test, loom))]
pub(crate) fn loom_check(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

//! What a scheduler entry runs: a type-erased `FnOnce() + Send` that keeps a
//! small closure inline instead of boxing it.
//!
//! Most entries are a scheduled `tell`: a closure holding the target's
//! `ActorRef` (16 bytes) and the message. Boxed, each would cost a heap
//! allocation (a 48-byte block for a 32-byte closure) on top of its wheel
//! entry; inline, an entry of the wheel is all a pending timer costs (see
//! `Wheel::ENTRY_SIZE`: 16 bytes of bookkeeping plus this 40-byte value,
//! whose function pointer also tells a pending place from a vacant one).
//! A closure larger than [`INLINE`] bytes, or aligned to more than 8, is
//! boxed and the box (one pointer) is kept inline.
//!
//! # Safety argument
//!
//! `payload` holds a live `F` from [`Action::new`] until `call` consumes it,
//! and `call` is the monomorphised function for that same `F`. `call` runs
//! exactly once: from [`Action::run`] (which then forgets the `Action`) or
//! from `Drop` (which only runs if `run` did not).

use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ptr;

/// Bytes of closure kept inline: an `ActorRef` and a 16-byte message.
pub(crate) const INLINE: usize = 32;

/// Inline storage, aligned for any closure of alignment up to 8.
#[repr(C, align(8))]
struct Payload([MaybeUninit<u8>; INLINE]);

/// A `FnOnce() + Send + 'static`, stored inline when small (module header).
pub(crate) struct Action {
    /// Reads the closure out of `payload` and runs it (`true`) or drops it.
    call: unsafe fn(*mut Payload, bool),
    payload: Payload,
}

// SAFETY: an `Action` is only made from an `F: Send` (see `new`), which is
// the only thing it owns.
unsafe impl Send for Action {}

impl Action {
    /// Wraps `f`, inline if it fits (see the module header).
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Action {
        if Self::fits::<F>() {
            Self::inline(f)
        } else {
            let boxed = Box::new(f);
            // One pointer: always fits.
            Self::inline(boxed)
        }
    }

    fn fits<F>() -> bool {
        mem::size_of::<F>() <= INLINE && mem::align_of::<F>() <= mem::align_of::<Payload>()
    }

    fn inline<F: FnOnce() + Send + 'static>(f: F) -> Action {
        assert!(Self::fits::<F>(), "the closure does not fit inline");
        let mut payload = Payload([MaybeUninit::uninit(); INLINE]);
        // `F` fits in `payload` and needs no more alignment than it
        // has (asserted above), and the storage is ours and uninitialised.
        // SAFETY: by the argument just above.
        unsafe { ptr::write(payload.0.as_mut_ptr().cast::<F>(), f) };
        Action {
            call: consume::<F>,
            payload,
        }
    }

    /// Runs the closure.
    pub(crate) fn run(self) {
        let mut this = ManuallyDrop::new(self);
        // `payload` holds the live `F` that `call` was made for, and
        // `this` is never dropped, so the closure is consumed only here. If
        // the closure panics it has already been moved out of `payload`.
        // SAFETY: by the argument just above.
        unsafe { (this.call)(&mut this.payload, true) }
    }
}

impl Drop for Action {
    fn drop(&mut self) {
        // `run` forgets the `Action`, so a dropped one still holds
        // the live `F` that `call` was made for; it is consumed once, here.
        // SAFETY: by the argument just above.
        unsafe { (self.call)(&mut self.payload, false) }
    }
}

/// Moves the `F` out of `payload` and runs or drops it.
///
/// # Safety
///
/// `payload` must hold a live `F` written by [`Action::new`], which is not
/// used again afterwards.
unsafe fn consume<F: FnOnce()>(payload: *mut Payload, run: bool) {
    // the caller guarantees a live, properly aligned `F` that is read
    // only this once.
    // SAFETY: by the argument just above.
    let f = unsafe { ptr::read(payload.cast::<F>()) };
    if run {
        f();
    } else {
        drop(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts drops, to see that every closure is consumed exactly once.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn an_action_is_the_size_the_wheel_docs_count() {
        assert_eq!(mem::size_of::<Action>(), 40);
    }

    #[test]
    fn small_and_large_closures_run_once_and_drop_their_captures() {
        let runs = Arc::new(AtomicUsize::new(0));
        let drops = Arc::new(AtomicUsize::new(0));
        let small = Counted(drops.clone());
        let large = (Counted(drops.clone()), [7u64; 8]);
        let (r1, r2) = (runs.clone(), runs.clone());
        Action::new(move || {
            let _keep = &small;
            r1.fetch_add(1, Ordering::SeqCst);
        })
        .run();
        Action::new(move || {
            // The whole tuple is captured (not just the array), so its
            // `Counted` is dropped with the closure.
            let (_counted, words) = &large;
            assert_eq!(words.iter().sum::<u64>(), 56);
            r2.fetch_add(1, Ordering::SeqCst);
        })
        .run();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_dropped_action_drops_its_closure_without_running_it() {
        let drops = Arc::new(AtomicUsize::new(0));
        for big in [false, true] {
            let c = Counted(drops.clone());
            let pad = [0u8; 64];
            let action = if big {
                Action::new(move || {
                    let _ = (&c, pad);
                    unreachable!()
                })
            } else {
                Action::new(move || {
                    let _ = &c;
                    unreachable!()
                })
            };
            drop(action);
        }
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_panicking_closure_drops_its_captures_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let c = Counted(drops.clone());
        let action = Action::new(move || {
            let _c = c;
            panic!("boom");
        });
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| action.run()));
        assert!(caught.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn over_aligned_and_zero_sized_closures_work() {
        #[repr(align(32))]
        struct Wide(u8);
        let wide = Wide(3);
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        Action::new(move || {
            h.fetch_add(wide.0 as usize, Ordering::SeqCst);
        })
        .run();
        Action::new(|| {}).run();
        assert_eq!(hits.load(Ordering::SeqCst), 3);
    }
}

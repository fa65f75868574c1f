//! Faults a test injects into the prime workers: a panic on one n, or a
//! gate that holds a request on one n in the worker for as long as the test
//! wants. Built only with the `faults` feature, which this crate's own tests
//! turn on (through its dev-dependency on itself) and production builds do
//! not: without it, [`Faults`] is an empty type whose check compiles to
//! nothing, so no production worker carries or tests a fault.

#[cfg(not(feature = "faults"))]
pub(crate) use disabled::Faults;
#[cfg(feature = "faults")]
pub use enabled::{Faults, Gate};

#[cfg(not(feature = "faults"))]
mod disabled {
    /// No faults: production builds.
    #[derive(Clone, Default)]
    // Braced, so that `Faults::default()` reads the same with or without
    // the feature.
    pub(crate) struct Faults {}

    impl Faults {
        /// Nothing to inject.
        #[inline(always)]
        pub(crate) fn before_answer(&self, _n: usize) {}
    }
}

#[cfg(feature = "faults")]
mod enabled {
    use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
    use std::time::Duration;

    /// Faults injected into every prime worker of a service.
    #[derive(Clone, Default)]
    pub struct Faults {
        /// Panic on this n: the supervisor restarts the worker and the
        /// request gets a 500.
        pub panic_on: Option<usize>,
        /// Wait at this gate on this n before answering: a request held in
        /// flight for as long as the test wants (up to the service's
        /// request timeout).
        pub hold_on: Option<(usize, Arc<Gate>)>,
    }

    impl Faults {
        /// Called by a worker before it answers `n`: panics or waits as
        /// injected.
        pub(crate) fn before_answer(&self, n: usize) {
            if self.panic_on == Some(n) {
                panic!("fault injected for n = {n}");
            }
            if let Some((held, gate)) = &self.hold_on {
                if *held == n {
                    gate.pass();
                }
            }
        }
    }

    /// A gate a worker waits at: the test learns when a request has
    /// reached it and decides when it may go on. Opened once, it stays
    /// open.
    #[derive(Debug, Default)]
    pub struct Gate {
        state: Mutex<GateState>,
        changed: Condvar,
    }

    #[derive(Debug, Default)]
    struct GateState {
        arrived: usize,
        open: bool,
    }

    impl Gate {
        fn lock(&self) -> MutexGuard<'_, GateState> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// Waits until a request has arrived at the gate, for at most
        /// `timeout`; false if none did.
        pub fn wait_arrival(&self, timeout: Duration) -> bool {
            let state = self.lock();
            let (state, _) = self
                .changed
                .wait_timeout_while(state, timeout, |s| s.arrived == 0)
                .unwrap_or_else(PoisonError::into_inner);
            state.arrived > 0
        }

        /// Lets the held requests, and all later ones, through.
        pub fn open(&self) {
            self.lock().open = true;
            self.changed.notify_all();
        }

        /// Announces an arrival, then blocks until the gate is open.
        fn pass(&self) {
            let mut state = self.lock();
            state.arrived += 1;
            self.changed.notify_all();
            let _open = self
                .changed
                .wait_while(state, |s| !s.open)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

//! [`Latch`]: a one-shot gate that holds threads, typically an actor inside
//! its handler, until the test opens it, and that tells the test when they
//! have arrived, so "the actor is busy" is a fact the test waited for, not a
//! race it hopes to win.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A one-shot gate: threads [`wait`](Latch::wait) until the test
/// [`open`](Latch::open)s it; [`expect_waiters`](Latch::expect_waiters)
/// waits until they are there. Clones share the gate.
///
/// Used to hold an actor inside a handler while the test fills its mailbox
/// or sends it system messages. Holding an actor holds its thread, so hold
/// pinned actors, or at most one pool actor per spare worker (the probes'
/// actors need a worker to run on too).
///
/// ```
/// use std::time::Duration;
/// use troupe::{Actor, ActorRef, ActorSystem, Context, Props};
/// use troupe_testkit::{Latch, TestProbe};
///
/// /// Waits at the latch on message 0; reports every message.
/// struct Held {
///     latch: Latch,
///     done: ActorRef<u32>,
/// }
/// impl Actor for Held {
///     type Msg = u32;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, n: u32) {
///         if n == 0 {
///             self.latch.wait(Duration::from_secs(5));
///         }
///         self.done.tell(n);
///     }
/// }
///
/// let patience = Duration::from_secs(5);
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let probe = TestProbe::new(&system, "handled");
/// let latch = Latch::new();
/// let (l, done) = (latch.clone(), probe.actor_ref());
/// let props = Props::new(move || Held { latch: l.clone(), done: done.clone() });
/// let held = system.spawn(props.dispatcher("pinned")).unwrap();
/// held.tell(0);
/// latch.expect_waiters(1, patience); // inside the handler of 0
/// held.tell(1);
/// held.tell(2);
/// assert_eq!(held.queued(), 2, "queued behind the held handler");
/// latch.open();
/// assert_eq!(probe.receive_n(3, patience), [0, 1, 2]);
/// troupe_testkit::terminate(&system, patience);
/// ```
#[derive(Clone, Default)]
pub struct Latch {
    inner: Arc<State>,
}

#[derive(Default)]
struct State {
    gate: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    open: bool,
    /// Calls of `wait` so far, let through or not.
    arrived: usize,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `done` holds for the gate or `deadline` passes; whether
    /// it holds.
    fn wait_until(&self, deadline: Instant, mut done: impl FnMut(&Gate) -> bool) -> bool {
        let mut gate = self.lock();
        loop {
            if done(&gate) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            gate = self
                .changed
                .wait_timeout(gate, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Latch {
    /// A closed latch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the latch for every waiter, now and later.
    pub fn open(&self) {
        self.inner.lock().open = true;
        self.inner.changed.notify_all();
    }

    /// Whether the latch has been opened.
    pub fn is_open(&self) -> bool {
        self.inner.lock().open
    }

    /// Blocks until the latch is open, at most `timeout`.
    ///
    /// # Panics
    ///
    /// If it is still closed after `timeout` (inside a handler, that fails
    /// the actor; the test then fails on what it expected of it).
    #[track_caller]
    pub fn wait(&self, timeout: Duration) {
        let start = Instant::now();
        self.inner.lock().arrived += 1;
        self.inner.changed.notify_all();
        if !self.inner.wait_until(start + timeout, |g| g.open) {
            panic!(
                "latch: expected to be opened within {timeout:?}, still closed after {:?}",
                start.elapsed()
            );
        }
    }

    /// Expects `n` calls of [`wait`](Self::wait) in all (threads let through
    /// count too) within `timeout`: the actors are inside their handlers.
    ///
    /// # Panics
    ///
    /// If fewer came within `timeout`, naming how many did.
    #[track_caller]
    pub fn expect_waiters(&self, n: usize, timeout: Duration) {
        let start = Instant::now();
        if !self.inner.wait_until(start + timeout, |g| g.arrived >= n) {
            panic!(
                "latch: expected {n} waiters within {timeout:?}, {} came",
                self.inner.lock().arrived
            );
        }
    }
}

impl std::fmt::Debug for Latch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gate = self.inner.lock();
        f.debug_struct("Latch")
            .field("open", &gate.open)
            .field("arrived", &gate.arrived)
            .finish()
    }
}

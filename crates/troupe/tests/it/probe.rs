//! Probes, latches and the panic filter shared by the integration tests.
//!
//! A module of the `it` test binary; `tests/thread_census.rs`, a binary of
//! its own, includes it with `#[path]`. That binary uses only a few of the
//! helpers, hence the `dead_code` allowance.
//!
//! # Ground rules
//!
//! * Tests never sleep to wait for an outcome. They block on a [`Probe`] (a
//!   channel whose [`expect`](Probe::expect) fails loudly after
//!   [`PATIENCE`]) or on a [`Latch`], or they assert counts after
//!   [`terminate`], which returns only once every runtime thread has been
//!   joined, so everything the actors did is visible.
//! * "Nothing else arrived" is checked with [`Probe::received`] after
//!   termination, never by waiting for a quiet period.

#![allow(dead_code)]

use std::fmt::Debug;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::time::{Duration, Instant};

use troupe::{Actor, ActorId, ActorRef, ActorSystem, Context, Props, Signal, TerminationReason};

/// Keeps the expected panics of a test out of the test output: a panic
/// whose message contains one of the `markers` is not printed; every other
/// panic is, as before. The markers of every caller add up, so tests that
/// share the process cannot undo one another's filters.
pub fn quiet_panics(markers: &[&'static str]) {
    static MARKERS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    static HOOK: Once = Once::new();
    MARKERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend_from_slice(markers);
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = info.to_string();
            let expected = MARKERS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .any(|m| text.contains(m));
            if !expected {
                default(info);
            }
        }));
    });
}

/// How long a test waits for an outcome before it fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The receiving end of a test probe: values sent through its
/// [`ProbeRef`]s, awaited with a deadline.
pub struct Probe<T> {
    name: String,
    tx: Sender<T>,
    rx: Receiver<T>,
}

/// The sending end of a [`Probe`]: cloneable, `Send + Sync`, cheap.
pub struct ProbeRef<T> {
    tx: Sender<T>,
}

impl<T> Clone for ProbeRef<T> {
    fn clone(&self) -> Self {
        ProbeRef {
            tx: self.tx.clone(),
        }
    }
}

impl<T> ProbeRef<T> {
    /// Sends `value` to the probe. A probe that is gone (its test has ended)
    /// is not an error for the sender.
    pub fn send(&self, value: T) {
        let _ = self.tx.send(value);
    }
}

impl<T> Probe<T> {
    /// A probe named `name` (the name appears in failure messages).
    pub fn new(name: &str) -> Self {
        let (tx, rx) = mpsc::channel();
        Probe {
            name: name.to_string(),
            tx,
            rx,
        }
    }

    /// A sender for actors, threads and listeners.
    pub fn sender(&self) -> ProbeRef<T> {
        ProbeRef {
            tx: self.tx.clone(),
        }
    }

    /// The next value; panics if none arrives within [`PATIENCE`].
    pub fn expect(&self) -> T {
        match self.rx.recv_timeout(PATIENCE) {
            Ok(value) => value,
            Err(RecvTimeoutError::Timeout) => {
                panic!("probe `{}`: nothing arrived within {PATIENCE:?}", self.name)
            }
            Err(RecvTimeoutError::Disconnected) => {
                unreachable!("a probe keeps a sender of its own")
            }
        }
    }

    /// The next `n` values, in arrival order.
    pub fn expect_n(&self, n: usize) -> Vec<T> {
        (0..n).map(|_| self.expect()).collect()
    }

    /// Everything already sent and not yet taken, without waiting. Meant for
    /// after [`terminate`], when no runtime thread can send any more.
    pub fn received(&self) -> Vec<T> {
        self.rx.try_iter().collect()
    }
}

impl<T: Debug + PartialEq> Probe<T> {
    /// The next value, which must equal `expected`.
    pub fn expect_eq(&self, expected: T) {
        let got = self.expect();
        assert_eq!(
            got, expected,
            "probe `{}` got an unexpected value",
            self.name
        );
    }
}

/// A one-shot gate: threads [`wait`](Latch::wait) until someone
/// [`open`](Latch::open)s it. Used to hold an actor inside its handler.
#[derive(Clone, Default)]
pub struct Latch {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl Latch {
    /// A closed latch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the latch for every waiter, now and later.
    pub fn open(&self) {
        let (open, cv) = &*self.inner;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }

    /// Blocks until the latch is open; panics after [`PATIENCE`].
    pub fn wait(&self) {
        let (open, cv) = &*self.inner;
        let deadline = Instant::now() + PATIENCE;
        let mut guard = open.lock().unwrap();
        while !*guard {
            let now = Instant::now();
            assert!(now < deadline, "latch not opened within {PATIENCE:?}");
            guard = cv.wait_timeout(guard, deadline - now).unwrap().0;
        }
    }
}

/// A shared, ordered record of events (lifecycle hooks and the like).
#[derive(Clone, Default)]
pub struct EventLog {
    events: Arc<Mutex<Vec<String>>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an event.
    pub fn push(&self, event: impl Into<String>) {
        self.events.lock().unwrap().push(event.into());
    }

    /// The events so far.
    pub fn snapshot(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// The position of `event`; panics (showing the log) if it is missing.
    pub fn position(&self, event: &str) -> usize {
        let events = self.snapshot();
        events
            .iter()
            .position(|e| e == event)
            .unwrap_or_else(|| panic!("event {event:?} missing from {events:?}"))
    }
}

/// The system every test starts from: two workers on the default pool.
pub fn system() -> ActorSystem {
    ActorSystem::builder()
        .threads(2)
        .build()
        .expect("the default configuration is valid")
}

/// Shuts `system` down and waits (at most [`PATIENCE`]) until every actor
/// has stopped and every runtime thread has been joined.
pub fn terminate(system: &ActorSystem) -> TerminationReason {
    system.shutdown();
    await_end(system)
}

/// Waits (at most [`PATIENCE`]) for a system that is ending by itself.
pub fn await_end(system: &ActorSystem) -> TerminationReason {
    system
        .await_termination_timeout(PATIENCE)
        .expect("the actor system did not terminate within the patience")
}

/// A top-level actor that watches `target` and reports its termination:
/// the returned probe receives the target's id once it has stopped.
///
/// Returns once the watch has been sent, so a stop sent afterwards reaches
/// the target behind the watch.
pub fn watch_probe<M: Send + 'static>(
    system: &ActorSystem,
    target: &ActorRef<M>,
) -> Probe<ActorId> {
    let probe = Probe::new(&format!("terminated({target:?})"));
    let watching = Probe::new(&format!("watching({target:?})"));
    let (out, ack) = (probe.sender(), watching.sender());
    let target = target.clone();
    system
        .spawn(Props::new(move || DeathProbe {
            target: target.clone(),
            out: out.clone(),
            watching: ack.clone(),
        }))
        .expect("spawn the death-watch probe");
    watching.expect();
    probe
}

struct DeathProbe<M: Send + 'static> {
    target: ActorRef<M>,
    out: ProbeRef<ActorId>,
    watching: ProbeRef<()>,
}

impl<M: Send + 'static> Actor for DeathProbe<M> {
    type Msg = ();

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.watch(&self.target);
        self.watching.send(());
    }

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id) = signal {
            self.out.send(id);
        }
    }
}

//! The connections an async server is serving, so that shutdown can tell
//! each to finish its request in flight and then wait until all have.
//!
//! A connection task checks for the stop on every wake-up, once per request
//! or more, so the check is one load of a flag all connections share (a
//! cache line that stays in every core's cache until shutdown writes it)
//! and a comparison of the task's waker with the one it registered. A
//! waiting `Notify` (what a `watch` uses) takes a lock on every poll, and a
//! oneshot per connection, tried first, cost 0.6% of the 1,000-connection
//! benchmark's profile, mostly in loading its state from a line of its own.
//! The registry's lock is taken when a connection opens, when it first
//! waits and when it closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};

use tokio::sync::Notify;

/// The open connections of one server.
#[derive(Default)]
pub(crate) struct Connections {
    /// Set (under the lock) when shutdown begins; never cleared.
    stopping: AtomicBool,
    inner: Mutex<Inner>,
    /// Notified when the last connection closes after a stop.
    drained: Notify,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// Connections registered and not yet dropped.
    open: usize,
    /// How to wake each connection's task, once it has waited.
    wakers: HashMap<u64, Waker>,
}

/// A connection's place in the registry, given up when dropped (however
/// the connection's task ends).
pub(crate) struct Registration {
    id: u64,
    connections: Arc<Connections>,
    /// The waker last put in the registry.
    waker: Option<Waker>,
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; recover the data anyway.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection. Called by the accept loop before it
    /// spawns the connection's task, so that a shutdown beginning right
    /// after waits for it.
    pub(crate) fn register(self: &Arc<Self>) -> Registration {
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.open += 1;
        Registration {
            id,
            connections: self.clone(),
            waker: None,
        }
    }

    /// Tells every connection to finish and wakes each.
    pub(crate) fn stop_all(&self) {
        let wakers: Vec<Waker> = {
            let mut inner = self.lock();
            self.stopping.store(true, Ordering::Release);
            inner.wakers.drain().map(|(_, waker)| waker).collect()
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Waits until every connection has closed (after [`Self::stop_all`]).
    pub(crate) async fn all_closed(&self) {
        // A notification before `notified` is awaited is not lost:
        // `notify_one` keeps it as a permit.
        loop {
            let notified = self.drained.notified();
            if self.lock().open == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Registration {
    /// Whether the connection should finish; if not, its task (the one
    /// polling with `cx`) will be woken when it should.
    pub(crate) fn stop_requested(&mut self, cx: &Context<'_>) -> bool {
        let connections = &self.connections;
        if connections.stopping.load(Ordering::Acquire) {
            return true;
        }
        if self
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return false;
        }
        let waker = cx.waker().clone();
        {
            let mut inner = connections.lock();
            // `stop_all` sets the flag and takes the wakers under this lock:
            // either it sees this waker, or this sees the flag.
            if connections.stopping.load(Ordering::Acquire) {
                return true;
            }
            inner.wakers.insert(self.id, waker.clone());
        }
        self.waker = Some(waker);
        false
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inner = self.connections.lock();
        inner.wakers.remove(&self.id);
        inner.open -= 1;
        if inner.open == 0 && self.connections.stopping.load(Ordering::Acquire) {
            self.connections.drained.notify_one();
        }
    }
}

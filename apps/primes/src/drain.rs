//! The connections an async server is serving, so that shutdown can tell
//! each to finish its request in flight and then wait until all have.
//!
//! Each connection gets a stop signal of its own (a oneshot) rather than a
//! shared broadcast (a `watch`, a `Notify`): a connection task polls its
//! stop signal every time it wakes, once per request or more, and a waiting
//! `Notify` takes its lock on every such poll, from every connection. The
//! registry's lock is taken only when a connection opens or closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{oneshot, Notify};

/// The open connections of one server.
#[derive(Default)]
pub(crate) struct Connections {
    inner: Mutex<Inner>,
    /// Notified when the last connection closes during a drain.
    drained: Notify,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// Connections registered and not yet dropped.
    open: usize,
    /// Their stop signals, until a drain sends them.
    stops: HashMap<u64, oneshot::Sender<()>>,
    draining: bool,
}

/// A connection's place in the registry, given up when dropped (however
/// the connection's task ends).
pub(crate) struct Registration {
    id: u64,
    connections: Arc<Connections>,
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; recover the data anyway.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection. Called by the accept loop before it
    /// spawns the connection's task, so a drain that begins right after
    /// cannot miss it. The receiver completes when the connection should
    /// finish (or when the server went away without a drain).
    pub(crate) fn register(self: &Arc<Self>) -> (Registration, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.open += 1;
        inner.stops.insert(id, tx);
        let registration = Registration {
            id,
            connections: self.clone(),
        };
        (registration, rx)
    }

    /// Tells every connection to finish. Call once no more connections can
    /// be registered.
    pub(crate) fn stop_all(&self) {
        let stops: Vec<_> = {
            let mut inner = self.lock();
            inner.draining = true;
            inner.stops.drain().map(|(_, tx)| tx).collect()
        };
        // A connection already gone dropped its receiver: nothing to do.
        for stop in stops {
            let _ = stop.send(());
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

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inner = self.connections.lock();
        inner.stops.remove(&self.id);
        inner.open -= 1;
        if inner.draining && inner.open == 0 {
            self.connections.drained.notify_one();
        }
    }
}

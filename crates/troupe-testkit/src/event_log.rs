//! [`EventLog`]: a shared, ordered record of events (lifecycle hooks and the
//! like), written by actors as they go and read by the test afterwards, for
//! checks of order ("the children stopped before their parent") that no
//! single message shows.

use std::sync::{Arc, Mutex, MutexGuard};

/// A shared, ordered record of events: clones append to the same log.
///
/// Unlike a [`TestProbe`](crate::TestProbe) it is no actor: it records what
/// actors do while the system shuts down (their `stopped` hooks, say), when
/// a probe may have stopped already, and it can be read after termination.
///
/// ```
/// use troupe_testkit::EventLog;
///
/// let log = EventLog::new();
/// let writer = log.clone();
/// std::thread::spawn(move || {
///     writer.push("started");
///     writer.push("stopped");
/// })
/// .join()
/// .unwrap();
/// assert_eq!(log.snapshot(), ["started", "stopped"]);
/// assert!(log.position("started") < log.position("stopped"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    events: Arc<Mutex<Vec<String>>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<String>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `event`.
    pub fn push(&self, event: impl Into<String>) {
        self.lock().push(event.into());
    }

    /// The events so far, in the order they were pushed.
    pub fn snapshot(&self) -> Vec<String> {
        self.lock().clone()
    }

    /// The position of the first `event` in the log.
    ///
    /// # Panics
    ///
    /// If `event` is not in the log, showing the log.
    #[track_caller]
    pub fn position(&self, event: &str) -> usize {
        let events = self.lock();
        match events.iter().position(|e| e == event) {
            Some(i) => i,
            None => panic!("expected event {event:?} in the log, which holds {events:?}"),
        }
    }
}

//! Dead letters: messages that could not be delivered because their
//! recipient had stopped or its bounded mailbox was full. They are counted, logged with `tracing` at debug
//! level, and handed to listeners (tests use one as a probe).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::ids::{ActorId, DeadLetterReason};

/// One undeliverable message (the message itself has been dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Why it was not delivered.
    pub reason: DeadLetterReason,
    /// The actor it was sent to.
    pub recipient: ActorId,
    /// That actor's name, if it had one.
    pub recipient_name: Option<String>,
    /// The message's type name.
    pub message_type: &'static str,
}

type Listener = Arc<dyn Fn(&DeadLetter) + Send + Sync>;

/// The system's dead-letter office.
#[derive(Default)]
pub(crate) struct DeadLetters {
    count: AtomicU64,
    /// Lets the hot path skip the lock when nobody listens.
    has_listeners: AtomicBool,
    listeners: RwLock<Vec<Listener>>,
}

impl DeadLetters {
    pub(crate) fn record(
        &self,
        recipient: ActorId,
        name: Option<&str>,
        message_type: &'static str,
        reason: DeadLetterReason,
    ) {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(%recipient, name, message_type, ?reason, total = n, "dead letter");
        if self.has_listeners.load(Ordering::Acquire) {
            let letter = DeadLetter {
                reason,
                recipient,
                recipient_name: name.map(str::to_string),
                message_type,
            };
            let listeners = self
                .listeners
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            for listener in listeners {
                listener(&letter);
            }
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn subscribe(&self, listener: Listener) {
        self.listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
        self.has_listeners.store(true, Ordering::Release);
    }
}

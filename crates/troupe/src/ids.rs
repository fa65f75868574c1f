//! Identities and reasons: the plain values every floor of the runtime
//! names (an actor's id, why a message was not delivered, why a spawn
//! failed, what a valid actor name is). A leaf: it imports nothing of the
//! crate, so the mailbox, the dispatchers, the scheduler and the cell can
//! all use it without reaching up into the modules that build on them.
//! Users see these under their old paths (`troupe::actor_ref::ActorId`,
//! `troupe::system::{DeadLetterReason, SpawnError}`, and the crate root).

use std::fmt;

/// An actor's identity, unique within its actor system for the system's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorId(pub(crate) u64);

impl ActorId {
    /// The raw number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Why a message was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeadLetterReason {
    /// The recipient had stopped.
    RecipientStopped,
    /// The recipient's bounded mailbox was full (its overflow policy dropped
    /// this message).
    MailboxFull,
}

/// Why an actor could not be spawned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnError {
    /// A sibling already has this name.
    NameTaken(String),
    /// Names must be non-empty, at most 255 bytes, without `/` and not start with `$`.
    InvalidName(String),
    /// No dispatcher of this name is configured.
    UnknownDispatcher(String),
    /// The system is shutting down.
    ShuttingDown,
    /// The parent is stopping or restarting.
    ParentStopping,
    /// The operating system refused a thread (pinned dispatcher).
    Thread(String),
    /// More than 2^32 live top-level actors.
    TooManyActors,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::NameTaken(n) => write!(f, "an actor named {n:?} already exists here"),
            SpawnError::InvalidName(n) => write!(
                f,
                "invalid actor name {n:?}: names are 1..=255 bytes, without '/', not starting with '$'"
            ),
            SpawnError::UnknownDispatcher(d) => write!(f, "no dispatcher named {d:?} is configured"),
            SpawnError::ShuttingDown => f.write_str("the actor system is shutting down"),
            SpawnError::ParentStopping => f.write_str("the parent actor is stopping or restarting"),
            SpawnError::Thread(e) => write!(f, "cannot start a pinned thread: {e}"),
            SpawnError::TooManyActors => f.write_str("too many live top-level actors"),
        }
    }
}

impl std::error::Error for SpawnError {}

pub(crate) fn validate_name(name: &str) -> Result<(), SpawnError> {
    if name.is_empty() || name.len() > 255 || name.contains('/') || name.starts_with('$') {
        return Err(SpawnError::InvalidName(name.to_string()));
    }
    Ok(())
}

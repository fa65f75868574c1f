//! `ActorRef<M>`: the typed, cloneable address of an actor, with `tell`,
//! `try_tell` and `ask`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use crate::actor::cell::{self, TypedCell};
use crate::ask::{self, Ask, ReplyTo};
pub use crate::ids::ActorId;
use crate::ids::DeadLetterReason;
use crate::mailbox::bound::Overflow;

pub(crate) mod adapter;
mod external;
mod waiting;
pub use external::{ExternalTarget, Watcher};
pub use waiting::{SendError, SendFuture};

/// Why `try_tell` did not enqueue a message; the message is handed back.
#[derive(Debug, PartialEq, Eq)]
pub enum TrySendError<M> {
    /// The mailbox is bounded and full.
    Full(M),
    /// The actor has stopped; the message was not delivered.
    Closed(M),
}

impl<M> TrySendError<M> {
    /// The message that was not sent.
    pub fn into_inner(self) -> M {
        match self {
            TrySendError::Full(m) | TrySendError::Closed(m) => m,
        }
    }
}

impl<M> fmt::Display for TrySendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("the mailbox is full"),
            TrySendError::Closed(_) => f.write_str("the actor has stopped"),
        }
    }
}

impl<M: fmt::Debug> std::error::Error for TrySendError<M> {}

/// The address of an actor that handles messages of type `M`.
///
/// Cheap to clone (one reference count), `Send + Sync`, compared and hashed
/// by [`ActorId`].
///
/// ```
/// use std::time::Duration;
/// use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
///
/// enum Counter { Add(u64), Get(ReplyTo<u64>) }
/// struct CounterActor(u64);
/// impl Actor for CounterActor {
///     type Msg = Counter;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Counter) {
///         match msg {
///             Counter::Add(n) => self.0 += n,
///             Counter::Get(reply) => { reply.reply(self.0); }
///         }
///     }
/// }
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let counter = system.spawn(Props::new(|| CounterActor(0))).unwrap();
/// counter.tell(Counter::Add(2));
/// counter.tell(Counter::Add(3));
/// let total = counter.ask(Counter::Get, Duration::from_secs(5)).wait().unwrap();
/// assert_eq!(total, 5);
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
pub struct ActorRef<M: Send + 'static> {
    pub(crate) cell: Arc<dyn TypedCell<M>>,
}

impl<M: Send + 'static> ActorRef<M> {
    /// Sends `msg`. Never blocks and never fails: if the actor has stopped,
    /// or its bounded mailbox is full and its overflow policy refuses the
    /// message (`Fail`, `DropNewest`), the message goes to dead letters;
    /// under `DropOldest` the oldest queued message goes instead. Either way
    /// the dead letter is counted before `tell` returns.
    #[inline]
    pub fn tell(&self, msg: M) {
        cell::deliver(&self.cell, msg);
    }

    /// Sends `msg` unless the actor has stopped or its bounded mailbox is
    /// full; the error hands the message back. Under the `DropNewest` and
    /// `DropOldest` policies a full mailbox is not an error: the policy drops
    /// a message to dead letters and this returns `Ok`.
    pub fn try_tell(&self, msg: M) -> Result<(), TrySendError<M>> {
        if self.cell.is_closed() {
            return Err(TrySendError::Closed(msg));
        }
        // The actor may stop right after the check: then the message goes to
        // dead letters, as for `tell`.
        match cell::offer(&self.cell, msg) {
            Ok(()) => Ok(()),
            Err(msg) => match self.cell.bound().map(|b| b.overflow) {
                Some(Overflow::DropNewest) => {
                    self.cell.dead_letter(msg, DeadLetterReason::MailboxFull);
                    Ok(())
                }
                _ => Err(TrySendError::Full(msg)),
            },
        }
    }

    /// About how many user messages wait in the mailbox: a snapshot (exact
    /// for a bounded mailbox, and never more than its capacity; an estimate
    /// while an unbounded one is busy).
    pub fn queued(&self) -> usize {
        match self.cell.bound() {
            Some(bound) => bound.len(),
            None => self.cell.len_hint(),
        }
    }

    /// Sends the message built by `make` around a fresh reply handle, and
    /// returns the pending answer. Await it (`.await`) in async code or call
    /// [`Ask::wait`] on a plain thread. It fails with a timeout after
    /// `timeout`, or at once if the request is dropped without a reply (for
    /// instance because the actor has stopped), or with
    /// [`AskError::MailboxFull`](crate::AskError::MailboxFull) if a full
    /// bounded mailbox refuses the request.
    pub fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Ask<R> {
        let (reply_to, pending) = ask::pair(self.cell.id(), timeout, self.cell.system());
        if let Err(request) = cell::offer(&self.cell, make(reply_to)) {
            // A full bounded mailbox refused it: say so, rather than the
            // "no reply" that dropping the request would report.
            pending.refuse();
            self.cell
                .dead_letter(request, DeadLetterReason::MailboxFull);
        }
        pending
    }

    /// The actor's identity.
    pub fn id(&self) -> ActorId {
        self.cell.id()
    }

    /// The actor's name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.cell.name()
    }

    /// Whether the actor has stopped for good (a snapshot).
    pub fn is_terminated(&self) -> bool {
        self.cell.is_closed()
    }

    /// Whether `other` is this very ref, not just a ref to the same actor
    /// id (a message adapter has its owner's id): for registries that must
    /// keep or remove one ref among several (event stream, receptionist).
    pub(crate) fn is_same_ref(&self, other: &ActorRef<M>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.cell), Arc::as_ptr(&other.cell))
    }
}

impl<M: Send + 'static> Clone for ActorRef<M> {
    fn clone(&self) -> Self {
        ActorRef {
            cell: self.cell.clone(),
        }
    }
}

impl<M: Send + 'static> PartialEq for ActorRef<M> {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl<M: Send + 'static> Eq for ActorRef<M> {}

impl<M: Send + 'static> Hash for ActorRef<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id().hash(state)
    }
}

impl<M: Send + 'static> fmt::Debug for ActorRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "ActorRef({name}{})", self.id()),
            None => write!(f, "ActorRef(${})", self.id().0),
        }
    }
}

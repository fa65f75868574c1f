//! An actor's stash: messages it set aside for later ("not ready yet"),
//! with a capacity from `Props::stash_capacity`.
//!
//! # Rules
//!
//! * [`Context::stash`](crate::Context::stash) keeps a message; beyond the
//!   capacity it hands the message back as [`StashFull`], which the actor
//!   sees and decides about.
//! * [`Context::unstash_all`](crate::Context::unstash_all) (or
//!   [`unstash_one`](crate::Context::unstash_one), the oldest) makes stashed
//!   messages the actor's next ones: the run loop takes them before any
//!   message still in the mailbox, in the order they were stashed. Unstashed
//!   messages not yet handled stay ahead of ones unstashed later (they are
//!   older).
//! * A restart unstashes everything: the fresh instance handles the stashed
//!   messages first, in their order, before newer mailbox messages. A stop
//!   turns stashed and unstashed messages into dead letters.
//! * Making messages due sends the actor a system message (`Unstashed`).
//!   The run loop checks the system lane before every message already, so
//!   the handler that unstashed is the last mailbox message before the due
//!   ones, and the stash costs the loop nothing per message. A restart
//!   signals the fresh instance once it runs; a stopping actor drops the
//!   signal (its stash becomes dead letters).
//!
//! # Why the stash is type-erased
//!
//! Everything generic over the message type here is instantiated only by
//! the `Context` stash methods, i.e. only for actors that stash. The cell
//! creates no stash at spawn (it keeps the capacity, and `Context::stash`
//! makes the stash on first use), and restart and stop reach the stash
//! through [`ErasedStash`], out-of-line code compiled once. A first version
//! made `Stash<A::Msg>` at spawn and drained it with typed code in the
//! lifecycle, which put stash code into every actor's cell functions; that
//! changed how LLVM compiled the unrelated hot path (`invoke`, `offer_user`:
//! the message was copied with a 16-byte load straight after the two 8-byte
//! stores that wrote it, a store-to-load forwarding stall per copy) and the
//! one-worker ping-pong hop went from 26 to 37 ns.

use std::any::{type_name, Any};
use std::collections::VecDeque;
use std::fmt;

/// A message [`Context::stash`](crate::Context::stash) could not keep: the
/// stash holds its capacity already. The message is handed back.
#[derive(PartialEq, Eq)]
pub struct StashFull<M> {
    /// The message that was not stashed.
    pub msg: M,
    /// The stash's capacity (`Props::stash_capacity`).
    pub capacity: usize,
}

impl<M> fmt::Debug for StashFull<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StashFull")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<M> fmt::Display for StashFull<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stash is full ({} messages; set Props::stash_capacity)",
            self.capacity
        )
    }
}

impl<M> std::error::Error for StashFull<M> {}

/// The stash of one actor (see the module header). It lives in the cell's
/// rarely used links, created by the first `Context::stash`, so an idle
/// actor pays nothing for it; the run loop reads one flag of the cell's
/// status (`stash_due`) instead.
pub(crate) struct Stash<M> {
    stashed: VecDeque<M>,
    /// Unstashed, to be handled before the mailbox.
    unstashed: VecDeque<M>,
    capacity: usize,
}

impl<M> Stash<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Stash {
            stashed: VecDeque::new(),
            unstashed: VecDeque::new(),
            capacity,
        }
    }

    pub(crate) fn stash(&mut self, msg: M) -> Result<(), StashFull<M>> {
        if self.stashed.len() >= self.capacity {
            return Err(StashFull {
                msg,
                capacity: self.capacity,
            });
        }
        self.stashed.push_back(msg);
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.stashed.len()
    }

    /// Makes every stashed message due, after those already unstashed.
    pub(crate) fn unstash_all(&mut self) {
        if self.unstashed.is_empty() {
            std::mem::swap(&mut self.unstashed, &mut self.stashed);
        } else {
            self.unstashed.append(&mut self.stashed);
        }
    }

    /// Makes the oldest stashed message due; false if none is stashed.
    pub(crate) fn unstash_one(&mut self) -> bool {
        match self.stashed.pop_front() {
            Some(msg) => {
                self.unstashed.push_back(msg);
                true
            }
            None => false,
        }
    }

    /// Whether unstashed messages wait.
    pub(crate) fn has_due(&self) -> bool {
        !self.unstashed.is_empty()
    }

    /// The next unstashed message.
    pub(crate) fn next_due(&mut self) -> Option<M> {
        self.unstashed.pop_front()
    }

    /// Everything, unstashed then stashed (for a stop: dead letters).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = M> + '_ {
        self.unstashed.drain(..).chain(self.stashed.drain(..))
    }
}

/// What the cell's untyped code (restart, stop) needs of a `Stash<M>`; see
/// "Why the stash is type-erased" in the module header.
pub(crate) trait ErasedStash: Send {
    /// For the typed `Context` methods, which downcast to `Stash<M>`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// [`Stash::unstash_all`].
    fn unstash_all(&mut self);
    /// [`Stash::has_due`].
    fn has_due(&self) -> bool;
    /// Drops every message, unstashed then stashed; returns how many there
    /// were (the stop turns them into dead letters).
    fn discard(&mut self) -> usize;
    /// The message type's name, as dead letters record it.
    fn msg_type(&self) -> &'static str;
}

impl<M: Send + 'static> ErasedStash for Stash<M> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn unstash_all(&mut self) {
        Stash::unstash_all(self);
    }

    fn has_due(&self) -> bool {
        Stash::has_due(self)
    }

    fn discard(&mut self) -> usize {
        self.drain().count()
    }

    fn msg_type(&self) -> &'static str {
        type_name::<M>()
    }
}

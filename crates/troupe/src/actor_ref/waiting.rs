//! Sends that wait for room in a bounded mailbox: blocking with a timeout on
//! a plain thread ([`ActorRef::send_blocking`]), or asynchronously
//! ([`ActorRef::send`]). This is how a producer faster than its consumers is
//! slowed down instead of running the process out of memory.
//!
//! Both retry an offer, register as a waiter when the mailbox is full, and
//! retry once more before they sleep (see `mailbox/bound.rs` for why no
//! wake-up is lost). On an unbounded mailbox they never wait, nor on a
//! `DropOldest` one, which always makes room by dropping its oldest message
//! (see [`Overflow`](crate::Overflow) for which send waits under which
//! policy).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::thread;
use std::time::{Duration, Instant};

use super::ActorRef;
use crate::actor::cell::offer;
use crate::mailbox::bound::RoomWaiter;

/// Why a waiting send did not deliver; the message is handed back.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError<M> {
    /// The actor has stopped.
    Closed(M),
    /// No room within the timeout.
    Timeout(M),
}

impl<M> SendError<M> {
    /// The message that was not sent.
    pub fn into_inner(self) -> M {
        match self {
            SendError::Closed(m) | SendError::Timeout(m) => m,
        }
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Closed(_) => f.write_str("the actor has stopped"),
            SendError::Timeout(_) => f.write_str("no room in the mailbox within the timeout"),
        }
    }
}

impl<M: fmt::Debug> std::error::Error for SendError<M> {}

impl<M: Send + 'static> ActorRef<M> {
    /// Sends `msg`, waiting up to `timeout` for room if the actor's bounded
    /// mailbox is full (under `Overflow::Fail` or `Overflow::DropNewest`;
    /// under `DropOldest` there is always room). For a plain thread (it
    /// blocks); in async code use [`send`](Self::send).
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, Props};
    ///
    /// struct Sink;
    /// impl Actor for Sink {
    ///     type Msg = u64;
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _n: u64) {}
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let sink = system
    ///     .spawn(Props::new(|| Sink).mailbox(MailboxConfig::bounded(16, Overflow::Fail)))
    ///     .unwrap();
    /// for n in 0..1_000 {
    ///     // Never more than 16 messages queued: the loop waits for the sink.
    ///     sink.send_blocking(n, Duration::from_secs(5)).unwrap();
    /// }
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    pub fn send_blocking(&self, msg: M, timeout: Duration) -> Result<(), SendError<M>> {
        let deadline = Instant::now() + timeout;
        let mut msg = msg;
        loop {
            msg = match attempt(self, msg, || RoomWaiter::Thread(thread::current())) {
                Attempt::Sent => return Ok(()),
                Attempt::Closed(m) => return Err(SendError::Closed(m)),
                Attempt::Full(m) => m,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(SendError::Timeout(msg));
            }
            thread::park_timeout(deadline - now);
        }
    }

    /// Sends `msg`, waiting (asynchronously) for room if the actor's bounded
    /// mailbox is full (as for [`send_blocking`](Self::send_blocking)). Wrap
    /// it in a timeout of your runtime to bound the wait.
    pub fn send(&self, msg: M) -> SendFuture<'_, M> {
        SendFuture {
            target: self,
            msg: Some(msg),
        }
    }
}

/// The future of [`ActorRef::send`].
#[must_use = "a send does nothing unless awaited"]
pub struct SendFuture<'a, M: Send + 'static> {
    target: &'a ActorRef<M>,
    msg: Option<M>,
}

impl<M: Send + 'static> Unpin for SendFuture<'_, M> {}

impl<M: Send + 'static> Future for SendFuture<'_, M> {
    type Output = Result<(), SendError<M>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let msg = this
            .msg
            .take()
            .expect("a SendFuture is not polled after completion");
        match attempt(this.target, msg, || RoomWaiter::Task(cx.waker().clone())) {
            Attempt::Sent => Poll::Ready(Ok(())),
            Attempt::Closed(m) => Poll::Ready(Err(SendError::Closed(m))),
            Attempt::Full(m) => {
                this.msg = Some(m);
                Poll::Pending
            }
        }
    }
}

enum Attempt<M> {
    Sent,
    Closed(M),
    /// Still full; the caller is registered as a waiter and may sleep.
    Full(M),
}

/// One try of a waiting send: offer; if the mailbox is full, register as a
/// waiter and offer once more (so a place freed in between is not missed).
fn attempt<M: Send + 'static>(
    target: &ActorRef<M>,
    msg: M,
    waiter: impl FnOnce() -> RoomWaiter,
) -> Attempt<M> {
    let cell = &target.cell;
    if cell.is_closed() {
        return Attempt::Closed(msg);
    }
    let msg = match offer(cell, msg) {
        Ok(()) => return Attempt::Sent,
        Err(m) => m,
    };
    let bound = cell.bound().expect("only a bounded mailbox is ever full");
    bound.register(waiter());
    let msg = match offer(cell, msg) {
        Ok(()) => return Attempt::Sent,
        Err(m) => m,
    };
    if cell.is_closed() {
        return Attempt::Closed(msg);
    }
    Attempt::Full(msg)
}

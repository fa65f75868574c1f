//! Async work started by an actor (`Context::pipe_to_self`, feature
//! `tokio`): a future runs on the system's async runtime and its output
//! comes back to the actor as one of its own messages.
//!
//! # Design
//!
//! The future is wrapped so that a panic inside it is caught (it becomes a
//! [`Failure`] handed to the actor's mapping function, not a lost task) and
//! spawned on the runtime. Its completion is sent to the actor on the
//! system lane as `SystemMsg::Piped`, carrying the mapped message and the
//! pipe's id. The actor keeps the abort handle of each running pipe under
//! that id; a stop or a restart aborts every running pipe and forgets the
//! ids, so a completion that raced the abort finds no id and is dropped:
//! a restarted actor never sees the result of work its previous instance
//! started, exactly as with timers (see `timers.rs`).

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use super::{send_system, ActorCell, Cell, CellStatus, SystemMsg};
use crate::actor::Actor;
use crate::supervision::Failure;

/// The running pipes of one actor, by id.
#[derive(Default)]
pub(super) struct Pipes {
    /// `None` for a pipe that failed before it had a task.
    running: std::collections::HashMap<u64, Option<tokio::task::AbortHandle>>,
    next_id: u64,
}

/// Polls the inner future inside `catch_unwind`, so that a panic becomes
/// an `Err` with the panic's payload instead of an aborted task.
struct CatchPanic<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = self.inner.as_mut();
        // A future that panicked is never polled again: the task ends here.
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

impl<A: Actor> ActorCell<A> {
    /// `Context::pipe_to_self`.
    pub(crate) fn pipe_to_self<F, T>(
        self: &Arc<Self>,
        status: &mut CellStatus,
        future: F,
        map: impl FnOnce(Result<T, Failure>) -> A::Msg + Send + 'static,
    ) where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let pipes = &mut status.links().pipes;
        pipes.next_id += 1;
        let id = pipes.next_id;
        let me: Arc<dyn Cell> = self.clone();
        let actor = self.id;
        let handle = match self.system.async_runtime.handle(&self.system.name) {
            Ok(handle) => handle,
            Err(e) => {
                // No runtime, no work: the actor learns it the same way it
                // would learn of a failed future.
                let failure = Failure {
                    actor,
                    message: format!("cannot start the async runtime: {e}"),
                };
                pipes.running.insert(id, None);
                let msg: Box<dyn Any + Send> = Box::new(map(Err(failure)));
                send_system(&me, SystemMsg::Piped { id, msg });
                return;
            }
        };
        let task = handle.spawn(async move {
            let output = CatchPanic {
                inner: Box::pin(future),
            }
            .await
            .map_err(|payload| Failure::from_panic(actor, payload));
            let msg: Box<dyn Any + Send> = Box::new(map(output));
            send_system(&me, SystemMsg::Piped { id, msg });
        });
        status
            .links()
            .pipes
            .running
            .insert(id, Some(task.abort_handle()));
    }
}

/// Aborts every running pipe (the actor stops or restarts).
pub(super) fn cancel_all(status: &mut CellStatus) {
    if let Some(links) = status.links.as_mut() {
        for task in links.pipes.running.drain().filter_map(|(_, task)| task) {
            task.abort();
        }
    }
}

/// Whether a completed pipe still belongs to this instance (and forgets it).
pub(super) fn take_if_current(status: &mut CellStatus, id: u64) -> bool {
    status
        .links
        .as_mut()
        .is_some_and(|l| l.pipes.running.remove(&id).is_some())
}

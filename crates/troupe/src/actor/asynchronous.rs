//! Async actors: an [`AsyncActor`]'s `receive` is an `async fn`, and the
//! actor takes its next message only once that future has completed, so
//! messages are handled one at a time, in order, with `&mut self` as for a
//! synchronous [`Actor`].
//!
//! # How it runs
//!
//! An async actor is hosted by [`Async<A>`], an ordinary [`Actor`], so it
//! lives in the same cell, on the same dispatchers, with the same mailbox,
//! supervision, death watch, timers and stash as every actor, and a
//! synchronous actor pays nothing for it. The host keeps one boxed *driver*
//! future per actor instance, `loop { msg = next().await;
//! actor.receive(ctx, msg).await }` (`asynchronous/host.rs`): a message is
//! handed to it by polling it on the actor's dispatcher thread, inside the
//! cell's run. A handler that completes without suspending costs that one
//! poll, and no allocation. A handler that suspends leaves the cell
//! *awaiting*: user messages wait in the mailbox (a bounded one fills and
//! pushes back as usual), system messages still come in, and the
//! handler's waker sends the cell a wake on its system lane, which
//! schedules the cell to poll the handler again on its own dispatcher. No
//! thread ever blocks on a handler.
//!
//! While a handler is pending:
//!
//! * a stop drops its future at once (it is never polled again); the
//!   message it was handling is gone with it, as a handled message is (not
//!   a dead letter), so a [`ReplyTo`](crate::ReplyTo) in it that was not
//!   answered yet answers its asker `AskError::NoReply`;
//! * a restart (the actor's own failure or its group's) drops it likewise,
//!   before `before_restart`;
//! * a panic inside it fails the actor, and its supervisor's strategy
//!   applies as for a panic in a synchronous handler;
//! * timer messages, piped results, unstashed messages and signals wait,
//!   in order, and come before the next mailbox message once it completes;
//! * [`AsyncContext::stop`] takes effect once it completes.
//!
//! With troupe's `tokio` feature a handler is polled inside the tokio
//! runtime of the system (the one given to
//! `ActorSystemBuilder::async_runtime`, or one the system starts on the
//! first poll), so tokio's I/O, timers and
//! `tokio::spawn` work in it; on the tokio dispatcher it is polled inside
//! that dispatcher's runtime. A pool or pinned thread enters the runtime on
//! its first async poll and stays inside it (see `enter_runtime` in
//! `asynchronous/host.rs`), so the other actors it runs see it too. Without the feature no runtime is entered:
//! runtime-agnostic futures (troupe's [`Ask`](crate::Ask), channels,
//! [`AsyncContext::sleep`]) work, and a future that needs a tokio reactor
//! panics as it would outside tokio (which fails the actor).

mod host;
mod sleep;
mod wake_flag;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use self::host::Async;
pub use self::sleep::Sleep;

use super::cell::ActorCell;
use super::{Context, Signal};
use crate::actor_ref::ActorRef;
use crate::ids::{ActorId, SpawnError};
use crate::kernel::ActorSystem;
use crate::props::Props;
use crate::supervision::Failure;
use crate::Actor;

/// An actor whose message handler is an `async fn`: it may `.await` an
/// async client, another actor's answer, a timer, and the actor takes no
/// other message until it has completed.
///
/// Spawn it with [`Props::new_async`]; its ref is an
/// `ActorRef<Self::Msg>` like any actor's. The other methods are
/// synchronous, as in [`Actor`], and get the same [`AsyncContext`].
///
/// ```
/// use std::time::Duration;
/// use troupe::prelude::*;
///
/// enum Msg { Add(u64), Total(ReplyTo<u64>) }
///
/// struct Ledger { total: u64, auditor: ActorRef<(u64, ReplyTo<bool>)> }
///
/// impl AsyncActor for Ledger {
///     type Msg = Msg;
///     async fn receive(&mut self, _ctx: &mut AsyncContext<Self>, msg: Msg) {
///         match msg {
///             Msg::Add(n) => {
///                 // Awaits another actor's answer without holding a thread;
///                 // the next message waits until this one is done.
///                 let ask = self.auditor.ask(|reply| (n, reply), Duration::from_secs(5));
///                 if ask.await == Ok(true) {
///                     self.total += n;
///                 }
///             }
///             Msg::Total(reply) => {
///                 reply.reply(self.total);
///             }
///         }
///     }
/// }
///
/// struct Auditor;
/// impl Actor for Auditor {
///     type Msg = (u64, ReplyTo<bool>);
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, (n, reply): Self::Msg) {
///         reply.reply(n < 100);
///     }
/// }
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let auditor = system.spawn(Props::new(|| Auditor)).unwrap();
/// let ledger = system
///     .spawn(Props::new_async(move || Ledger { total: 0, auditor: auditor.clone() }))
///     .unwrap();
/// for n in [5, 500, 7] {
///     ledger.tell(Msg::Add(n));
/// }
/// let total = ledger.ask(Msg::Total, Duration::from_secs(5)).wait().unwrap();
/// assert_eq!(total, 12);
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
pub trait AsyncActor: Send + Sized + 'static {
    /// The messages this actor handles.
    type Msg: Send + 'static;

    /// Handles one message; the next one is taken once the returned future
    /// has completed. Write it as an `async fn`.
    fn receive(
        &mut self,
        ctx: &mut AsyncContext<Self>,
        msg: Self::Msg,
    ) -> impl Future<Output = ()> + Send;

    /// Called once before the first message (and, by default, after a restart).
    fn started(&mut self, ctx: &mut AsyncContext<Self>) {
        let _ = ctx;
    }

    /// Called once after the actor and all its children have stopped (a
    /// handler still pending at the stop has been dropped by then).
    fn stopped(&mut self, ctx: &mut AsyncContext<Self>) {
        let _ = ctx;
    }

    /// Called on the failed instance before it is dropped for a restart
    /// (a handler still pending has been dropped by then).
    fn before_restart(&mut self, ctx: &mut AsyncContext<Self>, failure: &Failure) {
        let _ = (ctx, failure);
    }

    /// Called on the fresh instance after a restart; by default calls `started`.
    fn after_restart(&mut self, ctx: &mut AsyncContext<Self>, failure: &Failure) {
        let _ = failure;
        self.started(ctx);
    }

    /// Handles a runtime signal; one that comes while a handler is pending
    /// is delivered once it has completed.
    fn signal(&mut self, ctx: &mut AsyncContext<Self>, signal: Signal) {
        let _ = (ctx, signal);
    }
}

/// What an async actor's methods can do besides updating its state: what a
/// synchronous actor's [`Context`] can, and [`sleep`](Self::sleep) on the
/// system's clock.
///
/// It lives as long as the actor instance and can be used across `.await`s;
/// the operations that touch the actor's run state (children, watches,
/// timers, stash, stop) run while the actor's cell polls the handler, which
/// is whenever the handler's own code runs. [`with`](Self::with) reaches
/// every method of the synchronous [`Context`] the same way.
pub struct AsyncContext<A: AsyncActor> {
    pub(crate) cell: Arc<ActorCell<Async<A>>>,
}

impl<A: AsyncActor> AsyncContext<A> {
    /// This actor's own address.
    pub fn myself(&self) -> ActorRef<A::Msg> {
        ActorRef {
            cell: self.cell.clone(),
        }
    }

    /// This actor's identity.
    pub fn id(&self) -> ActorId {
        self.cell.id
    }

    /// The actor system this actor runs in.
    pub fn system(&self) -> ActorSystem {
        ActorSystem::from_inner(self.cell.system.clone())
    }

    /// Runs `f` with the synchronous [`Context`] of this actor (its host's):
    /// for whatever this context has no method of its own for. `f` cannot
    /// `.await`, so the borrow ends before the handler suspends again.
    ///
    /// # Panics
    ///
    /// If called other than from this actor's handler (or other method) as
    /// its cell runs it: from another thread the handler started, say.
    pub fn with<R>(&mut self, f: impl FnOnce(&mut Context<'_, Async<A>>) -> R) -> R {
        host::with_context(&self.cell, f)
    }

    /// Spawns a child; it is stopped before this actor stops (or restarts).
    pub fn spawn<C: Actor>(&mut self, props: Props<C>) -> Result<ActorRef<C::Msg>, SpawnError> {
        self.with(|ctx| ctx.spawn(props))
    }

    /// Stops a child of this actor (see [`Context::stop_child`]).
    pub fn stop_child<M: Send + 'static>(&mut self, child: &ActorRef<M>) -> bool {
        self.with(|ctx| ctx.stop_child(child))
    }

    /// Stops this actor once the current handler has completed (children
    /// first).
    pub fn stop(&mut self) {
        self.with(|ctx| ctx.stop());
    }

    /// Watches `other` (see [`Context::watch`]).
    pub fn watch<M: Send + 'static>(&mut self, other: &ActorRef<M>) {
        self.with(|ctx| ctx.watch(other));
    }

    /// Stops watching `other` (see [`Context::unwatch`]).
    pub fn unwatch<M: Send + 'static>(&mut self, other: &ActorRef<M>) {
        self.with(|ctx| ctx.unwatch(other));
    }

    /// Delivers `msg` to this actor once after `delay` (see
    /// [`Context::schedule_once`]); it waits like any message while a
    /// handler is pending.
    pub fn schedule_once(&mut self, delay: Duration, msg: A::Msg) -> crate::TimerId {
        self.with(|ctx| ctx.schedule_once(delay, msg))
    }

    /// Sets `msg` aside for later (see [`Context::stash`]).
    pub fn stash(&mut self, msg: A::Msg) -> Result<(), crate::StashFull<A::Msg>> {
        self.with(|ctx| ctx.stash(msg))
    }

    /// Makes every stashed message due (see [`Context::unstash_all`]):
    /// they are handled, one at a time, once the current handler has
    /// completed and before any message still in the mailbox.
    pub fn unstash_all(&mut self) {
        self.with(|ctx| ctx.unstash_all());
    }

    /// A ref of another message type whose messages reach this actor as
    /// `convert(message)` (see [`Context::message_adapter`]).
    pub fn message_adapter<R: Send + 'static>(
        &self,
        convert: impl Fn(R) -> A::Msg + Send + Sync + 'static,
    ) -> ActorRef<R> {
        crate::actor_ref::adapter::adapter(self.cell.clone(), convert)
    }

    /// A future that completes `duration` from now on the system's clock,
    /// the scheduler's: a [`ManualClock`](crate::scheduler::ManualClock)
    /// moves it, so a test drives an awaiting handler without waiting.
    /// Needs no async runtime.
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep::new(self.cell.system.scheduler.clone(), duration)
    }
}

impl<A: AsyncActor> Props<Async<A>> {
    /// Props for an [`AsyncActor`] made by `factory` (at spawn, and again
    /// for each restart).
    pub fn new_async(factory: impl Fn() -> A + Send + Sync + 'static) -> Self {
        Props::new(move || Async::new(factory()))
    }
}

//! The host of an async actor: [`Async<A>`], the synchronous [`Actor`] that
//! the cell runs, with the driver future that hands messages to the async
//! handler, the frame through which a poll reaches the cell's run state,
//! and the waker that schedules the cell again.
//!
//! # Why a driver, a raw pointer and a frame
//!
//! * The handler's future borrows the actor (`&mut self`) and the context,
//!   so storing it next to the actor would make the host self-referential.
//!   Instead the actor sits in a heap block of its own, owned through a raw
//!   pointer (`ActorPtr`), and one boxed driver future per instance, `loop
//!   { msg = next().await; actor.receive(ctx, msg).await }`, holds the
//!   only reference to it while it exists. The host touches the actor only
//!   after dropping the driver (the hooks: `started`, `signal`, `stopped`,
//!   restarts), so the two never overlap. One box per instance, none per
//!   message.
//! * A handler's context lives across `.await`s, but the cell's run state
//!   (children, timers, stash) is lent out only for one call. The host puts
//!   a `Frame` on its stack for each poll, with the call's `Context`, and
//!   publishes it in a thread-local slot keyed by the cell's address for
//!   the length of the poll; `AsyncContext::with` and the driver's `next()`
//!   find it there. Nothing else can: the frame is gone (and the slot
//!   restored) when the poll returns, also by a panic.
//! * The waker is one `Arc` per instance; a wake sends `SystemMsg::Wake`
//!   once until the next poll (`wake_flag.rs`), and the cell polls the
//!   handler again when it takes that message (`cell/lifecycle.rs`).

use std::cell::Cell as StdCell;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Poll, Wake, Waker};

use super::wake_flag::WakeFlag;
use super::{AsyncActor, AsyncContext};
use crate::actor::cell::{send_system, ActorCell, Cell, SystemMsg};
use crate::actor::{Actor, Context, PendingOp, Signal};
use crate::supervision::Failure;

/// The driver future: the actor's handlers, one after another.
type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The host of an [`AsyncActor`]: the [`Actor`] its cell runs (see the
/// module header of `actor/asynchronous.rs`). Made by
/// [`Props::new_async`](crate::Props::new_async); its message type is the
/// async actor's.
pub struct Async<A: AsyncActor> {
    /// The actor, in a heap block of its own (see the module header).
    actor: ActorPtr<A>,
    /// Its handlers, while there is an instance to run them; made with the
    /// first message after a hook.
    driver: Option<Driver>,
    /// Set for the length of a poll: still set on entry means the last poll
    /// panicked, and a future that panicked is not polled again.
    polling: bool,
    /// The waker handed to the driver, made on the first poll.
    waker: Option<(Arc<CellWaker>, Waker)>,
    /// The tokio runtime to poll in: `None` until the first poll looks it
    /// up, `Some(None)` if there is none to enter (see `runtime`).
    #[cfg(feature = "tokio")]
    runtime: Option<Option<tokio::runtime::Handle>>,
}

impl<A: AsyncActor> Async<A> {
    /// Hosts `actor` (what [`Props::new_async`](crate::Props::new_async)
    /// does for each instance).
    pub fn new(actor: A) -> Self {
        Async {
            actor: ActorPtr(NonNull::from(Box::leak(Box::new(actor)))),
            driver: None,
            polling: false,
            waker: None,
            #[cfg(feature = "tokio")]
            runtime: None,
        }
    }

    /// Polls the driver with `input` (a message, or none for a wake) and
    /// tells the cell whether a handler is left pending.
    fn poll(&mut self, ctx: &mut Context<'_, Self>, input: Option<A::Msg>) {
        if self.polling {
            // The previous poll panicked (the actor was resumed): drop
            // what it left, with the message it was handling.
            self.polling = false;
            self.drop_driver(ctx);
        }
        if self.driver.is_none() {
            if input.is_none() {
                return; // a late wake for a driver already dropped
            }
            let actx = AsyncContext {
                cell: ctx.cell.clone(),
            };
            self.driver = Some(drive(self.actor, actx));
        }
        let (flag, waker) = self.waker.get_or_insert_with(|| {
            let cell: Arc<dyn Cell> = ctx.cell.clone();
            let flag = Arc::new(CellWaker {
                cell,
                queued: WakeFlag::new(),
            });
            let waker = Waker::from(flag.clone());
            (flag, waker)
        });
        // Before the poll: a wake from here on sends a fresh `Wake`.
        flag.queued.rearm();
        #[cfg(feature = "tokio")]
        let _runtime = enter_runtime(&mut self.runtime, ctx);
        let key = key_of(ctx.cell);
        let mut frame = Frame::<A> {
            ctx: (ctx as *mut Context<'_, Self>).cast(),
            input,
            idle: false,
        };
        let driver = self.driver.as_mut().expect("made above");
        self.polling = true;
        let polled = {
            let _scope = FrameScope::enter(key, (&mut frame as *mut Frame<A>).cast());
            driver
                .as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
        };
        self.polling = false;
        debug_assert!(frame.input.is_none(), "the driver takes every message");
        let pending = match polled {
            Poll::Pending => !frame.idle,
            // The driver loops for ever; if it ever ends, the next message
            // makes a fresh one.
            Poll::Ready(()) => {
                self.driver = None;
                false
            }
        };
        ctx.status.set_awaiting(pending);
    }

    /// Drops the driver (and a handler pending in it) with a frame up, so
    /// that what the handler's locals do when dropped can use the context.
    fn drop_driver(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(driver) = self.driver.take() {
            let key = key_of(ctx.cell);
            let mut frame = Frame::<A> {
                ctx: (ctx as *mut Context<'_, Self>).cast(),
                input: None,
                idle: true,
            };
            let _scope = FrameScope::enter(key, (&mut frame as *mut Frame<A>).cast());
            drop(driver);
        }
    }

    /// Runs a synchronous method of the actor: after dropping the driver,
    /// so that the actor is the hook's alone, with a frame up for its
    /// context.
    fn hook<R>(
        &mut self,
        ctx: &mut Context<'_, Self>,
        f: impl FnOnce(&mut A, &mut AsyncContext<A>) -> R,
    ) -> R {
        self.drop_driver(ctx);
        let mut actx = AsyncContext {
            cell: ctx.cell.clone(),
        };
        let key = key_of(ctx.cell);
        let mut frame = Frame::<A> {
            ctx: (ctx as *mut Context<'_, Self>).cast(),
            input: None,
            idle: true,
        };
        let _scope = FrameScope::enter(key, (&mut frame as *mut Frame<A>).cast());
        // There is no driver (dropped just above), so nothing else holds
        // a reference to the actor, and `self` is borrowed mutably for
        // this call.
        // SAFETY: by the argument just above (and `ActorPtr`'s invariant).
        let actor = unsafe { self.actor.get() };
        f(actor, &mut actx)
    }
}

impl<A: AsyncActor> Drop for Async<A> {
    fn drop(&mut self) {
        // The driver first: it may hold the only other reference to the
        // actor.
        self.driver = None;
        // The block came from `Box::leak` in `new` and is freed only
        // here; with the driver gone nothing refers to it.
        // SAFETY: by the argument just above.
        drop(unsafe { Box::from_raw(self.actor.0.as_ptr()) });
    }
}

impl<A: AsyncActor> Actor for Async<A> {
    type Msg = A::Msg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: A::Msg) {
        self.poll(ctx, Some(msg));
    }

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.hook(ctx, |a, actx| a.started(actx));
    }

    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        self.hook(ctx, |a, actx| a.stopped(actx));
    }

    fn before_restart(&mut self, ctx: &mut Context<'_, Self>, failure: &Failure) {
        self.hook(ctx, |a, actx| a.before_restart(actx, failure));
    }

    fn after_restart(&mut self, ctx: &mut Context<'_, Self>, failure: &Failure) {
        self.hook(ctx, |a, actx| a.after_restart(actx, failure));
    }

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        self.hook(ctx, |a, actx| a.signal(actx, signal));
    }

    fn pending_handler(&mut self, ctx: &mut Context<'_, Self>, op: PendingOp) {
        match op {
            PendingOp::Poll => self.poll(ctx, None),
            PendingOp::Cancel => {
                self.polling = false;
                self.drop_driver(ctx);
            }
        }
    }
}

/// Enters the tokio runtime for a poll (see `actor/asynchronous.rs`): on
/// the tokio dispatcher nothing (its threads are inside its runtime), on a
/// thread of troupe's own (a pool worker, a pinned thread) the system's
/// async runtime once for the thread's life, elsewhere for this poll.
///
/// Entering costs four atomic operations (tokio clones its handle in and
/// out of its thread-local context): per poll they were as much as the
/// rest of an async handler's overhead in ping-pong. A dispatcher thread
/// belongs to one system and runs its actors until the system stops, so it
/// enters that system's runtime on its first poll and stays inside, as
/// tokio's own worker threads are (`std::mem::forget` of the guard: tokio
/// restores nothing, and the thread-local context drops the handle when
/// the thread exits). A thread already inside another runtime gets a guard
/// per poll instead.
#[cfg(feature = "tokio")]
fn enter_runtime<'r, A: AsyncActor>(
    cached: &'r mut Option<Option<tokio::runtime::Handle>>,
    ctx: &Context<'_, Async<A>>,
) -> Option<tokio::runtime::EnterGuard<'r>> {
    use crate::dispatch::{pinned::on_pinned_thread, pool::on_worker_thread};
    thread_local! {
        /// The kernel whose async runtime this dispatcher thread stays in.
        static ENTERED: StdCell<usize> = const { StdCell::new(0) };
    }
    let system = &ctx.cell.system;
    let key = Arc::as_ptr(system).addr();
    // The common case first: a dispatcher thread inside already.
    if ENTERED.with(StdCell::get) == key {
        return None;
    }
    if crate::dispatch::tokio_dispatcher::on_tokio_dispatcher() {
        return None;
    }
    let handle = cached
        .get_or_insert_with(|| match system.async_runtime.handle(&system.name) {
            Ok(handle) => Some(handle),
            Err(error) => {
                tracing::error!(
                    actor = %ctx.cell,
                    "no tokio runtime for async handlers ({error}); they run without one"
                );
                None
            }
        })
        .as_ref()?;
    if (on_worker_thread() || on_pinned_thread())
        && ENTERED.with(StdCell::get) == 0
        && tokio::runtime::Handle::try_current().is_err()
    {
        std::mem::forget(handle.enter());
        ENTERED.with(|e| e.set(key));
        return None;
    }
    Some(handle.enter())
}

/// The driver of one actor instance (see the module header).
fn drive<A: AsyncActor>(actor: ActorPtr<A>, mut actx: AsyncContext<A>) -> Driver {
    let key = key_of(&actx.cell);
    Box::pin(async move {
        loop {
            let msg = NextMsg::<A> {
                key,
                _msg: std::marker::PhantomData,
            }
            .await;
            // The host drops this driver before it touches the actor
            // itself (`Async::hook`, `Drop`), and frees it only after, so
            // while the driver runs this is the only reference to the
            // actor; it ends with the handler, before the next `next()`.
            // SAFETY: by the argument just above.
            let a = unsafe { actor.get() };
            a.receive(&mut actx, msg).await;
        }
    })
}

/// The message the host put in the current poll's frame; pending (and the
/// frame marked idle) if there is none: the driver waits for a message.
struct NextMsg<A: AsyncActor> {
    key: usize,
    _msg: std::marker::PhantomData<fn() -> A>,
}

impl<A: AsyncActor> Future for NextMsg<A> {
    type Output = A::Msg;

    fn poll(self: Pin<&mut Self>, _cx: &mut std::task::Context<'_>) -> Poll<A::Msg> {
        let Some(frame) = current_frame::<A>(self.key) else {
            // Only the host polls the driver, always with a frame up.
            debug_assert!(false, "a driver polled without its frame");
            return Poll::Pending;
        };
        // The frame is the host's, on its stack for this poll, and the
        // host does not touch it until the poll returns; the borrow ends
        // within this call.
        // SAFETY: by the argument just above (and `current_frame`'s).
        let frame = unsafe { &mut *frame };
        match frame.input.take() {
            Some(msg) => Poll::Ready(msg),
            None => {
                frame.idle = true;
                Poll::Pending
            }
        }
    }
}

/// `AsyncContext::with`: `f` with the synchronous context of the poll
/// under way for `cell`.
pub(super) fn with_context<A: AsyncActor, R>(
    cell: &Arc<ActorCell<Async<A>>>,
    f: impl FnOnce(&mut Context<'_, Async<A>>) -> R,
) -> R {
    let Some(frame) = current_frame::<A>(key_of(cell)) else {
        panic!(
            "AsyncContext of {cell} used outside the actor's own handler \
             (from another thread or task it started?): use its ActorRef there"
        );
    };
    // The frame is on the host's stack for this poll (or hook), and its
    // `ctx` is the `&mut Context` the host was called with and does not use
    // until the poll returns. The caller holds the handler's only
    // `AsyncContext` mutably, so no other `&mut Context` made here is
    // alive, and `f`, which cannot await, ends before the poll does.
    // SAFETY: by the argument just above (and `current_frame`'s).
    let ctx = unsafe { &mut *(*frame).ctx.cast::<Context<'_, Async<A>>>() };
    f(ctx)
}

/// What a poll lends the driver: the context of the host's call, the
/// message to hand over, and whether the driver was left waiting for one.
struct Frame<A: AsyncActor> {
    /// The host call's `&mut Context<'_, Async<A>>`, lifetime erased.
    ctx: *mut (),
    input: Option<A::Msg>,
    idle: bool,
}

thread_local! {
    /// The frame of the poll under way on this thread: the address of its
    /// cell, and a `*mut Frame<A>` of that cell's `A`.
    static FRAME: StdCell<(usize, *mut ())> = const { StdCell::new((0, std::ptr::null_mut())) };
}

/// A cell's address: the key of its frames. Unique among live cells, and a
/// frame's cell is alive (the host that set it up is in it).
fn key_of<A: AsyncActor>(cell: &Arc<ActorCell<Async<A>>>) -> usize {
    Arc::as_ptr(cell).addr()
}

/// The current frame if it belongs to the cell at `key`.
///
/// A frame is published only by its host for the length of a poll or a
/// hook (`FrameScope`), on the thread that runs it, and under its own
/// cell's key, whose actor type is `A` (one cell, one actor type): a
/// pointer returned here is valid, and of the right type, until that
/// poll returns.
fn current_frame<A: AsyncActor>(key: usize) -> Option<*mut Frame<A>> {
    let (current, frame) = FRAME.with(StdCell::get);
    (current == key && !frame.is_null()).then_some(frame.cast())
}

/// Publishes a frame until dropped, then puts back what was there (a poll
/// inside another's, on one thread, restores the outer one).
struct FrameScope {
    previous: (usize, *mut ()),
}

impl FrameScope {
    fn enter(key: usize, frame: *mut ()) -> Self {
        FrameScope {
            previous: FRAME.with(|slot| slot.replace((key, frame))),
        }
    }
}

impl Drop for FrameScope {
    fn drop(&mut self) {
        FRAME.with(|slot| slot.set(self.previous));
    }
}

/// The actor of an `Async` host: a heap block the host owns (made by
/// `Box::leak`, freed in `Drop`), reached through this pointer by the host
/// (only while it has no driver) or by its driver (only while it runs).
struct ActorPtr<A>(NonNull<A>);

impl<A> Clone for ActorPtr<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for ActorPtr<A> {}

// SAFETY: the pointer stands for an owned `A` (a `Box<A>` held apart from
// its borrows), used by one thread at a time as the cell is; it is `Send`
// when `A` is.
unsafe impl<A: Send> Send for ActorPtr<A> {}

impl<A> ActorPtr<A> {
    /// The actor.
    ///
    /// # Safety
    ///
    /// The block must not have been freed, and no other reference to the
    /// actor may be alive while the returned one is (see the type's docs).
    #[allow(clippy::mut_from_ref)]
    unsafe fn get<'a>(self) -> &'a mut A {
        // SAFETY: the caller's contract.
        unsafe { &mut *self.0.as_ptr() }
    }
}

/// An async actor's waker: a wake sends the cell one `SystemMsg::Wake`
/// until the host's next poll re-arms `queued` (see `wake_flag.rs` for
/// why no wake is lost).
struct CellWaker {
    cell: Arc<dyn Cell>,
    queued: WakeFlag,
}

impl Wake for CellWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.raise() {
            send_system(&self.cell, SystemMsg::Wake);
        }
    }
}

//! The actor cell: an actor's mailbox, its run state, and the run loop that
//! the dispatcher calls.
//!
//! # Ground rules
//!
//! * A cell is shared (`Arc`) by every `ActorRef` to it, its parent, its
//!   watchers and, while scheduled, its dispatcher. The shared part is
//!   immutable except for the mailbox.
//! * The **run state** (`RunState`: the actor instance, its factory, its
//!   `CellStatus`: phase, links) sits in an `UnsafeCell` and is touched only
//!   by the thread that owns the mailbox (see `mailbox/state.rs`). The dispatcher runs a
//!   cell only after the send that won ownership handed it over, and a cell
//!   is handed over at most once at a time, so at most one thread runs it.
//! * Everything between actors travels as messages: user messages on the
//!   queue, lifecycle traffic (stop, watch, termination, child failure) on the
//!   system lane, which a run drains before it takes any user message.
//!
//! # Lifecycle
//!
//! ```text
//! Starting ──started──▶ Running ◀──────────── recreate ──┐
//!                          │ failure: Restart            │ (after backoff:
//!                          ▼                             │  Suspended)
//!                 Terminating(Restart) ── children gone ─┘
//!  stop / Stop / Escalate  │
//!                          ▼
//!                 Terminating(Stop) ── children gone ──▶ Stopped (closed)
//! ```
//!
//! A stopping or restarting actor first stops its children and waits for
//! each one's `ChildTerminated`. On `Stopped` the mailbox is closed, queued
//! user messages go to dead letters, watchers get `Terminated`, the parent
//! gets `ChildTerminated`. A send that later finds the mailbox closed drains
//! it to dead letters itself.

use std::any::type_name;
use std::collections::HashMap;
use std::fmt;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{Actor, Context, Signal};
use crate::dispatch::{Executor, Ran, Runnable, Task};
use crate::ids::{validate_name, ActorId, DeadLetterReason, SpawnError};
use crate::kernel::{Kernel, TopLevel};
use crate::mailbox::bound::Bound;
use crate::mailbox::{Mailbox, Offer, Request};
use crate::props::{Factory, Props};
use crate::supervision::{Directive, Failure, Scope, SupervisorStrategy};
use stash::{ErasedStash, Stash};

mod envelope;
mod lifecycle;
#[cfg(feature = "tokio")]
mod pipes;
pub(crate) mod stash;
pub(crate) mod timers;

/// Lifecycle traffic, carried on the system lane.
pub(crate) enum SystemMsg {
    /// Stop (children first).
    Stop,
    /// The sender wants `Terminated` when this actor stops.
    Watch(Arc<dyn Cell>),
    /// The actor with this id no longer wants `Terminated`.
    Unwatch(ActorId),
    /// A watched actor stopped (its id and the name it was spawned with).
    Terminated(ActorId, Option<Arc<str>>),
    /// A child finished stopping.
    ChildTerminated(ActorId),
    /// A child failed and applied `directive`; `scope` says which of its
    /// siblings the directive reaches, `restarts` its restart count (for
    /// their backoff).
    ChildFailed {
        child: ActorId,
        failure: Failure,
        directive: Directive,
        scope: Scope,
        restarts: u32,
    },
    /// Restart because a sibling failed under an all-for-one or
    /// rest-for-one strategy (its failure, its restart count).
    GroupRestart { failure: Failure, restarts: u32 },
    /// The restart backoff delay has passed.
    Recreate,
    /// A per-actor timer came due (see `cell/timers.rs`).
    Timer {
        key: timers::Key,
        generation: u64,
        msg: Box<dyn std::any::Any + Send>,
    },
    /// The receive-timeout check came due.
    ReceiveTimeout { generation: u64 },
    /// Stashed messages were made due (see `cell/stash.rs`): handle them
    /// before any further mailbox message.
    Unstashed,
    /// The waker of an async actor's pending handler fired (see
    /// `actor/asynchronous.rs`): poll the handler again.
    Wake,
    /// A piped future completed (see `cell/pipes.rs`); `msg` is an `A::Msg`.
    #[cfg(feature = "tokio")]
    Piped {
        id: u64,
        msg: Box<dyn std::any::Any + Send>,
    },
}

/// A cell with its actor type erased: what parents, watchers and
/// dispatchers hold.
pub(crate) trait Cell: Runnable {
    fn id(&self) -> ActorId;
    fn name(&self) -> Option<&str>;
    fn system(&self) -> &Arc<Kernel>;
    fn executor(&self) -> &dyn Executor;
    fn push_system(&self, msg: SystemMsg) -> Request;
    /// Drains a closed mailbox the caller acquired (see `Request::Drain`).
    fn drain_closed(&self);
    fn is_closed(&self) -> bool;
    /// The target of an external cell (see `actor_ref/external.rs`).
    fn external(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// Whether this is an external cell.
    fn is_external(&self) -> bool {
        false
    }
}

/// A cell that accepts user messages of type `M`: what an `ActorRef<M>` holds.
pub(crate) trait TypedCell<M>: Cell {
    /// Offers the message at `msg` (see `Mailbox::offer_user`).
    ///
    /// # Safety
    ///
    /// `msg` points to a valid `M` that the caller owns; after `Pushed` it
    /// has been moved out (the caller must not use or drop it), after
    /// `Full` it is still the caller's. Passing a pointer, not the value,
    /// lets the mailbox read the message once, into its queue slot (see
    /// `Queue::push_read`).
    unsafe fn offer_user(&self, msg: *mut M) -> Offer;
    /// The bound of a bounded mailbox.
    fn bound(&self) -> Option<&Bound>;
    /// Drops an undeliverable message, recording it as a dead letter.
    fn dead_letter(&self, msg: M, reason: DeadLetterReason);
    /// About how many user messages are queued.
    fn len_hint(&self) -> usize;
}

/// Sends a system message and acts on the mailbox's answer.
pub(crate) fn send_system(cell: &Arc<dyn Cell>, msg: SystemMsg) {
    match cell.push_system(msg) {
        Request::Owned => {}
        Request::Schedule => {
            let ptr: *const dyn Cell = Arc::as_ptr(cell);
            cell.executor().execute(Task::new(ptr));
        }
        Request::Drain => cell.drain_closed(),
    }
}

/// Offers a user message and acts on the mailbox's answer; a full bounded
/// mailbox hands the message back.
#[inline]
pub(crate) fn offer<M: Send + 'static>(cell: &Arc<dyn TypedCell<M>>, msg: M) -> Result<(), M> {
    let mut msg = ManuallyDrop::new(msg);
    // `msg` is a valid message owned here and never dropped here
    // (`ManuallyDrop`): after `Pushed` it has been moved out and is
    // forgotten, after `Full` it is taken back below.
    // SAFETY: that is `offer_user`'s contract.
    let offered = unsafe { cell.offer_user(&mut *msg) };
    match offered {
        Offer::Pushed(Request::Owned) => {}
        Offer::Pushed(Request::Schedule) => {
            let ptr: *const dyn TypedCell<M> = Arc::as_ptr(cell);
            cell.executor().execute(Task::new(ptr));
        }
        Offer::Pushed(Request::Drain) => cell.drain_closed(),
        // SAFETY: `Full` left the message in place, still ours.
        Offer::Full => return Err(unsafe { ManuallyDrop::take(&mut msg) }),
    }
    Ok(())
}

/// The `tell` path: a message that finds a bounded mailbox full becomes a
/// dead letter (the overflow policies that keep it apply inside `offer`).
#[inline]
pub(crate) fn deliver<M: Send + 'static>(cell: &Arc<dyn TypedCell<M>>, msg: M) {
    if let Err(msg) = offer(cell, msg) {
        cell.dead_letter(msg, DeadLetterReason::MailboxFull);
    }
}

/// Who supervises an actor.
pub(crate) enum Parent {
    /// A child's parent actor.
    Actor(Arc<dyn Cell>),
    /// A top-level actor's parent is the system's guardian, which holds the
    /// actor in this registry slot.
    Guardian { slot: u32 },
}

/// Where an actor is in its life (see the module header).
enum Phase {
    Starting,
    Running,
    /// An async actor's handler is pending (see `actor/asynchronous.rs`):
    /// the actor is alive, but takes no message until the handler
    /// completes; its waker sends `SystemMsg::Wake`, and messages that
    /// arrive on the system lane for the actor wait in
    /// `Links::deferred_system`. A synchronous actor is never here.
    Awaiting,
    /// Waiting for the restart backoff; keeps the failure for `after_restart`.
    Suspended(Box<Failure>),
    Terminating(After),
    /// Stopped for good. Holds a strong reference to the cell until the final
    /// run returns: the parent may drop its reference as soon as it learns of
    /// the termination, and dispatcher tasks do not own their cells.
    /// (Boxed, so that the phase stays two words on every idle actor.)
    Stopped(Option<Box<Arc<dyn Cell>>>),
}

/// What a terminating actor does once its children are gone.
enum After {
    Stop,
    /// Boxed: a failure is rare, and an idle actor should stay small.
    Restart(Box<Restarting>),
}

/// A restart under way: why, and which restart it is in the window (the
/// backoff doubles with it).
struct Restarting {
    failure: Failure,
    count: u32,
}

/// Restarts counted in the strategy's current window.
struct RestartWindow {
    count: u32,
    start: Instant,
}

/// Children and death-watch links, allocated on first use so that an actor
/// without any costs one pointer.
#[derive(Default)]
struct Links {
    children: HashMap<ActorId, Arc<dyn Cell>>,
    /// Named children, for `Context::child`.
    child_names: HashMap<Arc<str>, NamedChild>,
    /// Actors to notify when this one stops.
    watchers: Vec<Arc<dyn Cell>>,
    /// Actors this one watches (a `Terminated` for anything else is ignored).
    /// Their cells are kept so that a stopping watcher can unwatch them and
    /// not stay referenced from their watcher lists.
    watching: HashMap<ActorId, Arc<dyn Cell>>,
    /// Signals that arrived while the actor was restarting (or while an
    /// async handler was pending); delivered, in order, to the new
    /// instance (or once the handler completes).
    deferred: Vec<Signal>,
    /// Messages for the actor (a timer's, a piped result) that came on the
    /// system lane while an async handler was pending; handled, in order,
    /// once it completes, before the next mailbox message.
    deferred_system: std::collections::VecDeque<SystemMsg>,
    /// Restarts in the supervisor strategy's current window.
    restarts: Option<RestartWindow>,
    /// `Props::stash_capacity`; 0 refuses every stash.
    stash_capacity: usize,
    /// The stash (a `Stash<A::Msg>`), made by the first `Context::stash`
    /// (see `cell/stash.rs` for why not at spawn).
    stash: Option<Box<dyn ErasedStash>>,
    /// Per-actor timers by key, and the generation counter they share with
    /// the receive timeout.
    timers: HashMap<timers::Key, timers::TimerSlot>,
    next_timer_generation: u64,
    receive_timeout: Option<timers::ReceiveTimeout>,
    /// Futures this instance started and that have not reported back.
    #[cfg(feature = "tokio")]
    pipes: pipes::Pipes,
}

/// A named child: its id, and its ref with the message type erased, which
/// `Context::child` downcasts to the type it is asked for (the parent knows
/// its children's message types; the cell, generic over the actor type,
/// cannot give a typed ref back by itself).
struct NamedChild {
    id: ActorId,
    typed: Box<dyn std::any::Any + Send + Sync>,
}

impl Links {
    /// The links of an actor given a stash capacity. Untyped and out of
    /// line, so that `ActorCell::create` carries no stash code.
    #[cold]
    #[inline(never)]
    fn with_stash_capacity(stash_capacity: usize) -> Box<Links> {
        Box::new(Links {
            stash_capacity,
            ..Links::default()
        })
    }
}

/// Where the actor stands, as its mailbox owner keeps it: its phase, a stop
/// it asked for, its children and watch links, whether a receive timeout is
/// set. Only the mailbox owner touches it (it lives in the `RunState`).
pub(crate) struct CellStatus {
    /// Set by `Context::stop`, acted on after the handler returns.
    pub(crate) stop_requested: bool,
    /// Whether a receive timeout is set (spares the hot path a lookup).
    has_receive_timeout: bool,
    /// Whether unstashed messages wait in the stash (spares the hot path a
    /// lookup; kept by the stash methods below).
    pub(crate) stash_due: bool,
    phase: Phase,
    links: Option<Box<Links>>,
}

impl CellStatus {
    fn links(&mut self) -> &mut Links {
        self.links.get_or_insert_with(Default::default)
    }

    /// The actor's stash, if it has one.
    pub(crate) fn stash<M: Send + 'static>(&mut self) -> Option<&mut Stash<M>> {
        self.links
            .as_mut()?
            .stash
            .as_mut()?
            .as_any_mut()
            .downcast_mut()
    }

    /// Makes the stash if the actor was given a capacity and has none yet
    /// (only `Context::stash` calls this: see `cell/stash.rs`).
    pub(crate) fn make_stash<M: Send + 'static>(&mut self) {
        if let Some(links) = self.links.as_mut() {
            if links.stash.is_none() && links.stash_capacity > 0 {
                links.stash = Some(Box::new(Stash::<M>::new(links.stash_capacity)));
            }
        }
    }

    /// Runs `f` on the stash (if any) and refreshes `stash_due`.
    pub(crate) fn with_stash<M: Send + 'static, R>(
        &mut self,
        f: impl FnOnce(Option<&mut Stash<M>>) -> R,
    ) -> R {
        let stash = self.stash::<M>();
        let (result, due) = match stash {
            Some(stash) => {
                let result = f(Some(&mut *stash));
                (result, stash.has_due())
            }
            None => (f(None), false),
        };
        self.stash_due = due;
        result
    }

    /// The next unstashed message. Out of line and cold: only the handling
    /// of `SystemMsg::Unstashed` calls it.
    #[cold]
    #[inline(never)]
    fn next_due<M: Send + 'static>(&mut self) -> Option<M> {
        self.with_stash(|s: Option<&mut Stash<M>>| s?.next_due())
    }

    /// A restart: makes every stashed message due. Untyped and out of line,
    /// so that no actor's lifecycle code carries stash code.
    #[inline(never)]
    fn unstash_all_erased(&mut self) {
        if let Some(stash) = self.links.as_mut().and_then(|l| l.stash.as_mut()) {
            stash.unstash_all();
            self.stash_due = stash.has_due();
        }
    }

    /// A stop: drops every stashed and unstashed message, recording each as
    /// a dead letter of actor `id` (as `TypedCell::dead_letter` would).
    /// Untyped and out of line, like [`unstash_all_erased`](Self::unstash_all_erased).
    #[inline(never)]
    fn discard_stash(&mut self, system: &Kernel, id: ActorId, name: Option<&str>) {
        let Some(stash) = self.links.as_mut().and_then(|l| l.stash.as_mut()) else {
            return;
        };
        let ty = stash.msg_type();
        for _ in 0..stash.discard() {
            system.dead_letter(id, name, ty, DeadLetterReason::RecipientStopped);
        }
        self.stash_due = false;
    }

    /// Whether the actor is alive: running, or awaiting an async handler.
    fn is_alive(&self) -> bool {
        matches!(self.phase, Phase::Running | Phase::Awaiting)
    }

    /// Whether an async handler is pending (see `actor/asynchronous.rs`).
    fn is_awaiting(&self) -> bool {
        matches!(self.phase, Phase::Awaiting)
    }

    /// An async actor's host says whether its handler is pending after a
    /// poll (see `actor/asynchronous.rs`). Polls happen only while the
    /// actor runs, so this moves between `Running` and `Awaiting` only.
    pub(crate) fn set_awaiting(&mut self, awaiting: bool) {
        match (&self.phase, awaiting) {
            (Phase::Running, true) => self.phase = Phase::Awaiting,
            (Phase::Awaiting, false) => self.phase = Phase::Running,
            _ => {}
        }
    }

    pub(crate) fn stop_child(&mut self, id: ActorId) -> bool {
        match self.links.as_ref().and_then(|l| l.children.get(&id)) {
            Some(child) => {
                send_system(child, SystemMsg::Stop);
                true
            }
            None => false,
        }
    }

    pub(crate) fn child_ids(&self) -> Vec<ActorId> {
        self.links
            .as_ref()
            .map(|l| l.children.keys().copied().collect())
            .unwrap_or_default()
    }

    fn has_children(&self) -> bool {
        self.links.as_ref().is_some_and(|l| !l.children.is_empty())
    }
}

struct RunState<A: Actor> {
    actor: Option<A>,
    /// Dropped when the actor stops, so captured references cannot form cycles.
    factory: Option<Factory<A>>,
    strategy: Arc<SupervisorStrategy>,
    status: CellStatus,
    /// The pool worker this actor last ran on (`u32::MAX`: none yet), for
    /// the pool's count of migrations.
    last_worker: u32,
}

/// One actor (see the module header).
pub(crate) struct ActorCell<A: Actor> {
    pub(crate) id: ActorId,
    /// Shared, so that every watcher's `Terminated` carries it without a copy.
    name: Option<Arc<str>>,
    pub(crate) system: Arc<Kernel>,
    parent: Parent,
    executor: Arc<dyn Executor>,
    mailbox: Mailbox<envelope::Envelope<A::Msg>, SystemMsg>,
    run: std::cell::UnsafeCell<RunState<A>>,
    /// This actor's metric handles (feature `metrics`).
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Box<crate::runtime_metrics::CellMetrics>,
}

// SAFETY: the cell is shared between threads. Its shared fields are immutable
// or atomics (`Mailbox` is `Sync` for `Send` messages); `run` is only
// accessed by the mailbox owner, one thread at a time, with ownership handed
// over through the state word's acquire/release operations. Hence `A: Send`
// and `A::Msg: Send` suffice.
unsafe impl<A: Actor> Sync for ActorCell<A> {}

impl<A: Actor> Drop for ActorCell<A> {
    fn drop(&mut self) {
        // Release: whoever reads 0 also sees everything the cell did.
        self.system.live_cells.fetch_sub(1, Ordering::Release);
    }
}

impl<A: Actor> fmt::Display for ActorCell<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name}{}", self.id),
            None => write!(f, "${}", self.id.0),
        }
    }
}

impl<A: Actor> ActorCell<A> {
    /// Creates a cell whose mailbox is already owned by the caller, who must
    /// hand it to the executor (see [`ActorCell::schedule_first`]) to start it.
    pub(crate) fn create(
        system: &Arc<Kernel>,
        props: Props<A>,
        parent: Parent,
    ) -> Result<Arc<Self>, SpawnError> {
        let id = system.next_id();
        let executor =
            system.executor_for(props.dispatcher.as_deref(), props.name.as_deref(), id)?;
        system.live_cells.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        let metrics = crate::runtime_metrics::CellMetrics::new(
            type_name::<A>(),
            props.dispatcher.as_deref().unwrap_or("default"),
        );
        Ok(Arc::new(ActorCell {
            #[cfg(feature = "metrics")]
            metrics,
            id,
            name: props.name.map(Arc::from),
            system: system.clone(),
            parent,
            executor,
            mailbox: Mailbox::new_owned(props.mailbox),
            run: std::cell::UnsafeCell::new(RunState {
                last_worker: u32::MAX,
                actor: None,
                factory: Some(props.factory),
                strategy: props
                    .strategy
                    .unwrap_or_else(SupervisorStrategy::shared_default),
                status: CellStatus {
                    stop_requested: false,
                    has_receive_timeout: false,
                    phase: Phase::Starting,
                    stash_due: false,
                    // Only an actor given a stash capacity has links at spawn
                    // (untyped: the stash itself comes with the first stash).
                    links: (props.stash_capacity > 0)
                        .then(|| Links::with_stash_capacity(props.stash_capacity)),
                },
            }),
        }))
    }

    /// Hands a freshly created cell (owned since creation) to its executor.
    pub(crate) fn schedule_first(self: &Arc<Self>) {
        let ptr: *const Self = Arc::as_ptr(self);
        self.executor.execute(Task::new(ptr));
    }

    /// Calls `f` with the actor and a context, catching a panic as a failure.
    fn call(
        self: &Arc<Self>,
        run: &mut RunState<A>,
        f: impl FnOnce(&mut A, &mut Context<'_, A>),
    ) -> Result<(), Failure> {
        let Some(actor) = run.actor.as_mut() else {
            return Ok(());
        };
        let mut ctx = Context {
            cell: self,
            status: &mut run.status,
        };
        catch_unwind(AssertUnwindSafe(|| f(actor, &mut ctx)))
            .map_err(|payload| Failure::from_panic(self.id, payload))
    }

    /// Takes the next message of the user queue, which must not be empty,
    /// and hands it to the actor (inside a span whose parent is the
    /// sender's, with feature `tracing-spans`).
    ///
    /// The message is popped inside the handler's closure, so that it goes
    /// from its queue slot straight to `receive`. Popped outside, it went
    /// through memory on its way into the closure that `call` runs behind
    /// `catch_unwind`, and LLVM copied it there with loads that spanned
    /// two of the stores that had just written it (the stores and loads
    /// split the message differently: tag and payload, or a 7-byte payload
    /// as two overlapping 4-byte moves): a store-to-load forwarding stall
    /// on every message: about 23 ns of a 120 ns chameneos meeting (four
    /// messages) on one worker, or 9 ns of a 25 ns ping-pong hop when
    /// another arrangement of the copies put it there, depending on the
    /// message type and on what else got inlined. The slot was written long before,
    /// so reading it never stalls.
    ///
    /// # Safety
    ///
    /// The caller must own the mailbox (it holds `SCHEDULED`), and the user
    /// queue must hold a message.
    #[inline(always)]
    unsafe fn invoke_next(self: &Arc<Self>, run: &mut RunState<A>) {
        #[cfg(feature = "metrics")]
        let started = Instant::now();
        self.touch_receive_timeout(&mut run.status);
        let mailbox = &self.mailbox;
        let handled = self.call(run, |a, ctx| {
            // the caller owns the mailbox (this function's contract),
            // so this is the user queue's single consumer.
            // SAFETY: by the argument just above.
            let Some(sealed) = (unsafe { mailbox.pop_user_uninit() }) else {
                debug_assert!(false, "invoke_next on an empty queue");
                return;
            };
            // a popped message is initialised.
            // SAFETY: by the argument just above.
            let sealed = unsafe { sealed.assume_init() };
            #[cfg(feature = "tracing-spans")]
            {
                let span = tracing::info_span!(
                    parent: &sealed.span,
                    "receive",
                    actor = %ctx.cell,
                    message_type = type_name::<A::Msg>()
                );
                let _entered = span.enter();
                a.receive(ctx, sealed.msg);
            }
            #[cfg(not(feature = "tracing-spans"))]
            a.receive(ctx, sealed);
        });
        if let Err(failure) = handled {
            self.fail(run, failure);
        }
        self.after_handler(run);
        #[cfg(feature = "metrics")]
        self.metrics.handled(started);
    }

    /// Hands `msg`, which came another way than the user queue (a timer's
    /// message on the system lane, a stashed one), to the actor.
    fn invoke(self: &Arc<Self>, run: &mut RunState<A>, msg: A::Msg) {
        #[cfg(feature = "metrics")]
        let started = Instant::now();
        self.touch_receive_timeout(&mut run.status);
        if let Err(failure) = self.call(run, |a, ctx| a.receive(ctx, msg)) {
            self.fail(run, failure);
        }
        self.after_handler(run);
        #[cfg(feature = "metrics")]
        self.metrics.handled(started);
    }

    fn after_handler(self: &Arc<Self>, run: &mut RunState<A>) {
        // An async handler that asked to stop and is still pending stops
        // once it completes (`lifecycle::handler_completed`).
        if run.status.stop_requested && !run.status.is_awaiting() {
            run.status.stop_requested = false;
            self.begin_stop(run);
        }
    }
}

impl<A: Actor> Runnable for ActorCell<A> {
    unsafe fn run(&self, me: Task) -> Ran {
        // `me` is this cell's task (the caller's contract), made from
        // `Arc::as_ptr` of the `Arc` that owns the cell, so the pointer may
        // rebuild that `Arc`. It is wrapped in `ManuallyDrop`: a borrowed
        // `Arc`, which changes no reference count.
        // SAFETY: by the argument just above.
        let this = ManuallyDrop::new(unsafe { Arc::from_raw(me.as_ptr() as *const Self) });
        let this: &Arc<Self> = &this;
        // a task is queued only by the send that won the mailbox's
        // `SCHEDULED` bit or by the owner rescheduling itself, and the
        // dispatcher runs it on one thread, so this run owns the mailbox: no
        // other thread touches the run state until it releases ownership, and
        // this is the only `&mut` to it.
        // SAFETY: by the argument just above.
        let run = unsafe { &mut *this.run.get() };
        let budget = this.executor.throughput().max(1);
        crate::dispatch::pool::note_run(&mut run.last_worker);
        #[cfg(feature = "metrics")]
        this.metrics.run_starts(this.mailbox.len_hint());
        let mut sys = Vec::new();
        let mut messages = 0;
        loop {
            // this run owns the mailbox (it holds `SCHEDULED`: a task
            // is queued only by the send that won that bit or by the owner
            // rescheduling itself), and the owner may take system messages.
            // SAFETY: by the argument just above.
            unsafe { this.mailbox.take_system(&mut sys) };
            if !sys.is_empty() {
                for msg in sys.drain(..) {
                    this.handle_system(run, msg);
                }
            }
            if matches!(run.status.phase, Phase::Starting) {
                this.start(run);
            }
            if let Phase::Stopped(keep_alive) = &mut run.status.phase {
                let keep_alive = keep_alive.take();
                this.release_closed();
                drop(keep_alive);
                return Ran {
                    finished: true,
                    messages,
                };
            }
            if matches!(run.status.phase, Phase::Running) {
                // Counted over the whole run, not per pass of this loop:
                // system messages between user messages (an async
                // handler's wake, above all) do not renew the budget.
                let mut handled = messages as usize;
                while handled < budget && !this.mailbox.state.system_pending() {
                    // this run owns the mailbox (it holds `SCHEDULED`),
                    // so it is the user queue's single consumer.
                    // SAFETY: by the argument just above.
                    if unsafe { this.mailbox.user_is_empty() } {
                        break;
                    }
                    // this run owns the mailbox, and as the single
                    // consumer it just saw the user queue non-empty.
                    // SAFETY: by the argument just above.
                    unsafe { this.invoke_next(run) };
                    handled += 1;
                    if !matches!(run.status.phase, Phase::Running) {
                        break;
                    }
                }
                messages = handled as u32;
                if handled == budget
                    && matches!(run.status.phase, Phase::Running)
                    // this run still owns the mailbox (it has not
                    // released `SCHEDULED`): the queue's single consumer.
                    // SAFETY: by the argument just above.
                    && !unsafe { this.mailbox.user_is_empty() }
                {
                    // Budget spent with work left: yield the thread, keep ownership.
                    this.executor.reschedule(me);
                    return Ran {
                        finished: false,
                        messages,
                    };
                }
            }
            let user_runnable = matches!(run.status.phase, Phase::Running);
            // this run still owns the mailbox (it holds `SCHEDULED`;
            // nothing above released it). After a successful release this run
            // touches nothing of the cell again.
            // SAFETY: by the argument just above.
            if unsafe { this.mailbox.try_release(user_runnable) } {
                return Ran {
                    finished: false,
                    messages,
                };
            }
        }
    }
}

impl<A: Actor> Cell for ActorCell<A> {
    fn id(&self) -> ActorId {
        self.id
    }

    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn system(&self) -> &Arc<Kernel> {
        &self.system
    }

    fn executor(&self) -> &dyn Executor {
        &*self.executor
    }

    fn push_system(&self, msg: SystemMsg) -> Request {
        self.mailbox.push_system(msg)
    }

    fn drain_closed(&self) {
        self.release_closed();
    }

    fn is_closed(&self) -> bool {
        self.mailbox.state.is_closed()
    }
}

impl<A: Actor> TypedCell<A::Msg> for ActorCell<A> {
    #[inline]
    #[cfg(not(feature = "tracing-spans"))]
    unsafe fn offer_user(&self, msg: *mut A::Msg) -> Offer {
        // without spans the envelope is the message itself, and the
        // contract is passed on unchanged.
        // SAFETY: by the argument just above.
        unsafe {
            self.mailbox
                .offer_user(msg, |oldest| self.displaced(oldest))
        }
    }

    #[cfg(feature = "tracing-spans")]
    unsafe fn offer_user(&self, msg: *mut A::Msg) -> Offer {
        // `msg` is valid and the caller's (this function's contract):
        // it is moved into the envelope here and moved back on `Full`.
        // SAFETY: by the argument just above.
        let sealed = std::mem::ManuallyDrop::new(envelope::seal(unsafe { std::ptr::read(msg) }));
        // SAFETY: `sealed` is valid and owned here, never dropped here.
        let offer = unsafe {
            self.mailbox
                .offer_user(&*sealed, |oldest| self.displaced(oldest))
        };
        if offer == Offer::Full {
            let sealed = std::mem::ManuallyDrop::into_inner(sealed);
            // the caller's message was moved out above; `Full` must
            // leave it in place, so it is written back.
            // SAFETY: by the argument just above.
            unsafe { std::ptr::write(msg, envelope::open(sealed)) };
        }
        offer
    }

    fn bound(&self) -> Option<&Bound> {
        self.mailbox.bound()
    }

    fn len_hint(&self) -> usize {
        self.mailbox.len_hint()
    }

    fn dead_letter(&self, msg: A::Msg, reason: DeadLetterReason) {
        self.system
            .dead_letter(self.id, self.name.as_deref(), type_name::<A::Msg>(), reason);
        drop(msg);
    }
}

impl<A: Actor> ActorCell<A> {
    /// A message that a send to a full `DropOldest` mailbox took out to make
    /// room: a dead letter, counted by that send.
    #[cold]
    fn displaced(&self, oldest: envelope::Envelope<A::Msg>) {
        self.dead_letter(envelope::open(oldest), DeadLetterReason::MailboxFull);
    }
}

/// How the kernel's guardian keeps a top-level actor.
impl<A: Actor> TopLevel for ActorCell<A> {
    fn top_level_id(&self) -> ActorId {
        self.id
    }

    fn top_level_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn stop(self: Arc<Self>) {
        let me: Arc<dyn Cell> = self;
        send_system(&me, SystemMsg::Stop);
    }
}

/// `Context::spawn`: creates a child of `parent` and starts it.
pub(crate) fn spawn_child<A: Actor, C: Actor>(
    parent: &Arc<ActorCell<A>>,
    status: &mut CellStatus,
    props: Props<C>,
) -> Result<Arc<ActorCell<C>>, SpawnError> {
    if !matches!(status.phase, Phase::Running) {
        return Err(SpawnError::ParentStopping);
    }
    if let Some(name) = &props.name {
        validate_name(name)?;
        if status
            .links
            .as_ref()
            .is_some_and(|l| l.child_names.contains_key(name.as_str()))
        {
            return Err(SpawnError::NameTaken(name.clone()));
        }
    }
    let me: Arc<dyn Cell> = parent.clone();
    let child = ActorCell::create(&parent.system, props, Parent::Actor(me))?;
    let links = status.links();
    if let Some(name) = &child.name {
        let typed: Arc<dyn TypedCell<C::Msg>> = child.clone();
        let named = NamedChild {
            id: child.id,
            typed: Box::new(typed),
        };
        links.child_names.insert(name.clone(), named);
    }
    links.children.insert(child.id, child.clone());
    child.schedule_first();
    Ok(child)
}

/// `Context::child`: the cell of the live child named `name`, if its
/// messages are `M`.
pub(crate) fn child_named<M: Send + 'static>(
    status: &CellStatus,
    name: &str,
) -> Option<Arc<dyn TypedCell<M>>> {
    let named = status.links.as_ref()?.child_names.get(name)?;
    named.typed.downcast_ref::<Arc<dyn TypedCell<M>>>().cloned()
}

/// Stashed messages of `cell` were made due: a system message tells its
/// run loop, which checks the system lane before every message anyway, so
/// the stash costs actors nothing per message (see `cell/stash.rs`).
pub(crate) fn signal_unstashed<A: Actor>(cell: &Arc<ActorCell<A>>) {
    let me: Arc<dyn Cell> = cell.clone();
    send_system(&me, SystemMsg::Unstashed);
}

/// `Context::watch`.
pub(crate) fn watch<A: Actor>(
    me: &Arc<ActorCell<A>>,
    status: &mut CellStatus,
    target: Arc<dyn Cell>,
) {
    if target.id() == me.id {
        return;
    }
    let links = status.links();
    if let std::collections::hash_map::Entry::Vacant(entry) = links.watching.entry(target.id()) {
        entry.insert(target.clone());
        let watcher: Arc<dyn Cell> = me.clone();
        send_system(&target, SystemMsg::Watch(watcher));
    }
}

/// `Context::unwatch`.
pub(crate) fn unwatch<A: Actor>(
    me: &Arc<ActorCell<A>>,
    status: &mut CellStatus,
    target: Arc<dyn Cell>,
) {
    if status
        .links
        .as_mut()
        .is_some_and(|l| l.watching.remove(&target.id()).is_some())
    {
        send_system(&target, SystemMsg::Unwatch(me.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Empty;
    impl Actor for Empty {
        type Msg = ();
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    }

    #[test]
    fn an_idle_cell_stays_small() {
        // The idle-actor memory target (256 bytes, registry entry and
        // allocator overhead included) leaves the cell itself about 200.
        let size = std::mem::size_of::<ActorCell<Empty>>();
        eprintln!(
            "ActorCell<Empty>: {size} bytes; CellStatus: {}; Phase: {}; Mailbox: {}",
            std::mem::size_of::<CellStatus>(),
            std::mem::size_of::<Phase>(),
            std::mem::size_of::<Mailbox<(), SystemMsg>>()
        );
        // The metrics feature adds one pointer to its handles.
        let bound = if cfg!(feature = "metrics") { 208 } else { 200 };
        assert!(size <= bound, "ActorCell<Empty> grew to {size} bytes");
    }
}

//! The actor cell: an actor's mailbox, its run state, and the run loop that
//! the dispatcher calls.
//!
//! # Ground rules
//!
//! * A cell is shared (`Arc`) by every `ActorRef` to it, its parent, its
//!   watchers and, while scheduled, its dispatcher. The shared part is
//!   immutable except for the mailbox.
//! * The **run state** (`RunState`: the actor instance, its factory, its
//!   bookkeeping) sits in an `UnsafeCell` and is touched only by the thread
//!   that owns the mailbox (see `mailbox/state.rs`). The dispatcher runs a
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
use std::sync::Arc;
use std::time::Instant;

use crate::actor::{Actor, Context, Signal};
use crate::actor_ref::{ActorId, ActorRef};
use crate::dispatch::{Executor, Runnable, Task};
use crate::mailbox::{Mailbox, Request};
use crate::props::{Factory, Props};
use crate::supervision::{Directive, Failure, SupervisorStrategy};
use crate::system::{validate_name, SpawnError, SystemInner};

/// Lifecycle traffic, carried on the system lane.
pub(crate) enum SystemMsg {
    /// Stop (children first).
    Stop,
    /// The sender wants `Terminated` when this actor stops.
    Watch(Arc<dyn Cell>),
    /// The actor with this id no longer wants `Terminated`.
    Unwatch(ActorId),
    /// A watched actor stopped.
    Terminated(ActorId),
    /// A child finished stopping.
    ChildTerminated(ActorId),
    /// A child failed and applied `directive`.
    ChildFailed {
        child: ActorId,
        failure: Failure,
        directive: Directive,
    },
    /// The restart backoff delay has passed.
    Recreate,
}

/// A cell with its actor type erased: what parents, watchers and
/// dispatchers hold.
pub(crate) trait Cell: Runnable {
    fn id(&self) -> ActorId;
    fn name(&self) -> Option<&str>;
    fn system(&self) -> &Arc<SystemInner>;
    fn executor(&self) -> &dyn Executor;
    fn push_system(&self, msg: SystemMsg) -> Request;
    /// Drains a closed mailbox the caller acquired (see `Request::Drain`).
    fn drain_closed(&self);
    fn is_closed(&self) -> bool;
}

/// A cell that accepts user messages of type `M`: what an `ActorRef<M>` holds.
pub(crate) trait TypedCell<M>: Cell {
    fn push_user(&self, msg: M) -> Request;
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

/// Sends a user message and acts on the mailbox's answer (the `tell` path).
#[inline]
pub(crate) fn deliver<M: Send + 'static>(cell: &Arc<dyn TypedCell<M>>, msg: M) {
    match cell.push_user(msg) {
        Request::Owned => {}
        Request::Schedule => {
            let ptr: *const dyn TypedCell<M> = Arc::as_ptr(cell);
            cell.executor().execute(Task::new(ptr));
        }
        Request::Drain => cell.drain_closed(),
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
    /// Waiting for the restart backoff; keeps the failure for `after_restart`.
    Suspended(Box<Failure>),
    Terminating(After),
    /// Stopped for good. Holds a strong reference to the cell until the final
    /// run returns: the parent may drop its reference as soon as it learns of
    /// the termination, and dispatcher tasks do not own their cells.
    Stopped(Option<Arc<dyn Cell>>),
}

/// What a terminating actor does once its children are gone.
enum After {
    Stop,
    /// Boxed: a failure is rare, and an idle actor should stay small.
    Restart(Box<Failure>),
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
    child_names: HashMap<Box<str>, ActorId>,
    /// Actors to notify when this one stops.
    watchers: Vec<Arc<dyn Cell>>,
    /// Actors this one watches (a `Terminated` for anything else is ignored).
    /// Their cells are kept so that a stopping watcher can unwatch them and
    /// not stay referenced from their watcher lists.
    watching: HashMap<ActorId, Arc<dyn Cell>>,
    /// Signals that arrived while the actor was restarting; delivered, in
    /// order, to the new instance.
    deferred: Vec<Signal>,
}

/// The actor's bookkeeping, owned by the mailbox owner.
pub(crate) struct Book {
    /// Set by `Context::stop`, acted on after the handler returns.
    pub(crate) stop_requested: bool,
    phase: Phase,
    /// Allocated at the first restart.
    restarts: Option<Box<RestartWindow>>,
    links: Option<Box<Links>>,
}

impl Book {
    fn links(&mut self) -> &mut Links {
        self.links.get_or_insert_with(Default::default)
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
    book: Book,
}

/// One actor (see the module header).
pub(crate) struct ActorCell<A: Actor> {
    pub(crate) id: ActorId,
    name: Option<Box<str>>,
    pub(crate) system: Arc<SystemInner>,
    parent: Parent,
    executor: Arc<dyn Executor>,
    mailbox: Mailbox<A::Msg, SystemMsg>,
    run: std::cell::UnsafeCell<RunState<A>>,
}

// SAFETY: the cell is shared between threads. Its shared fields are immutable
// or atomics (`Mailbox` is `Sync` for `Send` messages); `run` is only
// accessed by the mailbox owner, one thread at a time, with ownership handed
// over through the state word's acquire/release operations. Hence `A: Send`
// and `A::Msg: Send` suffice.
unsafe impl<A: Actor> Sync for ActorCell<A> {}

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
        system: &Arc<SystemInner>,
        props: Props<A>,
        parent: Parent,
    ) -> Result<Arc<Self>, SpawnError> {
        let id = system.next_id();
        let executor =
            system.executor_for(props.dispatcher.as_deref(), props.name.as_deref(), id)?;
        Ok(Arc::new(ActorCell {
            id,
            name: props.name.map(String::into_boxed_str),
            system: system.clone(),
            parent,
            executor,
            mailbox: Mailbox::new_owned(),
            run: std::cell::UnsafeCell::new(RunState {
                actor: None,
                factory: Some(props.factory),
                strategy: props
                    .strategy
                    .unwrap_or_else(SupervisorStrategy::shared_default),
                book: Book {
                    stop_requested: false,
                    phase: Phase::Starting,
                    restarts: None,
                    links: None,
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
            book: &mut run.book,
        };
        catch_unwind(AssertUnwindSafe(|| f(actor, &mut ctx)))
            .map_err(|payload| Failure::from_panic(self.id, payload))
    }

    fn invoke(self: &Arc<Self>, run: &mut RunState<A>, msg: A::Msg) {
        if let Err(failure) = self.call(run, |a, ctx| a.receive(ctx, msg)) {
            self.fail(run, failure);
        }
        self.after_handler(run);
    }

    fn after_handler(self: &Arc<Self>, run: &mut RunState<A>) {
        if run.book.stop_requested {
            run.book.stop_requested = false;
            self.begin_stop(run);
        }
    }

    fn start(self: &Arc<Self>, run: &mut RunState<A>) {
        let factory = run
            .factory
            .clone()
            .expect("a starting actor has its factory");
        match catch_unwind(AssertUnwindSafe(|| factory())) {
            Ok(actor) => {
                run.actor = Some(actor);
                run.book.phase = Phase::Running;
                if let Err(failure) = self.call(run, |a, ctx| a.started(ctx)) {
                    self.fail(run, failure);
                }
                self.after_handler(run);
                self.deliver_deferred(run);
            }
            Err(payload) => self.factory_failed(run, payload),
        }
    }

    /// A factory that panics cannot be helped by restarting: stop.
    fn factory_failed(
        self: &Arc<Self>,
        run: &mut RunState<A>,
        payload: Box<dyn std::any::Any + Send>,
    ) {
        let failure = Failure::from_panic(self.id, payload);
        tracing::error!(actor = %self, "actor factory panicked, stopping: {}", failure.message);
        self.notify_parent_failed(failure, Directive::Stop);
        self.begin_stop(run);
    }

    /// Applies the supervisor strategy to a failure.
    fn fail(self: &Arc<Self>, run: &mut RunState<A>, failure: Failure) {
        let mut directive = run.strategy.decide(&failure);
        if directive == Directive::Restart && !self.count_restart(run) {
            directive = Directive::Stop;
        }
        tracing::error!(actor = %self, ?directive, "{failure}");
        match directive {
            Directive::Resume => {}
            Directive::Restart => {
                if let Err(again) = self.call(run, |a, ctx| a.before_restart(ctx, &failure)) {
                    tracing::error!(actor = %self, "before_restart panicked: {}", again.message);
                }
                run.actor = None;
                run.book.phase = Phase::Terminating(After::Restart(Box::new(failure.clone())));
                self.stop_children(run);
                self.children_gone(run);
            }
            Directive::Stop | Directive::Escalate => self.begin_stop(run),
        }
        self.notify_parent_failed(failure, directive);
    }

    /// Counts a restart in the strategy's window; false if over the limit.
    fn count_restart(&self, run: &mut RunState<A>) -> bool {
        let now = Instant::now();
        let within = run.strategy.within();
        let window = run.book.restarts.get_or_insert_with(|| {
            Box::new(RestartWindow {
                count: 0,
                start: now,
            })
        });
        if now.duration_since(window.start) > within {
            window.start = now;
            window.count = 0;
        }
        window.count += 1;
        let count = window.count;
        run.strategy.max_restarts().is_none_or(|max| count <= max)
    }

    fn notify_parent_failed(&self, failure: Failure, directive: Directive) {
        match &self.parent {
            Parent::Actor(parent) => send_system(
                parent,
                SystemMsg::ChildFailed {
                    child: self.id,
                    failure,
                    directive,
                },
            ),
            Parent::Guardian { .. } => self.system.guardian_child_failed(failure, directive),
        }
    }

    fn stop_children(&self, run: &mut RunState<A>) {
        if let Some(links) = &run.book.links {
            for child in links.children.values() {
                send_system(child, SystemMsg::Stop);
            }
        }
    }

    fn begin_stop(self: &Arc<Self>, run: &mut RunState<A>) {
        match run.book.phase {
            Phase::Stopped(_) | Phase::Terminating(After::Stop) => return,
            Phase::Terminating(After::Restart(_)) => {}
            _ => self.stop_children(run),
        }
        run.book.phase = Phase::Terminating(After::Stop);
        self.children_gone(run);
    }

    /// Moves a terminating actor on once its last child has stopped.
    fn children_gone(self: &Arc<Self>, run: &mut RunState<A>) {
        if run.book.has_children() {
            return;
        }
        match std::mem::replace(&mut run.book.phase, Phase::Running) {
            Phase::Terminating(After::Stop) => self.finalize(run),
            Phase::Terminating(After::Restart(failure)) => {
                // The new instance is built when the `Recreate` comes back
                // through the system lane, from the run loop: a restart that
                // fails again then starts over from the loop instead of
                // nesting inside the failed one (no stack growth in a
                // restart storm).
                run.book.phase = Phase::Suspended(failure);
                let me: Arc<dyn Cell> = self.clone();
                let count = run.book.restarts.as_ref().map_or(1, |w| w.count);
                match run.strategy.backoff_delay(count) {
                    Some(delay) => {
                        self.system
                            .scheduler
                            .run_at(Instant::now() + delay, move || {
                                send_system(&me, SystemMsg::Recreate)
                            });
                    }
                    // We own the mailbox, so this only enqueues.
                    None => send_system(&me, SystemMsg::Recreate),
                }
            }
            other => run.book.phase = other,
        }
    }

    fn recreate(self: &Arc<Self>, run: &mut RunState<A>, failure: Failure) {
        let factory = run
            .factory
            .clone()
            .expect("a restarting actor has its factory");
        match catch_unwind(AssertUnwindSafe(|| factory())) {
            Ok(actor) => {
                run.actor = Some(actor);
                run.book.phase = Phase::Running;
                if let Err(again) = self.call(run, |a, ctx| a.after_restart(ctx, &failure)) {
                    self.fail(run, again);
                }
                self.after_handler(run);
                self.deliver_deferred(run);
            }
            Err(payload) => self.factory_failed(run, payload),
        }
    }

    /// The actor and its children have stopped: close and notify.
    fn finalize(self: &Arc<Self>, run: &mut RunState<A>) {
        if let Err(failure) = self.call(run, |a, ctx| a.stopped(ctx)) {
            tracing::error!(actor = %self, "stopped hook panicked: {}", failure.message);
        }
        run.actor = None;
        run.factory = None;
        let keep_alive: Arc<dyn Cell> = self.clone();
        run.book.phase = Phase::Stopped(Some(keep_alive));
        self.mailbox.state.close();
        self.drain_contents();
        if let Some(links) = run.book.links.take() {
            for watcher in &links.watchers {
                send_system(watcher, SystemMsg::Terminated(self.id));
            }
            // A stopped watcher must not stay referenced by what it watched.
            for watched in links.watching.values() {
                send_system(watched, SystemMsg::Unwatch(self.id));
            }
        }
        match &self.parent {
            Parent::Actor(parent) => send_system(parent, SystemMsg::ChildTerminated(self.id)),
            Parent::Guardian { slot } => self
                .system
                .guardian_child_terminated(*slot, self.name.as_deref()),
        }
    }

    /// Owner of a closed mailbox: dead-letters user messages, answers late
    /// watchers. Clears the arrival flags first.
    fn drain_contents(&self) {
        let mut sys = Vec::new();
        // SAFETY: only the mailbox owner calls this (from `finalize`, or from
        // `drain_closed` after a send acquired the closed mailbox).
        unsafe { self.mailbox.take_system(&mut sys) };
        for msg in sys {
            if let SystemMsg::Watch(watcher) = msg {
                send_system(&watcher, SystemMsg::Terminated(self.id));
            }
        }
        // SAFETY: as above.
        while let Some(msg) = unsafe { self.mailbox.pop_user() } {
            self.system
                .dead_letter(self.id, self.name.as_deref(), type_name::<A::Msg>());
            drop(msg);
        }
    }

    fn handle_system(self: &Arc<Self>, run: &mut RunState<A>, msg: SystemMsg) {
        if let Phase::Stopped(_) = run.book.phase {
            // Arrived in the same batch as the stop that finalized the actor:
            // treat it as a message to a closed mailbox.
            if let SystemMsg::Watch(watcher) = msg {
                send_system(&watcher, SystemMsg::Terminated(self.id));
            }
            return;
        }
        match msg {
            SystemMsg::Stop => self.begin_stop(run),
            SystemMsg::Watch(watcher) => {
                let links = run.book.links();
                if !links.watchers.iter().any(|w| w.id() == watcher.id()) {
                    links.watchers.push(watcher);
                }
            }
            SystemMsg::Unwatch(id) => {
                if let Some(links) = run.book.links.as_mut() {
                    links.watchers.retain(|w| w.id() != id);
                }
            }
            SystemMsg::Terminated(id) => {
                let watched = run
                    .book
                    .links
                    .as_mut()
                    .is_some_and(|l| l.watching.remove(&id).is_some());
                if watched {
                    self.signal(run, Signal::Terminated(id));
                }
            }
            SystemMsg::ChildTerminated(id) => {
                if let Some(links) = run.book.links.as_mut() {
                    links.children.remove(&id);
                    links.child_names.retain(|_, child| *child != id);
                }
                if matches!(run.book.phase, Phase::Terminating(_)) {
                    self.children_gone(run);
                }
            }
            SystemMsg::ChildFailed {
                child,
                failure,
                directive,
            } => {
                let escalated = directive == Directive::Escalate;
                let message = failure.message.clone();
                self.signal(
                    run,
                    Signal::ChildFailed {
                        child,
                        failure,
                        directive,
                    },
                );
                if escalated && matches!(run.book.phase, Phase::Running) {
                    let failure = Failure {
                        actor: self.id,
                        message: format!("child {child} escalated: {message}"),
                    };
                    self.fail(run, failure);
                }
            }
            SystemMsg::Recreate => {
                if let Phase::Suspended(_) = run.book.phase {
                    let Phase::Suspended(failure) =
                        std::mem::replace(&mut run.book.phase, Phase::Running)
                    else {
                        unreachable!("matched above")
                    };
                    self.recreate(run, *failure);
                }
            }
        }
    }

    /// Delivers a signal to a running actor, defers it while the actor is
    /// starting or restarting, and drops it once the actor is stopping.
    fn signal(self: &Arc<Self>, run: &mut RunState<A>, signal: Signal) {
        match run.book.phase {
            Phase::Running => {}
            Phase::Starting | Phase::Suspended(_) | Phase::Terminating(After::Restart(_)) => {
                run.book.links().deferred.push(signal);
                return;
            }
            Phase::Terminating(After::Stop) | Phase::Stopped(_) => return,
        }
        if let Err(failure) = self.call(run, |a, ctx| a.signal(ctx, signal)) {
            self.fail(run, failure);
        }
        self.after_handler(run);
    }

    /// Delivers the signals deferred during a start or restart.
    fn deliver_deferred(self: &Arc<Self>, run: &mut RunState<A>) {
        let Some(links) = run.book.links.as_mut() else {
            return;
        };
        if links.deferred.is_empty() {
            return;
        }
        let deferred = std::mem::take(&mut links.deferred);
        for signal in deferred {
            self.signal(run, signal);
        }
    }

    /// Gives up ownership of a closed mailbox, draining late arrivals.
    ///
    /// It always drains before it tries: the run loop clears the arrival
    /// flags when it takes system messages, so a user message that arrived
    /// since then is only found by looking at the queue (the same
    /// look-then-release order as `try_release`, and as the loom model).
    fn release_closed(&self) {
        loop {
            self.drain_contents();
            if self.mailbox.state.try_release_closed() {
                return;
            }
        }
    }
}

impl<A: Actor> Runnable for ActorCell<A> {
    unsafe fn run(&self, me: Task) -> bool {
        // SAFETY: `me` is this cell's task (the caller's contract), made from
        // `Arc::as_ptr` of the `Arc` that owns the cell, so the pointer may
        // rebuild that `Arc`. It is wrapped in `ManuallyDrop`: a borrowed
        // `Arc`, which changes no reference count.
        let this = ManuallyDrop::new(unsafe { Arc::from_raw(me.as_ptr() as *const Self) });
        let this: &Arc<Self> = &this;
        // SAFETY: the dispatcher runs this cell only for the mailbox owner
        // (module ground rules), so no other thread touches the run state
        // until this run releases ownership; this is the only `&mut` to it.
        let run = unsafe { &mut *this.run.get() };
        let budget = this.executor.throughput().max(1);
        let mut sys = Vec::new();
        loop {
            // SAFETY: the dispatcher runs this cell only for the mailbox owner.
            unsafe { this.mailbox.take_system(&mut sys) };
            for msg in sys.drain(..) {
                this.handle_system(run, msg);
            }
            if matches!(run.book.phase, Phase::Starting) {
                this.start(run);
            }
            if let Phase::Stopped(keep_alive) = &mut run.book.phase {
                let keep_alive = keep_alive.take();
                this.release_closed();
                drop(keep_alive);
                return true;
            }
            if matches!(run.book.phase, Phase::Running) {
                let mut handled = 0;
                while handled < budget && !this.mailbox.state.system_pending() {
                    // SAFETY: mailbox owner, as above.
                    let Some(msg) = (unsafe { this.mailbox.pop_user() }) else {
                        break;
                    };
                    this.invoke(run, msg);
                    handled += 1;
                    if !matches!(run.book.phase, Phase::Running) {
                        break;
                    }
                }
                if handled == budget
                    && matches!(run.book.phase, Phase::Running)
                    // SAFETY: mailbox owner, as above.
                    && !unsafe { this.mailbox.user_is_empty() }
                {
                    // Budget spent with work left: yield the thread, keep ownership.
                    this.executor.reschedule(me);
                    return false;
                }
            }
            let user_runnable = matches!(run.book.phase, Phase::Running);
            // SAFETY: mailbox owner, as above. After a successful release this
            // run touches nothing of the cell again.
            if unsafe { this.mailbox.try_release(user_runnable) } {
                return false;
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

    fn system(&self) -> &Arc<SystemInner> {
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
    fn push_user(&self, msg: A::Msg) -> Request {
        self.mailbox.push_user(msg)
    }
}

/// `Context::spawn`: creates a child of `parent` and starts it.
pub(crate) fn spawn_child<A: Actor, C: Actor>(
    parent: &Arc<ActorCell<A>>,
    book: &mut Book,
    props: Props<C>,
) -> Result<ActorRef<C::Msg>, SpawnError> {
    if !matches!(book.phase, Phase::Running) {
        return Err(SpawnError::ParentStopping);
    }
    if let Some(name) = &props.name {
        validate_name(name)?;
        if book
            .links
            .as_ref()
            .is_some_and(|l| l.child_names.contains_key(name.as_str()))
        {
            return Err(SpawnError::NameTaken(name.clone()));
        }
    }
    let me: Arc<dyn Cell> = parent.clone();
    let child = ActorCell::create(&parent.system, props, Parent::Actor(me))?;
    let links = book.links();
    if let Some(name) = &child.name {
        links.child_names.insert(name.clone(), child.id);
    }
    links.children.insert(child.id, child.clone());
    child.schedule_first();
    Ok(ActorRef { cell: child })
}

/// `Context::watch`.
pub(crate) fn watch<A: Actor>(me: &Arc<ActorCell<A>>, book: &mut Book, target: Arc<dyn Cell>) {
    if target.id() == me.id {
        return;
    }
    let links = book.links();
    if let std::collections::hash_map::Entry::Vacant(entry) = links.watching.entry(target.id()) {
        entry.insert(target.clone());
        let watcher: Arc<dyn Cell> = me.clone();
        send_system(&target, SystemMsg::Watch(watcher));
    }
}

/// `Context::unwatch`.
pub(crate) fn unwatch<A: Actor>(me: &Arc<ActorCell<A>>, book: &mut Book, target: Arc<dyn Cell>) {
    if book
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
            "ActorCell<Empty>: {size} bytes; Book: {}; Phase: {}; Mailbox: {}",
            std::mem::size_of::<Book>(),
            std::mem::size_of::<Phase>(),
            std::mem::size_of::<Mailbox<(), SystemMsg>>()
        );
        assert!(size <= 200, "ActorCell<Empty> grew to {size} bytes");
    }
}

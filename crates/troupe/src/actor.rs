//! The `Actor` trait, the `Context` a handler works with, and the `Signal`s
//! the runtime delivers; its child `cell` is the runtime half of an actor
//! (mailbox, run state, run loop, lifecycle, timers, stash). The three name
//! each other (a handler gets a `Context`, a `Context` works on its cell,
//! a cell runs its `Actor`), so they are one module and its children.

pub mod asynchronous;
pub(crate) mod cell;

use std::sync::Arc;
use std::time::Duration;

use self::cell::stash::{Stash, StashFull};
use self::cell::timers::{TimerId, Timers};
use self::cell::{ActorCell, CellStatus};
use crate::actor_ref::ActorRef;
use crate::ids::{ActorId, SpawnError};
use crate::kernel::ActorSystem;
use crate::props::Props;
use crate::supervision::{Directive, Failure};

/// An actor: state plus a synchronous handler for messages of type `Msg`.
///
/// The runtime calls the methods of one actor instance from one thread at a
/// time, so `&mut self` needs no locking. Handlers should not block: a
/// blocked handler holds a dispatcher thread (use the `"pinned"` dispatcher
/// for actors that must block).
///
/// A panic in any method is caught and handed to the actor's supervisor
/// strategy (see [`crate::supervision`]).
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, Props};
///
/// struct Greeter { greeted: usize }
///
/// impl Actor for Greeter {
///     type Msg = String;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, name: String) {
///         self.greeted += 1;
///         println!("hello, {name} (#{})", self.greeted);
///     }
/// }
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let greeter = system.spawn(Props::new(|| Greeter { greeted: 0 })).unwrap();
/// greeter.tell("world".to_string());
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
pub trait Actor: Send + Sized + 'static {
    /// The messages this actor handles.
    type Msg: Send + 'static;

    /// Handles one message.
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Self::Msg);

    /// Called once before the first message (and, by default, after a restart).
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = ctx;
    }

    /// Called once after the actor and all its children have stopped.
    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = ctx;
    }

    /// Called on the failed instance before it is dropped for a restart.
    fn before_restart(&mut self, ctx: &mut Context<'_, Self>, failure: &Failure) {
        let _ = (ctx, failure);
    }

    /// Called on the fresh instance after a restart; by default calls `started`.
    fn after_restart(&mut self, ctx: &mut Context<'_, Self>, failure: &Failure) {
        let _ = failure;
        self.started(ctx);
    }

    /// Handles a runtime signal (a watched actor terminated, a child failed).
    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        let _ = (ctx, signal);
    }

    /// The cell's way into an [`Async`](asynchronous::Async) actor's pending
    /// handler (poll it again, or drop it); not for use outside the runtime.
    /// A synchronous actor never has a pending handler, and the cell calls
    /// this only for an actor that said it has one (see
    /// `actor/asynchronous.rs`), so the default does nothing.
    #[doc(hidden)]
    fn pending_handler(&mut self, ctx: &mut Context<'_, Self>, op: PendingOp) {
        let _ = (ctx, op);
    }
}

/// What the cell asks of a pending async handler (see
/// [`Actor::pending_handler`]); not for use outside the runtime.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingOp {
    /// Its waker fired: poll it again.
    Poll,
    /// The actor stops: drop it unfinished.
    Cancel,
}

/// Events the runtime delivers to an actor, outside its message type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// An actor this one watches has stopped: its id, and the name it was
    /// spawned with (`None` for an unnamed actor; for an external ref, the
    /// name its target reports, such as a remote ref's published name). Delivered exactly once per `watch`, unless
    /// `unwatch` came first. Match `Signal::Terminated(id, _)` when the
    /// name does not matter.
    Terminated(ActorId, Option<Arc<str>>),
    /// No user message arrived for the receive timeout
    /// (see [`Context::set_receive_timeout`]).
    ReceiveTimeout,
    /// A child failed and its supervisor strategy applied `directive`.
    ChildFailed {
        /// The child.
        child: ActorId,
        /// What went wrong.
        failure: Failure,
        /// What was done about it.
        directive: Directive,
    },
}

/// What a handler can do besides updating its state: learn its own address,
/// spawn and stop children, watch other actors, stop itself.
pub struct Context<'a, A: Actor> {
    pub(crate) cell: &'a Arc<ActorCell<A>>,
    pub(crate) status: &'a mut CellStatus,
}

impl<A: Actor> Context<'_, A> {
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

    /// Spawns a child; it is stopped before this actor stops (or restarts).
    pub fn spawn<C: Actor>(&mut self, props: Props<C>) -> Result<ActorRef<C::Msg>, SpawnError> {
        cell::spawn_child(self.cell, self.status, props).map(|cell| ActorRef { cell })
    }

    /// Stops a child of this actor. Returns false if `child` is not (or no
    /// longer) a child of this actor.
    pub fn stop_child<M: Send + 'static>(&mut self, child: &ActorRef<M>) -> bool {
        self.status.stop_child(child.id())
    }

    /// The identities of the live children.
    pub fn children(&self) -> Vec<ActorId> {
        self.status.child_ids()
    }

    /// The live child spawned with `name` (see [`Props::name`]), as a ref
    /// of message type `M`; `None` if there is none, or if its messages
    /// are not `M`.
    ///
    /// Typed, because the parent spawned its children and knows what they
    /// take: a ref it can `tell` at once is what a lookup is for, where an
    /// untyped handle would only stop or watch the child, and would have
    /// to be converted (and checked) before every send anyway. A wrong `M`
    /// cannot be told apart from a missing child here; the child's
    /// [`ActorId`] in [`children`](Self::children) is there for that. A
    /// child is found from its spawn until its parent learns it stopped
    /// (its name is then free for a new child).
    ///
    /// [`Props::name`]: crate::Props::name
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Props};
    ///
    /// struct Worker(mpsc::Sender<String>);
    /// impl Actor for Worker {
    ///     type Msg = String;
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, job: String) {
    ///         self.0.send(job).unwrap();
    ///     }
    /// }
    ///
    /// enum Msg { Start, Job(&'static str, String) }
    /// struct Boss(mpsc::Sender<String>);
    /// impl Actor for Boss {
    ///     type Msg = Msg;
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
    ///         match msg {
    ///             Msg::Start => {
    ///                 let out = self.0.clone();
    ///                 ctx.spawn(Props::new(move || Worker(out.clone())).name("ann")).unwrap();
    ///             }
    ///             // By name, without keeping the refs in the actor's state.
    ///             Msg::Job(name, job) => match ctx.child::<String>(name) {
    ///                 Some(worker) => worker.tell(job),
    ///                 None => self.0.send(format!("no worker {name}")).unwrap(),
    ///             },
    ///         }
    ///     }
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let (out, done) = mpsc::channel();
    /// let boss = system.spawn(Props::new(move || Boss(out.clone()))).unwrap();
    /// boss.tell(Msg::Start);
    /// boss.tell(Msg::Job("ann", "report".into()));
    /// boss.tell(Msg::Job("bob", "report".into()));
    /// let next = || done.recv_timeout(Duration::from_secs(5)).unwrap();
    /// let mut got = vec![next(), next()];
    /// got.sort();
    /// assert_eq!(got, ["no worker bob", "report"]);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    pub fn child<M: Send + 'static>(&self, name: &str) -> Option<ActorRef<M>> {
        cell::child_named(self.status, name).map(|cell| ActorRef { cell })
    }

    /// Stops this actor after the current message (children first).
    pub fn stop(&mut self) {
        self.status.stop_requested = true;
    }

    /// Watches `other`: this actor receives [`Signal::Terminated`] once when
    /// it stops (at once if it already has).
    pub fn watch<M: Send + 'static>(&mut self, other: &ActorRef<M>) {
        cell::watch(self.cell, self.status, other.cell.clone());
    }

    /// This actor's timers: messages to itself, once or periodically, keyed
    /// and cancelled automatically when the actor stops or restarts.
    pub fn timers(&mut self) -> Timers<'_, A> {
        Timers {
            cell: self.cell,
            status: self.status,
        }
    }

    /// Delivers `msg` to this actor once after `delay`, and returns the
    /// timer's id (a key for [`Timers::cancel`] and [`Timers::is_active`]).
    ///
    /// The timer belongs to this instance of the actor: it is cancelled when
    /// the actor stops or restarts, and a message it already sent is then
    /// not delivered, as with [`timers`](Self::timers), of which it is one
    /// under a key of its own. Prefer it to the system scheduler's
    /// [`Scheduler::schedule_once`](crate::Scheduler::schedule_once) for a
    /// message to oneself: that one is addressed to the actor's ref, which
    /// outlives a restart, so a fresh instance would get the message its
    /// failed predecessor scheduled ("expire reservation 1" releasing the
    /// new instance's reservation 1).
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use troupe::scheduler::ManualClock;
    /// use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
    ///
    /// enum Msg { Hold(u64, ReplyTo<()>), Expire(u64) }
    /// struct Desk { expired: mpsc::Sender<u64> }
    /// impl Actor for Desk {
    ///     type Msg = Msg;
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
    ///         match msg {
    ///             Msg::Hold(id, held) => {
    ///                 ctx.schedule_once(Duration::from_secs(60), Msg::Expire(id));
    ///                 held.reply(());
    ///             }
    ///             Msg::Expire(id) => self.expired.send(id).unwrap(),
    ///         }
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// let system = ActorSystem::builder().manual_clock(&clock).build().unwrap();
    /// let (tx, expired) = mpsc::channel();
    /// let desk = system.spawn(Props::new(move || Desk { expired: tx.clone() })).unwrap();
    /// desk.ask(|held| Msg::Hold(1, held), Duration::from_secs(5)).wait().unwrap();
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(expired.recv_timeout(Duration::from_secs(5)).unwrap(), 1);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    pub fn schedule_once(&mut self, delay: Duration, msg: A::Msg) -> TimerId {
        let mut timers = self.timers();
        let id = timers.fresh_id();
        timers.single(id.into(), delay, msg);
        id
    }

    /// Delivers a clone of `msg` to this actor after `initial`, then every
    /// `interval` after the previous *deadline* (late firings catch up), and
    /// returns the timer's id. Cancel it with
    /// [`timers().cancel(id)`](Timers::cancel); like
    /// [`schedule_once`](Self::schedule_once) it is cancelled when the actor
    /// stops or restarts, and none of its messages reaches a fresh instance
    /// (the system scheduler's `schedule_at_fixed_rate` would go on
    /// delivering to it).
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{Actor, Context, TimerId};
    ///
    /// #[derive(Clone)]
    /// enum Msg { Start, Poll, Stop }
    /// struct Poller { polling: Option<TimerId>, polls: u32 }
    /// impl Actor for Poller {
    ///     type Msg = Msg;
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
    ///         match msg {
    ///             Msg::Start => {
    ///                 let every = Duration::from_secs(1);
    ///                 self.polling = Some(ctx.schedule_repeatedly(Duration::ZERO, every, Msg::Poll));
    ///             }
    ///             Msg::Poll => self.polls += 1,
    ///             Msg::Stop => {
    ///                 if let Some(id) = self.polling.take() {
    ///                     ctx.timers().cancel(id);
    ///                 }
    ///             }
    ///         }
    ///     }
    /// }
    /// ```
    pub fn schedule_repeatedly(
        &mut self,
        initial: Duration,
        interval: Duration,
        msg: A::Msg,
    ) -> TimerId
    where
        A::Msg: Clone + Sync,
    {
        let mut timers = self.timers();
        let id = timers.fresh_id();
        timers.periodic(id.into(), initial, interval, msg);
        id
    }

    /// Delivers [`Signal::ReceiveTimeout`] when no user message has arrived
    /// for `timeout` (and again after each further `timeout` of silence);
    /// `None` turns it off. Cleared on restart.
    pub fn set_receive_timeout(&mut self, timeout: Option<Duration>) {
        self.cell.set_receive_timeout(self.status, timeout);
    }

    /// A ref of another message type whose messages reach this actor as
    /// `convert(message)`: hand it out where another protocol expects an
    /// `ActorRef<R>` (a reply address, a subscription). The conversion runs
    /// on the sender's thread and must be quick. The adapter has this
    /// actor's id, is terminated when it is, and turns messages into dead
    /// letters once it has stopped (see `actor_ref/adapter.rs`).
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorRef, ActorSystem, Context, Props};
    ///
    /// // A thermometer speaks in plain readings...
    /// struct Thermometer { subscribers: Vec<ActorRef<f64>> }
    /// impl Actor for Thermometer {
    ///     type Msg = ActorRef<f64>;
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, who: ActorRef<f64>) {
    ///         who.tell(21.5);
    ///         self.subscribers.push(who);
    ///     }
    /// }
    ///
    /// // ...which a screen receives as its own message type.
    /// enum Display { Reading(f64) }
    /// struct Screen { thermometer: ActorRef<ActorRef<f64>>, out: mpsc::Sender<f64> }
    /// impl Actor for Screen {
    ///     type Msg = Display;
    ///     fn started(&mut self, ctx: &mut Context<'_, Self>) {
    ///         self.thermometer.tell(ctx.message_adapter(Display::Reading));
    ///     }
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, Display::Reading(t): Display) {
    ///         self.out.send(t).unwrap();
    ///     }
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let (out, readings) = mpsc::channel();
    /// let thermometer = system.spawn(Props::new(|| Thermometer { subscribers: vec![] })).unwrap();
    /// system
    ///     .spawn(Props::new(move || Screen { thermometer: thermometer.clone(), out: out.clone() }))
    ///     .unwrap();
    /// assert_eq!(readings.recv_timeout(Duration::from_secs(5)).unwrap(), 21.5);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    pub fn message_adapter<R: Send + 'static>(
        &self,
        convert: impl Fn(R) -> A::Msg + Send + Sync + 'static,
    ) -> ActorRef<R> {
        crate::actor_ref::adapter::adapter(self.cell.clone(), convert)
    }

    /// Runs `future` on the system's async runtime and delivers its output
    /// to this actor as the message `map(Ok(output))` (feature `tokio`).
    /// A panic inside the future arrives as `map(Err(failure))`, as does a
    /// runtime that could not be started. The handler does not wait: it
    /// returns at once and the actor goes on with other messages.
    ///
    /// Futures are cancelled (aborted at their next await point) when the
    /// actor stops or restarts, and a result that was already on its way
    /// then is dropped: a restarted instance never sees the outcome of work
    /// its predecessor started. The runtime is the one given to
    /// [`ActorSystemBuilder::async_runtime`](crate::ActorSystemBuilder::async_runtime),
    /// or one the system starts on first use.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Failure, Props};
    ///
    /// enum Msg { Fetch, Fetched(Result<u64, Failure>) }
    /// struct Fetcher { out: mpsc::Sender<u64> }
    /// impl Actor for Fetcher {
    ///     type Msg = Msg;
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
    ///         match msg {
    ///             Msg::Fetch => ctx.pipe_to_self(
    ///                 async {
    ///                     // Any async client would be awaited here.
    ///                     tokio::time::sleep(Duration::from_millis(1)).await;
    ///                     42
    ///                 },
    ///                 Msg::Fetched,
    ///             ),
    ///             Msg::Fetched(answer) => self.out.send(answer.unwrap()).unwrap(),
    ///         }
    ///     }
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let (out, answers) = mpsc::channel();
    /// let fetcher = system.spawn(Props::new(move || Fetcher { out: out.clone() })).unwrap();
    /// fetcher.tell(Msg::Fetch);
    /// assert_eq!(answers.recv_timeout(Duration::from_secs(5)).unwrap(), 42);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    #[cfg(feature = "tokio")]
    pub fn pipe_to_self<F>(
        &mut self,
        future: F,
        map: impl FnOnce(Result<F::Output, Failure>) -> A::Msg + Send + 'static,
    ) where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.cell.pipe_to_self(self.status, future, map);
    }

    /// [`pipe_to_self`](Self::pipe_to_self) for a future that returns a
    /// `Result<T, E>`: a panic inside the future (or an async runtime that
    /// could not start) arrives as `Err(E::from(failure))`, folded into the
    /// future's own error, so the handler matches one `Result` instead of
    /// `Result<Result<T, E>, Failure>`. Use it when a panic is just one
    /// more way for the work to fail; keep `pipe_to_self` to tell the two
    /// apart. Cancellation and ordering are `pipe_to_self`'s.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Failure, Props};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum FetchError { NotFound, Crashed(String) }
    /// impl From<Failure> for FetchError {
    ///     fn from(failure: Failure) -> Self { FetchError::Crashed(failure.message) }
    /// }
    ///
    /// enum Msg { Fetch(u64), Fetched(Result<u64, FetchError>) }
    /// struct Fetcher { out: mpsc::Sender<Result<u64, FetchError>> }
    /// impl Actor for Fetcher {
    ///     type Msg = Msg;
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
    ///         match msg {
    ///             Msg::Fetch(id) => ctx.pipe_to_self_result(
    ///                 async move {
    ///                     match id {
    ///                         0 => Err(FetchError::NotFound),
    ///                         1 => panic!("the client broke"),
    ///                         n => Ok(n * 10),
    ///                     }
    ///                 },
    ///                 Msg::Fetched,
    ///             ),
    ///             Msg::Fetched(result) => self.out.send(result).unwrap(),
    ///         }
    ///     }
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let (out, results) = mpsc::channel();
    /// let fetcher = system.spawn(Props::new(move || Fetcher { out: out.clone() })).unwrap();
    /// let next = || results.recv_timeout(Duration::from_secs(5)).unwrap();
    /// fetcher.tell(Msg::Fetch(4));
    /// assert_eq!(next(), Ok(40));
    /// fetcher.tell(Msg::Fetch(0));
    /// assert_eq!(next(), Err(FetchError::NotFound));
    /// fetcher.tell(Msg::Fetch(1));
    /// assert_eq!(next(), Err(FetchError::Crashed("the client broke".into())));
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    #[cfg(feature = "tokio")]
    pub fn pipe_to_self_result<F, T, E>(
        &mut self,
        future: F,
        map: impl FnOnce(Result<T, E>) -> A::Msg + Send + 'static,
    ) where
        F: std::future::Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: From<Failure> + Send + 'static,
    {
        self.pipe_to_self(future, move |result| {
            map(result.unwrap_or_else(|failure| Err(E::from(failure))))
        });
    }

    /// Sets `msg` aside for later (the actor is "not ready yet"). The stash
    /// holds at most `Props::stash_capacity` messages; beyond that the
    /// message is handed back. See [`unstash_all`](Self::unstash_all) and
    /// `docs/semantics.md` for what a restart or a stop does to the stash.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Props};
    ///
    /// enum Msg { Write(&'static str), Opened }
    /// struct File { open: bool, out: mpsc::Sender<&'static str> }
    /// impl Actor for File {
    ///     type Msg = Msg;
    ///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
    ///         match msg {
    ///             Msg::Write(line) if !self.open => ctx.stash(Msg::Write(line)).unwrap(),
    ///             Msg::Write(line) => self.out.send(line).unwrap(),
    ///             Msg::Opened => {
    ///                 self.open = true;
    ///                 ctx.unstash_all();
    ///             }
    ///         }
    ///     }
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let (out, lines) = mpsc::channel();
    /// let file = system
    ///     .spawn(Props::new(move || File { open: false, out: out.clone() }).stash_capacity(100))
    ///     .unwrap();
    /// file.tell(Msg::Write("a"));
    /// file.tell(Msg::Write("b"));
    /// file.tell(Msg::Opened);
    /// file.tell(Msg::Write("c"));
    /// let got: Vec<_> = (0..3).map(|_| lines.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
    /// assert_eq!(got, ["a", "b", "c"]);
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    pub fn stash(&mut self, msg: A::Msg) -> Result<(), StashFull<A::Msg>> {
        self.status.make_stash::<A::Msg>();
        self.status
            .with_stash(|s: Option<&mut Stash<A::Msg>>| match s {
                Some(stash) => stash.stash(msg),
                None => Err(StashFull { msg, capacity: 0 }),
            })
    }

    /// Makes every stashed message due: they are handled next, in the order
    /// they were stashed, before any message still in the mailbox.
    pub fn unstash_all(&mut self) {
        self.status
            .with_stash(|s: Option<&mut Stash<A::Msg>>| s.map(Stash::unstash_all));
        self.signal_unstashed();
    }

    /// Makes the oldest stashed message due (handled before the mailbox);
    /// false if nothing is stashed.
    pub fn unstash_one(&mut self) -> bool {
        let unstashed = self
            .status
            .with_stash(|s: Option<&mut Stash<A::Msg>>| s.is_some_and(Stash::unstash_one));
        self.signal_unstashed();
        unstashed
    }

    /// Tells the run loop that stashed messages are due (a system message,
    /// so the loop pays nothing for the stash otherwise).
    fn signal_unstashed(&mut self) {
        if self.status.stash_due {
            cell::signal_unstashed(self.cell);
        }
    }

    /// Messages in the stash (not counting unstashed ones not yet handled).
    pub fn stashed(&mut self) -> usize {
        self.status
            .stash::<A::Msg>()
            .map_or(0, |s: &mut Stash<A::Msg>| s.len())
    }

    /// Stops watching `other`; no `Terminated` for it is delivered afterwards.
    pub fn unwatch<M: Send + 'static>(&mut self, other: &ActorRef<M>) {
        cell::unwatch(self.cell, self.status, other.cell.clone());
    }
}

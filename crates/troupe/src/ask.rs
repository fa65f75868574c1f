//! Ask: request-reply on top of `tell`, with a timeout, usable from async code
//! (`.await`) and from plain threads (`wait`).
//!
//! # Design
//!
//! An ask creates a one-shot `Promise` shared by the reply handle
//! ([`ReplyTo`], travelling inside the request) and the pending answer
//! ([`Ask`], kept by the asker). The promise is a mutex-protected state plus an
//! atomic `done` flag, so a waiting thread can spin on the flag without taking
//! the lock, then park.
//!
//! * A reply completes the promise once; later replies are refused.
//! * Dropping the `ReplyTo` without replying (the request went to dead
//!   letters, or the handler dropped it) completes the promise with
//!   [`AskError::NoReply`] at once, instead of leaving the asker to time out.
//! * The timeout is enforced by the waiter: `wait` parks with a deadline; an
//!   awaited `Ask` arms a timer on the system's scheduler on its first pending
//!   poll. Whichever comes first, reply or timeout, wins; a reply that comes
//!   later is dropped and `reply` reports `false`.
//! * For transports that carry an ask elsewhere (an external ref, see
//!   `actor_ref/external.rs`): [`ReplyTo::share`] gives a second handle to the
//!   same promise, kept by the transport while the request travels (so
//!   dropping the encoded original does not fail the ask), and
//!   [`ReplyTo::pair`] makes a reply handle and its answer without an actor
//!   ref, for the receiving side that rebuilds a request. The ask fails with
//!   `NoReply` only when every handle has been dropped unanswered.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

use crate::dispatch::on_shared_thread;
use crate::ids::ActorId;
use crate::kernel::{ActorSystem, Kernel};
use crate::scheduler::{Cancellable, Scheduler};

/// Why an ask produced no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskError {
    /// No reply within the timeout.
    Timeout {
        /// The actor that was asked.
        target: ActorId,
        /// The timeout that passed.
        after: Duration,
    },
    /// The request was dropped without a reply (the actor had stopped, or
    /// its handler dropped the reply handle).
    NoReply {
        /// The actor that was asked.
        target: ActorId,
    },
    /// The actor's bounded mailbox was full and refused the request (it
    /// was counted as a `MailboxFull` dead letter); nothing was handled.
    MailboxFull {
        /// The actor that was asked.
        target: ActorId,
    },
    /// The actor cannot be reached: a transport knows that it is gone (its
    /// node is down or was restarted, or nobody serves it any more), so
    /// the request was not delivered. Unlike `NoReply`, this says nothing
    /// about what the actor's handler did: it never saw the request.
    Unreachable {
        /// The actor that was asked.
        target: ActorId,
    },
    /// The request was refused before it reached the actor, for `reason`
    /// (a transport or a router in front of the actor that will not carry
    /// it: an entity id a sharded region does not accept, say). Nothing
    /// handled it.
    Refused {
        /// The actor that was asked.
        target: ActorId,
        /// Why, in the refuser's words.
        reason: String,
    },
    /// `wait` was called on a dispatcher worker thread, where blocking could
    /// deadlock the dispatcher; from an actor, put a reply address in the
    /// request instead, or await the answer in async code.
    WouldBlockDispatcher,
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Timeout { target, after } => {
                write!(f, "ask to actor {target} timed out after {after:?}")
            }
            AskError::NoReply { target } => {
                write!(f, "actor {target} dropped the request without replying")
            }
            AskError::MailboxFull { target } => {
                write!(f, "actor {target} refused the request: its mailbox is full")
            }
            AskError::Unreachable { target } => {
                write!(
                    f,
                    "actor {target} cannot be reached: the request was not delivered"
                )
            }
            AskError::Refused { target, reason } => {
                write!(f, "the request to actor {target} was refused: {reason}")
            }
            AskError::WouldBlockDispatcher => {
                f.write_str("blocking wait on a dispatcher thread refused (it could deadlock)")
            }
        }
    }
}

impl std::error::Error for AskError {}

enum Waiter {
    Thread(Thread),
    Task(Waker),
    /// `Ask::on_answer`: runs on the thread that completes the promise.
    Callback(Box<dyn FnOnce() + Send>),
}

impl Waiter {
    fn wake(self) {
        match self {
            Waiter::Thread(t) => t.unpark(),
            Waiter::Task(w) => w.wake(),
            Waiter::Callback(f) => f(),
        }
    }
}

enum State<R> {
    Waiting(Option<Waiter>),
    Ready(R),
    NoReply,
    Unreachable,
    Refused,
    /// Refused before delivery, with a reason (`ReplyTo::refuse`).
    Rejected(String),
    Expired,
    Taken,
}

/// The one-shot cell shared by a `ReplyTo` and its `Ask`.
struct Promise<R> {
    /// Set (release) when `state` leaves `Waiting`; read by spinning waiters.
    done: AtomicBool,
    state: Mutex<State<R>>,
    /// Live `ReplyTo` handles (1, plus one per `share`); the last one dropped
    /// unanswered completes the promise with `NoReply`.
    handles: AtomicUsize,
    /// The system's count of live promises, decremented on drop.
    live: Arc<AtomicUsize>,
}

impl<R> Drop for Promise<R> {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::Release);
    }
}

impl<R> Promise<R> {
    /// Moves a waiting promise to `next`; false if it was already completed.
    fn complete(&self, next: State<R>) -> Result<(), State<R>> {
        let waiter = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            match &mut *state {
                State::Waiting(waiter) => {
                    let waiter = waiter.take();
                    *state = next;
                    self.done.store(true, Ordering::Release);
                    waiter
                }
                _ => return Err(next),
            }
        };
        if let Some(w) = waiter {
            w.wake();
        }
        Ok(())
    }

    fn take(&self, target: ActorId, timeout: Duration) -> Option<Result<R, AskError>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *state, State::Taken) {
            State::Ready(r) => Some(Ok(r)),
            State::NoReply => Some(Err(AskError::NoReply { target })),
            State::Refused => Some(Err(AskError::MailboxFull { target })),
            State::Unreachable => Some(Err(AskError::Unreachable { target })),
            State::Rejected(reason) => Some(Err(AskError::Refused { target, reason })),
            State::Expired => {
                #[cfg(feature = "metrics")]
                crate::runtime_metrics::ask_timed_out();
                Some(Err(AskError::Timeout {
                    target,
                    after: timeout,
                }))
            }
            waiting @ State::Waiting(_) => {
                *state = waiting;
                None
            }
            State::Taken => panic!("an ask answer was taken twice"),
        }
    }
}

/// The reply handle of an ask: put it in the request; the actor answers with
/// [`reply`](ReplyTo::reply). Dropping it unanswered fails the ask at once.
pub struct ReplyTo<R> {
    promise: Option<Arc<Promise<R>>>,
}

impl<R> ReplyTo<R> {
    /// Answers the ask. Returns `false` if the asker is no longer waiting (it
    /// timed out); the value is then dropped.
    pub fn reply(mut self, value: R) -> bool {
        let promise = self
            .promise
            .take()
            .expect("a ReplyTo is consumed only by reply");
        promise.complete(State::Ready(value)).is_ok()
    }

    /// Fails the ask with [`AskError::Unreachable`]: for a transport that
    /// knows the request cannot reach its actor (the actor's node is down,
    /// say). Returns `false` if the ask was already answered or abandoned.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, AskError, Context, Props, ReplyTo};
    ///
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let far = system.spawn(Props::new(|| Idle)).unwrap().id();
    /// let (reply, answer) = ReplyTo::<u32>::pair(&system, far, Duration::from_secs(5));
    /// // The transport learns that the actor's node is gone.
    /// assert!(reply.unreachable());
    /// assert_eq!(answer.wait(), Err(AskError::Unreachable { target: far }));
    /// system.shutdown();
    /// ```
    pub fn unreachable(mut self) -> bool {
        let promise = self
            .promise
            .take()
            .expect("a ReplyTo is consumed only once");
        promise.complete(State::Unreachable).is_ok()
    }

    /// Fails the ask with [`AskError::Refused`] and `reason`: for whatever
    /// stands in front of the actor (a transport, a router) and will not
    /// deliver the request. Returns `false` if the ask was already
    /// answered or abandoned.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, AskError, Context, Props, ReplyTo};
    ///
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let far = system.spawn(Props::new(|| Idle)).unwrap().id();
    /// let (reply, answer) = ReplyTo::<u32>::pair(&system, far, Duration::from_secs(5));
    /// assert!(reply.refuse("an empty id"));
    /// let reason = "an empty id".to_string();
    /// assert_eq!(answer.wait(), Err(AskError::Refused { target: far, reason }));
    /// system.shutdown();
    /// ```
    pub fn refuse(mut self, reason: impl Into<String>) -> bool {
        let promise = self
            .promise
            .take()
            .expect("a ReplyTo is consumed only once");
        promise.complete(State::Rejected(reason.into())).is_ok()
    }

    /// A second handle to the same pending answer, for a transport that
    /// carries the request elsewhere and answers later (see the module
    /// docs). The first reply through any handle wins; the ask fails with
    /// `NoReply` once every handle is dropped without replying.
    pub fn share(&self) -> ReplyTo<R> {
        let promise = self.promise.as_ref().map(|p| {
            p.handles.fetch_add(1, Ordering::Relaxed);
            p.clone()
        });
        ReplyTo { promise }
    }
}

impl<R: Send + 'static> ReplyTo<R> {
    /// A reply handle and the answer it completes, without sending anything:
    /// for a transport that rebuilds a request (with this handle in it) and
    /// forwards the answer. `target` is the actor named in the answer's
    /// errors; the timeout runs on `system`'s scheduler when awaited.
    pub fn pair(system: &ActorSystem, target: ActorId, timeout: Duration) -> (ReplyTo<R>, Ask<R>) {
        pair(target, timeout, system.inner())
    }
}

impl<R> Drop for ReplyTo<R> {
    fn drop(&mut self) {
        if let Some(promise) = self.promise.take() {
            // The last unanswered handle fails the ask. A reply through
            // another handle is ordered against this by the promise's mutex
            // (`complete` then finds it answered); AcqRel as for any count
            // whose last decrement acts on the shared object.
            if promise.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
                let _ = promise.complete(State::NoReply);
            }
        }
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplyTo")
    }
}

/// A pending answer to an ask: `.await` it, or [`wait`](Ask::wait) for it.
#[must_use = "an Ask does nothing unless awaited or waited for"]
pub struct Ask<R> {
    promise: Arc<Promise<R>>,
    target: ActorId,
    timeout: Duration,
    deadline: Instant,
    scheduler: Scheduler,
    timer: Option<Cancellable>,
    /// Handed to a callback (`on_answer`): dropping this `Ask` must not
    /// expire the promise.
    handed_off: bool,
}

/// A reply handle and the answer it will complete.
pub(crate) fn pair<R: Send + 'static>(
    target: ActorId,
    timeout: Duration,
    system: &Arc<Kernel>,
) -> (ReplyTo<R>, Ask<R>) {
    system.live_asks.fetch_add(1, Ordering::Relaxed);
    let promise = Arc::new(Promise {
        done: AtomicBool::new(false),
        state: Mutex::new(State::Waiting(None)),
        handles: AtomicUsize::new(1),
        live: system.live_asks.clone(),
    });
    let reply_to = ReplyTo {
        promise: Some(promise.clone()),
    };
    let deadline = system.scheduler.now() + timeout;
    // On a manual clock the timeout is armed now, at the virtual time of
    // the ask: armed later (by `wait` or `poll`), it could miss an advance
    // that the test made in between.
    let timer = system.scheduler.is_manual().then(|| {
        let expire = promise.clone();
        system.scheduler.run_at(deadline, move || {
            let _ = expire.complete(State::Expired);
        })
    });
    let ask = Ask {
        promise,
        target,
        timeout,
        deadline,
        scheduler: system.scheduler.clone(),
        timer,
        handed_off: false,
    };
    (reply_to, ask)
}

impl<R: Send + 'static> Ask<R> {
    /// Fails the ask with [`AskError::MailboxFull`]; called before the
    /// refused request (and its `ReplyTo`) is dropped, so that is the answer.
    pub(crate) fn refuse(&self) {
        let _ = self.promise.complete(State::Refused);
    }

    /// Calls `f` with the answer instead of waiting for it: on the thread
    /// that replies (or drops the last reply handle, or fires the timeout),
    /// or at once on this thread if the answer is already there. `f` must
    /// not block. For a transport that forwards answers without a task per
    /// request.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
    ///
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let anyone = system.spawn(Props::new(|| Idle)).unwrap().id();
    /// let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_secs(5));
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// answer.on_answer(move |result| tx.send(result).unwrap());
    /// reply.reply(7);
    /// assert_eq!(rx.recv().unwrap(), Ok(7));
    /// system.shutdown();
    /// ```
    pub fn on_answer(mut self, f: impl FnOnce(Result<R, AskError>) + Send + 'static) {
        self.handed_off = true;
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
        let expire = self.promise.clone();
        let timer = self.scheduler.run_at(self.deadline, move || {
            let _ = expire.complete(State::Expired);
        });
        let (promise, target, timeout) = (self.promise.clone(), self.target, self.timeout);
        let deliver = move || {
            if let Some(answer) = promise.take(target, timeout) {
                timer.cancel();
                f(answer);
            }
        };
        {
            let mut state = self.promise.state.lock().unwrap_or_else(|e| e.into_inner());
            if let State::Waiting(waiter) = &mut *state {
                *waiter = Some(Waiter::Callback(Box::new(deliver)));
                return;
            }
        }
        // Already answered: deliver here.
        deliver();
    }

    /// Blocks the calling thread until the answer, the timeout, or a dropped
    /// request. Spins briefly first, so a quick answer costs no context switch.
    /// Refused on a dispatcher worker thread (see [`AskError::WouldBlockDispatcher`]).
    ///
    /// # Panics
    ///
    /// On a system built with a
    /// [`ManualClock`](crate::scheduler::ManualClock), the timeout is
    /// virtual time: it passes only when some other thread calls
    /// [`ManualClock::advance`](crate::scheduler::ManualClock::advance).
    /// Rather than hang for ever when none does, `wait` panics, with a
    /// message naming the manual clock, once no answer has come while the
    /// clock stood still for the clock's
    /// [wait guard](crate::scheduler::ManualClock::set_wait_guard) of real
    /// time (10 s by default). An answer the actor gives in time is not
    /// affected: only a wait that virtual time alone could end is cut.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::scheduler::ManualClock;
    /// use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
    ///
    /// /// Never answers.
    /// struct Mute(Vec<ReplyTo<u32>>);
    /// impl Actor for Mute {
    ///     type Msg = ReplyTo<u32>;
    ///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, reply: ReplyTo<u32>) {
    ///         self.0.push(reply);
    ///     }
    /// }
    ///
    /// let clock = ManualClock::new();
    /// clock.set_wait_guard(Duration::from_millis(50));
    /// let system = ActorSystem::builder().manual_clock(&clock).build().unwrap();
    /// let mute = system.spawn(Props::new(|| Mute(Vec::new()))).unwrap();
    /// let ask = mute.ask(|r| r, Duration::from_millis(100));
    /// // Nobody advances the clock: the 100 ms never pass.
    /// let stuck = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ask.wait()));
    /// let message = stuck.unwrap_err().downcast::<String>().unwrap();
    /// assert!(message.contains("manual clock"));
    /// system.shutdown();
    /// system.await_termination().unwrap();
    /// ```
    pub fn wait(self) -> Result<R, AskError> {
        if on_shared_thread() {
            return Err(AskError::WouldBlockDispatcher);
        }
        let backoff = Backoff::new();
        while !self.promise.done.load(Ordering::Acquire) && !backoff.is_completed() {
            backoff.snooze();
        }
        let mut stand_still = self.scheduler.stand_still();
        loop {
            {
                let mut state = self.promise.state.lock().unwrap_or_else(|e| e.into_inner());
                if let State::Waiting(waiter) = &mut *state {
                    *waiter = Some(Waiter::Thread(thread::current()));
                }
            }
            if let Some(answer) = self.promise.take(self.target, self.timeout) {
                return answer;
            }
            if let Some(guard) = stand_still.as_mut() {
                // Virtual time: the timeout is the scheduler entry armed
                // with the ask, fired by the test's clock; until then, wait
                // for any answer, but not for ever (`scheduler/clock.rs`).
                if !guard.park() {
                    panic!(
                        "Ask::wait on a manual clock: no answer from actor {} while the clock \
                         stood still for {:?} of real time, and the ask's {:?} timeout is \
                         virtual time that only ManualClock::advance moves; advance the clock \
                         from another thread while this one waits, or build the system on the \
                         real clock (the guard is set with ManualClock::set_wait_guard)",
                        self.target,
                        guard.guard(),
                        self.timeout,
                    );
                }
                continue;
            }
            let now = Instant::now();
            if now >= self.deadline {
                let _ = self.promise.complete(State::Expired);
                continue; // take() now yields the answer: Expired, or a reply that won the race
            }
            thread::park_timeout(self.deadline - now);
        }
    }
}

impl<R: Send + 'static> Future for Ask<R> {
    type Output = Result<R, AskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        {
            let mut state = this.promise.state.lock().unwrap_or_else(|e| e.into_inner());
            if let State::Waiting(waiter) = &mut *state {
                *waiter = Some(Waiter::Task(cx.waker().clone()));
            }
        }
        if let Some(answer) = this.promise.take(this.target, this.timeout) {
            if let Some(timer) = this.timer.take() {
                timer.cancel();
            }
            return Poll::Ready(answer);
        }
        if this.timer.is_none() {
            let promise = this.promise.clone();
            this.timer = Some(this.scheduler.run_at(this.deadline, move || {
                let _ = promise.complete(State::Expired);
            }));
        }
        Poll::Pending
    }
}

impl<R> Drop for Ask<R> {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
        // An abandoned ask: a late reply learns that nobody is listening.
        if !self.handed_off && !self.promise.done.load(Ordering::Acquire) {
            let _ = self.promise.complete(State::Expired);
        }
    }
}

impl<R> fmt::Debug for Ask<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ask")
            .field("target", &self.target)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

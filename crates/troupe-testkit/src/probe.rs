//! [`TestProbe`]: an actor whose ref the test hands to the code under test,
//! and whose messages the test then expects, with deadlines and failure
//! messages that say what was expected, what came, and after how long.
//!
//! # Design
//!
//! A probe is two actors of the system under test: the probe itself, whose
//! handler appends each message with its arrival time to an inbox the test
//! thread waits on (a mutex and a condition variable), and a watcher that
//! watches actors for [`TestProbe::watch`] and [`TestProbe::expect_terminated`]
//! and records their `Terminated` in a second inbox. Both are ordinary
//! actors, so the probe's ref behaves like any actor's: ordering per sender,
//! death watch, stop.
//!
//! Being actors, they need a thread of the system to run on: an actor that
//! tells the probe and then blocks its pool worker (on a
//! [`Latch`](crate::Latch), say) leaves the probe's turn in that worker's
//! LIFO slot, which no other worker steals, until it lets go. Such a handler
//! should let the latch say that it has arrived
//! ([`Latch::expect_waiters`](crate::Latch::expect_waiters)) rather than
//! tell a probe.

use std::collections::{HashSet, VecDeque};
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use troupe::{Actor, ActorId, ActorRef, ActorSystem, Context, Props, Signal};

/// Values with their arrival times, waited for by the test thread.
struct Inbox<T> {
    queue: Mutex<VecDeque<(T, Instant)>>,
    arrived: Condvar,
}

impl<T> Inbox<T> {
    fn new() -> Arc<Self> {
        Arc::new(Inbox {
            queue: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
        })
    }

    fn push(&self, value: T) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.push_back((value, Instant::now()));
        drop(queue);
        self.arrived.notify_all();
    }

    /// The first value for which `take` says yes, waiting until `deadline`;
    /// values it says no to stay queued, in order.
    fn take_first(&self, deadline: Instant, mut take: impl FnMut(&T) -> bool) -> Option<T> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(i) = queue.iter().position(|(v, _)| take(v)) {
                return queue.remove(i).map(|(v, _)| v);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            queue = self
                .arrived
                .wait_timeout(queue, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

struct ProbeActor<M> {
    inbox: Arc<Inbox<M>>,
}

impl<M: Send + 'static> Actor for ProbeActor<M> {
    type Msg = M;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: M) {
        self.inbox.push(msg);
    }
}

type WatchCommand = Box<dyn FnOnce(&mut Context<'_, WatcherActor>) + Send>;

struct WatcherActor {
    terminated: Arc<Inbox<ActorId>>,
}

impl Actor for WatcherActor {
    type Msg = WatchCommand;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, command: WatchCommand) {
        command(ctx);
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            self.terminated.push(id);
        }
    }
}

/// A stand-in actor for tests: hand [`actor_ref`](Self::actor_ref) to the
/// code under test, then expect what it sends.
///
/// ```
/// use std::time::Duration;
/// use troupe::ActorSystem;
/// use troupe_testkit::TestProbe;
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let probe = TestProbe::<u32>::new(&system, "numbers");
/// let r = probe.actor_ref();
/// std::thread::spawn(move || (1..=3).for_each(|n| r.tell(n)));
/// assert_eq!(probe.receive_n(3, Duration::from_secs(5)), vec![1, 2, 3]);
/// probe.expect_no_msg(Duration::from_millis(10));
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
pub struct TestProbe<M: Send + 'static> {
    name: String,
    inbox: Arc<Inbox<M>>,
    terminated: Arc<Inbox<ActorId>>,
    /// Tickets of carried-out [`watch`](TestProbe::watch) commands.
    watching: Arc<Inbox<u64>>,
    next_ticket: AtomicU64,
    /// Actors the watcher has been told to watch.
    watched: Mutex<HashSet<ActorId>>,
    me: ActorRef<M>,
    watcher: ActorRef<WatchCommand>,
    system: ActorSystem,
}

impl<M: Send + 'static> TestProbe<M> {
    /// A probe named `name` (failure messages use it) in `system`: two
    /// top-level actors of that system, which count in its
    /// [`top_level_count`](ActorSystem::top_level_count) and stop when it
    /// shuts down.
    ///
    /// # Panics
    ///
    /// If the system refuses the probe's actors (it is shutting down).
    pub fn new(system: &ActorSystem, name: &str) -> Self {
        let inbox = Inbox::new();
        let terminated = Inbox::new();
        let i = inbox.clone();
        let me = system
            .spawn(Props::new(move || ProbeActor { inbox: i.clone() }))
            .unwrap_or_else(|e| panic!("probe `{name}`: cannot spawn: {e}"));
        let t = terminated.clone();
        let watcher = system
            .spawn(Props::new(move || WatcherActor {
                terminated: t.clone(),
            }))
            .unwrap_or_else(|e| panic!("probe `{name}`: cannot spawn its watcher: {e}"));
        TestProbe {
            name: name.to_string(),
            inbox,
            terminated,
            watching: Inbox::new(),
            next_ticket: AtomicU64::new(0),
            watched: Mutex::new(HashSet::new()),
            me,
            watcher,
            system: system.clone(),
        }
    }

    /// The probe's ref, to hand to the code under test.
    pub fn actor_ref(&self) -> ActorRef<M> {
        self.me.clone()
    }

    /// The next message, waiting at most `timeout`.
    ///
    /// # Panics
    ///
    /// If none came within `timeout`.
    #[track_caller]
    pub fn expect_msg(&self, timeout: Duration) -> M {
        let start = Instant::now();
        self.inbox
            .take_first(start + timeout, |_| true)
            .unwrap_or_else(|| {
                panic!(
                    "probe `{}`: expected a message within {timeout:?}, none came",
                    self.name
                )
            })
    }

    /// The next `n` messages, in arrival order, all within `timeout`.
    ///
    /// # Panics
    ///
    /// If fewer came within `timeout` (the message lists those that did).
    #[track_caller]
    pub fn receive_n(&self, n: usize, timeout: Duration) -> Vec<M>
    where
        M: Debug,
    {
        let deadline = Instant::now() + timeout;
        let mut got = Vec::with_capacity(n);
        while got.len() < n {
            match self.inbox.take_first(deadline, |_| true) {
                Some(msg) => got.push(msg),
                None => panic!(
                    "probe `{}`: expected {n} messages within {timeout:?}, {} came: {got:?}",
                    self.name,
                    got.len()
                ),
            }
        }
        got
    }

    /// Expects no message for `duration`: waits it out.
    ///
    /// # Panics
    ///
    /// If a message came, naming it and when.
    #[track_caller]
    pub fn expect_no_msg(&self, duration: Duration)
    where
        M: Debug,
    {
        let start = Instant::now();
        if let Some(msg) = self.inbox.take_first(start + duration, |_| true) {
            panic!(
                "probe `{}`: expected no message for {duration:?}, got {msg:?} after {:?}",
                self.name,
                start.elapsed()
            );
        }
    }

    /// Expects a message equal to `expected` next.
    ///
    /// # Panics
    ///
    /// If none came within `timeout`, or another message came first.
    #[track_caller]
    pub fn expect_msg_eq(&self, expected: M, timeout: Duration)
    where
        M: Debug + PartialEq,
    {
        self.expect_msg_matching(&format!("{expected:?}"), timeout, |m| *m == expected);
    }

    /// Expects a message for which `matches` holds next; `what` describes it
    /// for the failure message. Returns the message.
    ///
    /// # Panics
    ///
    /// If none came within `timeout`, or the next message does not match.
    #[track_caller]
    pub fn expect_msg_matching(
        &self,
        what: &str,
        timeout: Duration,
        matches: impl FnOnce(&M) -> bool,
    ) -> M
    where
        M: Debug,
    {
        let start = Instant::now();
        let Some(msg) = self.inbox.take_first(start + timeout, |_| true) else {
            panic!(
                "probe `{}`: expected {what} within {timeout:?}, none came",
                self.name
            );
        };
        if !matches(&msg) {
            panic!(
                "probe `{}`: expected {what}, got {msg:?} after {:?}",
                self.name,
                start.elapsed()
            );
        }
        msg
    }

    /// Skips messages until one for which `matches` holds, within
    /// `timeout`, and returns it; the skipped ones are dropped.
    ///
    /// # Panics
    ///
    /// If no matching message came, listing the ones skipped.
    #[track_caller]
    pub fn fish_for(&self, what: &str, timeout: Duration, mut matches: impl FnMut(&M) -> bool) -> M
    where
        M: Debug,
    {
        let start = Instant::now();
        let deadline = start + timeout;
        let mut skipped = Vec::new();
        loop {
            match self.inbox.take_first(deadline, |_| true) {
                Some(msg) if matches(&msg) => return msg,
                Some(msg) => skipped.push(msg),
                None => panic!(
                    "probe `{}`: fished for {what} for {timeout:?}, caught only {skipped:?}",
                    self.name
                ),
            }
        }
    }

    /// Watches `actor` and returns once the watch is in place, waiting at
    /// most `timeout` for the probe's watcher to get to it: a stop sent to
    /// `actor` afterwards finds the probe among its watchers, notified after
    /// those that watched before. [`expect_terminated`](Self::expect_terminated)
    /// then expects its stop.
    ///
    /// For tests where the order of watchers matters; to wait for a stop,
    /// `expect_terminated` alone is enough.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::{ActorSystem, Props};
    /// use troupe_testkit::TestProbe;
    ///
    /// let system = ActorSystem::builder().threads(1).build().unwrap();
    /// let probe = TestProbe::<()>::new(&system, "deaths");
    /// let other = TestProbe::<u32>::new(&system, "other");
    /// probe.watch(&other.actor_ref(), Duration::from_secs(5));
    /// other.stop();
    /// probe.expect_terminated(&other.actor_ref(), Duration::from_secs(5));
    /// troupe_testkit::terminate(&system, Duration::from_secs(5));
    /// ```
    ///
    /// # Panics
    ///
    /// If the watcher did not get to it within `timeout`.
    #[track_caller]
    pub fn watch<N: Send + 'static>(&self, actor: &ActorRef<N>, timeout: Duration) {
        let start = Instant::now();
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        self.send_watch(actor, Some(ticket));
        if self
            .watching
            .take_first(start + timeout, |t| *t == ticket)
            .is_none()
        {
            panic!(
                "probe `{}`: expected to watch {} within {timeout:?}, \
                 its watcher did not get to it",
                self.name,
                actor.id()
            );
        }
    }

    /// Tells the watcher to watch `actor`, then to hand in `ticket`.
    fn send_watch<N: Send + 'static>(&self, actor: &ActorRef<N>, ticket: Option<u64>) {
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(actor.id());
        let target = actor.clone();
        let watching = self.watching.clone();
        self.watcher.tell(Box::new(move |ctx| {
            ctx.watch(&target);
            if let Some(ticket) = ticket {
                watching.push(ticket);
            }
        }));
    }

    /// Expects `actor` to stop within `timeout` (at once if it already
    /// has): the probe watches it, unless [`watch`](Self::watch) already
    /// did.
    ///
    /// # Panics
    ///
    /// If it did not stop within `timeout`.
    #[track_caller]
    pub fn expect_terminated<N: Send + 'static>(&self, actor: &ActorRef<N>, timeout: Duration) {
        let start = Instant::now();
        let id = actor.id();
        let watched = self
            .watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&id);
        if !watched {
            self.send_watch(actor, None);
        }
        if self
            .terminated
            .take_first(start + timeout, |t| *t == id)
            .is_none()
        {
            panic!(
                "probe `{}`: expected {id} to stop within {timeout:?}, it did not",
                self.name
            );
        }
        // Its `Terminated` is taken: a repeated expectation watches again,
        // and a stopped actor's watch is answered at once.
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// Every message that has arrived and not been taken, without waiting.
    pub fn received(&self) -> Vec<M> {
        let mut queue = self.inbox.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.drain(..).map(|(m, _)| m).collect()
    }

    /// Stops the probe's actors (the code under test sees its ref stop).
    pub fn stop(&self) {
        self.system.stop(&self.me);
        self.system.stop(&self.watcher);
    }
}

//! Async actors (`AsyncActor`, `Props::new_async`): one message at a time
//! in order with the handler's `&mut self` its own, on the pool, pinned
//! and tokio dispatchers; a stop or a restart while a handler awaits drops
//! its future; a panic inside it goes to the supervisor; an ask awaited in
//! a handler holds no thread; what arrives on the system lane meanwhile
//! (timers, signals) waits its turn; a bounded mailbox pushes back while a
//! handler awaits; the stash; the manual clock moves `AsyncContext::sleep`;
//! tokio's timers, I/O and `spawn` work inside a handler.
//!
//! Gates are `tokio::sync::oneshot` channels, which need no runtime: a
//! handler awaits its gate and the test opens it.

use std::time::Duration;

use crate::support::{system, PATIENCE};
use tokio::sync::oneshot;
use troupe::{
    Actor, ActorRef, ActorSystem, AskError, AsyncActor, AsyncContext, Context, MailboxConfig,
    Overflow, Props, ReplyTo, Signal, SupervisorStrategy, TrySendError,
};
use troupe_testkit::{quiet_panics, terminate, ManualClock, TestProbe};

/// Logs `"dropped"` when dropped: the future holding it was dropped.
struct DropSignal(ActorRef<String>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.tell("dropped".into());
    }
}

enum Msg {
    /// Log `start n` (with the handlers in flight), await `gate`, log `end n`.
    Step(u32, oneshot::Receiver<()>),
    /// Log `holding`, hold `guard` while awaiting `gate`, then answer.
    Hold {
        gate: oneshot::Receiver<()>,
        guard: DropSignal,
        answer: ReplyTo<u32>,
    },
    /// Await `gate`, then panic.
    PanicAfter(oneshot::Receiver<()>),
    /// Schedule `Tick` after a second, then await `gate`.
    TimerThenAwait(oneshot::Receiver<()>),
    Tick,
    /// Watch `other`.
    Watch(ActorRef<()>),
    /// Answer how many `Step`s this instance completed.
    Handled(ReplyTo<u32>),
}

struct Stepper {
    log: ActorRef<String>,
    in_flight: u32,
    handled: u32,
}

impl Stepper {
    fn props(log: &TestProbe<String>) -> Props<troupe::Async<Stepper>> {
        let log = log.actor_ref();
        Props::new_async(move || Stepper {
            log: log.clone(),
            in_flight: 0,
            handled: 0,
        })
    }

    fn log(&self, event: impl Into<String>) {
        self.log.tell(event.into());
    }
}

impl AsyncActor for Stepper {
    type Msg = Msg;

    fn started(&mut self, _ctx: &mut AsyncContext<Self>) {
        self.log("started");
    }

    fn stopped(&mut self, _ctx: &mut AsyncContext<Self>) {
        self.log("stopped");
    }

    fn before_restart(&mut self, _ctx: &mut AsyncContext<Self>, _failure: &troupe::Failure) {
        self.log("before_restart");
    }

    fn signal(&mut self, _ctx: &mut AsyncContext<Self>, signal: Signal) {
        if let Signal::Terminated(..) = signal {
            self.log("terminated");
        }
    }

    async fn receive(&mut self, ctx: &mut AsyncContext<Self>, msg: Msg) {
        match msg {
            Msg::Step(n, gate) => {
                self.log(format!("start {n} in flight {}", self.in_flight));
                self.in_flight += 1;
                let _ = gate.await;
                self.in_flight -= 1;
                self.handled += 1;
                self.log(format!("end {n}"));
            }
            Msg::Hold {
                gate,
                guard,
                answer,
            } => {
                self.log("holding");
                let _ = gate.await;
                drop(guard);
                answer.reply(self.handled);
            }
            Msg::PanicAfter(gate) => {
                let _ = gate.await;
                panic!("async-actor-test: the handler broke after its await");
            }
            Msg::TimerThenAwait(gate) => {
                ctx.schedule_once(Duration::from_secs(1), Msg::Tick);
                self.log("timer set");
                let _ = gate.await;
                self.log("end timer");
            }
            Msg::Tick => self.log("tick"),
            Msg::Watch(other) => {
                ctx.watch(&other);
                self.log("watching");
            }
            Msg::Handled(reply) => {
                reply.reply(self.handled);
            }
        }
    }
}

fn gate() -> (oneshot::Sender<()>, oneshot::Receiver<()>) {
    oneshot::channel()
}

/// Three handlers that await gates opened last-first still run one after
/// another, in order, each alone with the actor (`log` is the probe
/// `props` log to).
fn one_at_a_time_in_order(
    system: &ActorSystem,
    props: Props<troupe::Async<Stepper>>,
    log: &TestProbe<String>,
) {
    let stepper = system.spawn(props).unwrap();
    let (open0, g0) = gate();
    let (open1, g1) = gate();
    let (open2, g2) = gate();
    stepper.tell(Msg::Step(0, g0));
    stepper.tell(Msg::Step(1, g1));
    stepper.tell(Msg::Step(2, g2));
    log.expect_msg_eq("started".into(), PATIENCE);
    log.expect_msg_eq("start 0 in flight 0".into(), PATIENCE);
    // The first handler awaits with two messages queued behind it. Opening
    // the later gates first changes nothing: their messages are not taken
    // before the first handler completes.
    open2.send(()).unwrap();
    open1.send(()).unwrap();
    open0.send(()).unwrap();
    log.expect_msg_eq("end 0".into(), PATIENCE);
    for n in 1..3 {
        log.expect_msg_eq(format!("start {n} in flight 0"), PATIENCE);
        log.expect_msg_eq(format!("end {n}"), PATIENCE);
    }
    let answered = stepper.ask(Msg::Handled, PATIENCE).wait().unwrap();
    assert_eq!(answered, 3);
}

#[test]
fn handlers_run_one_at_a_time_in_order_on_the_pool() {
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    one_at_a_time_in_order(&system, Stepper::props(&log), &log);
    terminate(&system, PATIENCE);
}

#[test]
fn handlers_run_one_at_a_time_in_order_on_a_pinned_thread() {
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    one_at_a_time_in_order(&system, Stepper::props(&log).dispatcher("pinned"), &log);
    terminate(&system, PATIENCE);
}

#[cfg(feature = "tokio")]
#[test]
fn handlers_run_one_at_a_time_in_order_on_the_tokio_dispatcher() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let system = ActorSystem::builder()
        .tokio_dispatcher("default", runtime.handle().clone(), 5)
        .build()
        .unwrap();
    let log = TestProbe::<String>::new(&system, "log");
    one_at_a_time_in_order(&system, Stepper::props(&log), &log);
    terminate(&system, PATIENCE);
}

#[test]
fn a_stop_while_a_handler_awaits_drops_its_future_and_its_message() {
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    let watcher = TestProbe::<()>::new(&system, "watcher");
    let stepper = system.spawn(Stepper::props(&log)).unwrap();
    watcher.watch(&stepper, PATIENCE);
    log.expect_msg_eq("started".into(), PATIENCE);
    let (open, g) = gate();
    let guard = DropSignal(log.actor_ref());
    let answer = stepper.ask(
        |answer| Msg::Hold {
            gate: g,
            guard,
            answer,
        },
        PATIENCE,
    );
    log.expect_msg_eq("holding".into(), PATIENCE);
    // Queued behind the pending handler: never handled.
    let (_open_next, next) = gate();
    stepper.tell(Msg::Step(9, next));
    system.stop(&stepper);
    // The future is dropped (with the guard it held) before `stopped`.
    log.expect_msg_eq("dropped".into(), PATIENCE);
    log.expect_msg_eq("stopped".into(), PATIENCE);
    watcher.expect_terminated(&stepper, PATIENCE);
    // The message in progress went with its future: its asker learns that
    // no answer will come, and its gate has no receiver any more.
    assert!(matches!(answer.wait(), Err(AskError::NoReply { .. })));
    assert!(open.send(()).is_err(), "the pending future was dropped");
    terminate(&system, PATIENCE);
    let rest = log.received();
    assert!(
        !rest.iter().any(|e| e.starts_with("start")),
        "a message queued behind the pending handler was handled: {rest:?}"
    );
}

/// Spawns the children of a group-restart test and hands their refs back.
struct Parent;

enum ParentMsg {
    Spawn(
        Box<Props<troupe::Async<Stepper>>>,
        ReplyTo<(ActorRef<Msg>, ActorRef<()>)>,
    ),
}

/// Fails on any message.
struct Crasher;

impl Actor for Crasher {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        panic!("async-actor-test: the sibling broke");
    }
}

impl Actor for Parent {
    type Msg = ParentMsg;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: ParentMsg) {
        let ParentMsg::Spawn(props, reply) = msg;
        let group = || SupervisorStrategy::restart().all_for_one();
        let stepper = ctx.spawn(props.supervisor(group())).unwrap();
        let crasher = ctx
            .spawn(Props::new(|| Crasher).supervisor(group()))
            .unwrap();
        reply.reply((stepper, crasher));
    }
}

#[test]
fn a_restart_while_a_handler_awaits_drops_its_future_and_the_fresh_instance_goes_on() {
    quiet_panics(&["async-actor-test"]);
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    let parent = system.spawn(Props::new(|| Parent)).unwrap();
    let props = Box::new(Stepper::props(&log));
    let (stepper, crasher) = parent
        .ask(|reply| ParentMsg::Spawn(props, reply), PATIENCE)
        .wait()
        .unwrap();
    log.expect_msg_eq("started".into(), PATIENCE);
    let (open1, g1) = gate();
    stepper.tell(Msg::Step(1, g1));
    log.expect_msg_eq("start 1 in flight 0".into(), PATIENCE);
    let (open2, g2) = gate();
    stepper.tell(Msg::Step(2, g2));
    // The sibling's failure restarts the group: the pending handler is
    // dropped before `before_restart`, and the fresh instance takes the
    // next message.
    crasher.tell(());
    log.expect_msg_eq("before_restart".into(), PATIENCE);
    log.expect_msg_eq("started".into(), PATIENCE);
    log.expect_msg_eq("start 2 in flight 0".into(), PATIENCE);
    assert!(open1.send(()).is_err(), "the pending future was dropped");
    open2.send(()).unwrap();
    log.expect_msg_eq("end 2".into(), PATIENCE);
    assert_eq!(stepper.ask(Msg::Handled, PATIENCE).wait().unwrap(), 1);
    terminate(&system, PATIENCE);
    assert!(!log.received().contains(&"end 1".to_string()));
}

#[test]
fn a_panic_inside_the_future_restarts_the_actor_under_its_strategy() {
    quiet_panics(&["async-actor-test"]);
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    let stepper = system
        .spawn(Stepper::props(&log).supervisor(SupervisorStrategy::restart()))
        .unwrap();
    log.expect_msg_eq("started".into(), PATIENCE);
    let (open0, g0) = gate();
    stepper.tell(Msg::Step(0, g0));
    open0.send(()).unwrap();
    let (open, g) = gate();
    stepper.tell(Msg::PanicAfter(g));
    let (open1, g1) = gate();
    stepper.tell(Msg::Step(1, g1));
    open.send(()).unwrap();
    open1.send(()).unwrap();
    log.expect_msg_eq("start 0 in flight 0".into(), PATIENCE);
    log.expect_msg_eq("end 0".into(), PATIENCE);
    log.expect_msg_eq("before_restart".into(), PATIENCE);
    log.expect_msg_eq("started".into(), PATIENCE);
    log.expect_msg_eq("start 1 in flight 0".into(), PATIENCE);
    log.expect_msg_eq("end 1".into(), PATIENCE);
    // A fresh instance: its count starts over.
    assert_eq!(stepper.ask(Msg::Handled, PATIENCE).wait().unwrap(), 1);
    terminate(&system, PATIENCE);
}

#[test]
fn a_panic_inside_the_future_resumed_keeps_the_instance_and_drops_the_future() {
    quiet_panics(&["async-actor-test"]);
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    let stepper = system
        .spawn(Stepper::props(&log).supervisor(SupervisorStrategy::resume()))
        .unwrap();
    let (open0, g0) = gate();
    stepper.tell(Msg::Step(0, g0));
    let (open, g) = gate();
    stepper.tell(Msg::PanicAfter(g));
    let (open1, g1) = gate();
    stepper.tell(Msg::Step(1, g1));
    open0.send(()).unwrap();
    open.send(()).unwrap();
    open1.send(()).unwrap();
    // The same instance handles the next message, in a fresh driver.
    assert_eq!(stepper.ask(Msg::Handled, PATIENCE).wait().unwrap(), 2);
    terminate(&system, PATIENCE);
    let events = log.received();
    assert_eq!(
        events.iter().filter(|e| *e == "started").count(),
        1,
        "{events:?}"
    );
}

/// Asks `echo` from inside its handler and forwards the answer.
struct Asker {
    echo: ActorRef<(u32, ReplyTo<u32>)>,
}

impl AsyncActor for Asker {
    type Msg = (u32, ReplyTo<u32>);
    async fn receive(&mut self, _ctx: &mut AsyncContext<Self>, (n, reply): Self::Msg) {
        let answer = self.echo.ask(|r| (n, r), PATIENCE).await.unwrap();
        reply.reply(answer + 1);
    }
}

struct Echo;

impl Actor for Echo {
    type Msg = (u32, ReplyTo<u32>);
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, (n, reply): Self::Msg) {
        reply.reply(n * 10);
    }
}

#[test]
fn an_ask_awaited_in_a_handler_holds_no_thread() {
    // One worker: the asked actor can only answer if the asking handler
    // has given the thread back while it awaits.
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let echo = system.spawn(Props::new(|| Echo)).unwrap();
    let asker = system
        .spawn(Props::new_async(move || Asker { echo: echo.clone() }))
        .unwrap();
    let asks: Vec<_> = (0..3).map(|n| asker.ask(|r| (n, r), PATIENCE)).collect();
    let answers: Vec<u32> = asks.into_iter().map(|a| a.wait().unwrap()).collect();
    assert_eq!(answers, [1, 11, 21]);
    terminate(&system, PATIENCE);
}

#[test]
fn a_timer_message_and_a_signal_wait_for_the_pending_handler() {
    let clock = ManualClock::new();
    let system = ActorSystem::builder()
        .threads(2)
        .manual_clock(&clock)
        .build()
        .unwrap();
    let log = TestProbe::<String>::new(&system, "log");
    let stepper = system.spawn(Stepper::props(&log)).unwrap();
    let watched = TestProbe::<()>::new(&system, "watched");
    stepper.tell(Msg::Watch(watched.actor_ref()));
    let (open, g) = gate();
    stepper.tell(Msg::TimerThenAwait(g));
    log.expect_msg_eq("started".into(), PATIENCE);
    log.expect_msg_eq("watching".into(), PATIENCE);
    log.expect_msg_eq("timer set".into(), PATIENCE);
    // The timer fires, the watched actor stops, and a mailbox message
    // arrives, all while the handler awaits.
    assert_eq!(clock.advance(Duration::from_secs(1)), 1);
    let guard = TestProbe::<()>::new(&system, "guard");
    guard.watch(&watched.actor_ref(), PATIENCE);
    watched.stop();
    guard.expect_terminated(&watched.actor_ref(), PATIENCE);
    let (open9, g9) = gate();
    open9.send(()).unwrap();
    stepper.tell(Msg::Step(9, g9));
    open.send(()).unwrap();
    // System-lane traffic first, in arrival order, then the mailbox.
    log.expect_msg_eq("end timer".into(), PATIENCE);
    log.expect_msg_eq("tick".into(), PATIENCE);
    log.expect_msg_eq("terminated".into(), PATIENCE);
    log.expect_msg_eq("start 9 in flight 0".into(), PATIENCE);
    log.expect_msg_eq("end 9".into(), PATIENCE);
    terminate(&system, PATIENCE);
}

#[test]
fn a_bounded_mailbox_pushes_back_while_a_handler_awaits() {
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    let stepper = system
        .spawn(Stepper::props(&log).mailbox(MailboxConfig::bounded(2, Overflow::Fail)))
        .unwrap();
    let (open, g) = gate();
    stepper.tell(Msg::Step(0, g));
    log.expect_msg_eq("started".into(), PATIENCE);
    log.expect_msg_eq("start 0 in flight 0".into(), PATIENCE);
    let mut opens = Vec::new();
    for n in 1..=2 {
        let (o, g) = gate();
        opens.push(o);
        stepper
            .try_tell(Msg::Step(n, g))
            .ok()
            .expect("room for two");
    }
    let (_o, g) = gate();
    assert!(matches!(
        stepper.try_tell(Msg::Step(3, g)),
        Err(TrySendError::Full(_))
    ));
    open.send(()).unwrap();
    for o in opens {
        o.send(()).unwrap();
    }
    // Once the queued two are handled there is room again.
    log.expect_msg_eq("end 0".into(), PATIENCE);
    for n in 1..=2 {
        log.expect_msg_eq(format!("start {n} in flight 0"), PATIENCE);
        log.expect_msg_eq(format!("end {n}"), PATIENCE);
    }
    assert_eq!(stepper.ask(Msg::Handled, PATIENCE).wait().unwrap(), 3);
    terminate(&system, PATIENCE);
}

/// Stashes numbers until `Open`, which awaits a yield and unstashes.
struct Stasher {
    open: bool,
    out: ActorRef<u32>,
}

enum StashMsg {
    Num(u32),
    Open,
}

impl AsyncActor for Stasher {
    type Msg = StashMsg;
    async fn receive(&mut self, ctx: &mut AsyncContext<Self>, msg: StashMsg) {
        match msg {
            StashMsg::Num(n) if !self.open => ctx.stash(StashMsg::Num(n)).ok().unwrap(),
            StashMsg::Num(n) => {
                ctx.sleep(Duration::ZERO).await;
                self.out.tell(n);
            }
            StashMsg::Open => {
                ctx.unstash_all();
                let (tx, rx) = oneshot::channel();
                // Completed by another thread, so the handler suspends.
                std::thread::spawn(move || tx.send(()));
                let _ = rx.await;
                self.open = true;
            }
        }
    }
}

#[test]
fn stashed_messages_come_back_one_at_a_time_after_the_handler_that_unstashed() {
    let system = system();
    let out = TestProbe::<u32>::new(&system, "out");
    let to = out.actor_ref();
    let stasher = system
        .spawn(
            Props::new_async(move || Stasher {
                open: false,
                out: to.clone(),
            })
            .stash_capacity(10),
        )
        .unwrap();
    stasher.tell(StashMsg::Num(1));
    stasher.tell(StashMsg::Num(2));
    stasher.tell(StashMsg::Open);
    stasher.tell(StashMsg::Num(3));
    assert_eq!(out.receive_n(3, PATIENCE), [1, 2, 3]);
    terminate(&system, PATIENCE);
}

/// Sleeps on the system's clock, then logs how long it slept.
struct Sleeper {
    log: ActorRef<String>,
}

impl AsyncActor for Sleeper {
    type Msg = Duration;
    async fn receive(&mut self, ctx: &mut AsyncContext<Self>, nap: Duration) {
        let scheduler = ctx.system().scheduler().clone();
        let start = scheduler.now();
        ctx.sleep(nap).await;
        self.log
            .tell(format!("woke after {:?}", scheduler.now() - start));
    }
}

#[test]
fn the_manual_clock_moves_a_handler_that_sleeps() {
    let clock = ManualClock::new();
    let system = ActorSystem::builder().manual_clock(&clock).build().unwrap();
    let log = TestProbe::<String>::new(&system, "log");
    let to = log.actor_ref();
    let sleeper = system
        .spawn(Props::new_async(move || Sleeper { log: to.clone() }))
        .unwrap();
    let hour = Duration::from_secs(3600);
    sleeper.tell(hour);
    // Advance in two steps; a sleep that ended at the first would log 59
    // minutes.
    troupe_testkit::await_condition("the sleep is armed", PATIENCE, || {
        system.scheduler().pending() > 0
    });
    clock.advance(hour - Duration::from_secs(60));
    clock.advance(Duration::from_secs(60));
    log.expect_msg_eq(format!("woke after {hour:?}"), PATIENCE);
    terminate(&system, PATIENCE);
}

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Uses tokio's timer, `spawn` and TCP inside its handler.
    struct Tokio;

    impl AsyncActor for Tokio {
        type Msg = ReplyTo<String>;
        async fn receive(&mut self, _ctx: &mut AsyncContext<Self>, reply: ReplyTo<String>) {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                socket.write_all(b"hello").await.unwrap();
            });
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut got = String::new();
            client.read_to_string(&mut got).await.unwrap();
            server.await.unwrap();
            reply.reply(got);
        }
    }

    /// Says whether its handler runs inside a tokio runtime.
    struct InRuntime;

    impl Actor for InRuntime {
        type Msg = ReplyTo<bool>;
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, reply: ReplyTo<bool>) {
            reply.reply(tokio::runtime::Handle::try_current().is_ok());
        }
    }

    #[test]
    fn a_pool_thread_stays_in_the_runtime_after_an_async_poll() {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let sync = system.spawn(Props::new(|| InRuntime)).unwrap();
        assert!(!sync.ask(|r| r, PATIENCE).wait().unwrap());
        let actor = system.spawn(Props::new_async(|| Tokio)).unwrap();
        assert_eq!(actor.ask(|r| r, PATIENCE).wait().unwrap(), "hello");
        // The one worker polled an async handler: a synchronous actor on it
        // now runs inside the system's runtime too (docs/semantics.md).
        assert!(sync.ask(|r| r, PATIENCE).wait().unwrap());
        terminate(&system, PATIENCE);
    }

    #[test]
    fn tokio_timers_io_and_spawn_work_inside_a_handler() {
        let system = system();
        let actor = system.spawn(Props::new_async(|| Tokio)).unwrap();
        let got = actor.ask(|r| r, PATIENCE).wait().unwrap();
        assert_eq!(got, "hello");
        terminate(&system, PATIENCE);
    }
}

/// Registers itself with the receptionist when started; answers `n * 2`.
struct Doubler;

impl AsyncActor for Doubler {
    type Msg = (u32, ReplyTo<u32>);
    fn started(&mut self, ctx: &mut AsyncContext<Self>) {
        let key = troupe::ServiceKey::<Self::Msg>::new("doublers");
        ctx.system().receptionist().register(&key, ctx.myself());
    }
    async fn receive(&mut self, _ctx: &mut AsyncContext<Self>, (n, reply): Self::Msg) {
        reply.reply(n * 2);
    }
}

/// Finds a doubler through the receptionist, watches it and asks it, all
/// from inside its handler; logs the answer and the doubler's termination.
struct Finder {
    log: ActorRef<String>,
}

impl AsyncActor for Finder {
    type Msg = u32;
    async fn receive(&mut self, ctx: &mut AsyncContext<Self>, n: u32) {
        let key = troupe::ServiceKey::<(u32, ReplyTo<u32>)>::new("doublers");
        let listing = ctx
            .system()
            .receptionist()
            .find(&key, PATIENCE)
            .await
            .unwrap();
        let doubler = listing.refs()[0].clone();
        ctx.watch(&doubler);
        let answer = doubler.ask(|r| (n, r), PATIENCE).await.unwrap();
        self.log.tell(format!("doubled {answer}"));
    }
    fn signal(&mut self, _ctx: &mut AsyncContext<Self>, signal: Signal) {
        if let Signal::Terminated(..) = signal {
            self.log.tell("doubler gone".into());
        }
    }
}

#[test]
fn an_async_actor_is_found_through_the_receptionist_and_watched() {
    let system = system();
    let log = TestProbe::<String>::new(&system, "log");
    let doubler = system.spawn(Props::new_async(|| Doubler)).unwrap();
    let key = troupe::ServiceKey::<(u32, ReplyTo<u32>)>::new("doublers");
    troupe_testkit::await_condition("the doubler is registered", PATIENCE, || {
        !system
            .receptionist()
            .find(&key, PATIENCE)
            .wait()
            .unwrap()
            .is_empty()
    });
    let to = log.actor_ref();
    let finder = system
        .spawn(Props::new_async(move || Finder { log: to.clone() }))
        .unwrap();
    finder.tell(21);
    log.expect_msg_eq("doubled 42".into(), PATIENCE);
    system.stop(&doubler);
    log.expect_msg_eq("doubler gone".into(), PATIENCE);
    terminate(&system, PATIENCE);
}

/// Wakes itself and returns `Pending` once: a handler that suspends.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
}

/// Logs its name for each item, after suspending once; `Fill` queues the
/// items of both recorders from one handler, so both hold all of theirs
/// before either runs (the pool has one worker, busy here).
struct Recorder {
    name: char,
    log: std::sync::Arc<std::sync::Mutex<Vec<char>>>,
}

enum Work {
    Item,
    Fill(ActorRef<Work>, ActorRef<Work>, usize),
}

impl AsyncActor for Recorder {
    type Msg = Work;
    async fn receive(&mut self, _ctx: &mut AsyncContext<Self>, msg: Work) {
        match msg {
            Work::Item => {
                YieldOnce(false).await;
                self.log.lock().unwrap().push(self.name);
            }
            Work::Fill(a, b, each) => {
                for _ in 0..each {
                    a.tell(Work::Item);
                }
                for _ in 0..each {
                    b.tell(Work::Item);
                }
            }
        }
    }
}

#[test]
fn handlers_that_suspend_still_take_turns_of_throughput_messages() {
    let throughput = 3;
    // Three full runs and one short one per actor.
    let each = 3 * throughput + 1;
    let system = ActorSystem::builder()
        .threads(1)
        .throughput(throughput)
        .build()
        .unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorder = |name| {
        let log = log.clone();
        system
            .spawn(Props::new_async(move || Recorder {
                name,
                log: log.clone(),
            }))
            .unwrap()
    };
    let (a, b, filler) = (recorder('a'), recorder('b'), recorder('f'));
    filler.tell(Work::Fill(a, b, each));
    troupe_testkit::await_condition("every item is handled", PATIENCE, || {
        log.lock().unwrap().len() == 2 * each
    });
    let log = log.lock().unwrap().clone();
    // Each wake between two messages is a system message: it must not give
    // the actor a fresh budget, or one actor would handle all its items in
    // one run.
    let mut runs: Vec<(char, usize)> = Vec::new();
    for &name in &log {
        match runs.last_mut() {
            Some((last, len)) if *last == name => *len += 1,
            _ => runs.push((name, 1)),
        }
    }
    for name in ['a', 'b'] {
        let lengths: Vec<usize> = runs
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, len)| *len)
            .collect();
        assert_eq!(
            lengths,
            [throughput, throughput, throughput, 1],
            "runs of {name:?} in {log:?}"
        );
    }
    terminate(&system, PATIENCE);
}

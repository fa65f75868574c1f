//! Async work from actors (`Context::pipe_to_self`, feature `tokio`): the
//! output comes back as a message, a panic inside the future comes back as
//! a failure, futures are cancelled when their actor stops or restarts,
//! the system's own runtime starts on first use (or a given one is used),
//! `pipe_to_self_result` folds a panic into the future's own error, and
//! the other direction: a tokio task awaiting an ask.

use std::time::Duration;

use crate::support::PATIENCE;
use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, ActorSystem, Context, Failure, Props, ReplyTo, SupervisorStrategy};
use troupe_testkit::{quiet_panics, terminate, TestProbe};

/// Tells its probe when it is dropped: the future holding it was cancelled
/// (or finished).
struct DropSignal(ActorRef<&'static str>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.tell("dropped");
    }
}

enum Msg {
    /// Pipe a future that answers `n + 1` and names its thread.
    Compute(u64),
    /// Pipe a future that panics.
    PanicInside,
    /// Pipe a future that waits for `gate` and holds `signal` meanwhile;
    /// reply once it is started.
    Wait {
        gate: oneshot::Receiver<()>,
        signal: DropSignal,
        started: ReplyTo<()>,
    },
    /// Fail the handler (a restart under the test's strategy).
    Fail,
    /// What a piped future produced.
    Done(Result<(u64, String), Failure>),
}

struct Piper {
    out: ActorRef<Result<(u64, String), String>>,
    instances: ActorRef<()>,
}

impl Actor for Piper {
    type Msg = Msg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.instances.tell(());
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Compute(n) => ctx.pipe_to_self(
                async move {
                    tokio::task::yield_now().await;
                    let thread = std::thread::current().name().unwrap_or("").to_string();
                    (n + 1, thread)
                },
                Msg::Done,
            ),
            Msg::PanicInside => ctx.pipe_to_self(
                async {
                    tokio::task::yield_now().await;
                    if true {
                        panic!("pipe-test: the future broke");
                    }
                    (0, String::new())
                },
                Msg::Done,
            ),
            Msg::Wait {
                gate,
                signal,
                started,
            } => {
                ctx.pipe_to_self(
                    async move {
                        let _signal = signal;
                        let _ = gate.await;
                        (0, "released".to_string())
                    },
                    Msg::Done,
                );
                started.reply(());
            }
            Msg::Fail => panic!("pipe-test: the handler broke"),
            Msg::Done(result) => self.out.tell(result.map_err(|f| f.message)),
        }
    }
}

struct Setup {
    system: ActorSystem,
    piper: troupe::ActorRef<Msg>,
    results: TestProbe<Result<(u64, String), String>>,
    instances: TestProbe<()>,
}

fn setup(builder: troupe::ActorSystemBuilder) -> Setup {
    let system = builder.threads(1).build().unwrap();
    let results = TestProbe::new(&system, "piped results");
    let instances = TestProbe::new(&system, "instances started");
    let (out, started) = (results.actor_ref(), instances.actor_ref());
    let piper = system
        .spawn(
            Props::new(move || Piper {
                out: out.clone(),
                instances: started.clone(),
            })
            .supervisor(SupervisorStrategy::restart()),
        )
        .unwrap();
    instances.expect_msg(PATIENCE);
    Setup {
        system,
        piper,
        results,
        instances,
    }
}

#[test]
fn the_output_arrives_as_a_message_from_the_systems_own_runtime() {
    let s = setup(ActorSystem::builder().name("pipes-own"));
    s.piper.tell(Msg::Compute(41));
    let (answer, thread) = s.results.expect_msg(PATIENCE).unwrap();
    assert_eq!(answer, 42);
    assert_eq!(
        thread, "pipes-own-async",
        "ran on the runtime started on first use"
    );
    terminate(&s.system, PATIENCE);
}

#[test]
fn a_given_runtime_runs_the_futures() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("given-rt")
        .build()
        .unwrap();
    let s = setup(ActorSystem::builder().async_runtime(runtime.handle().clone()));
    s.piper.tell(Msg::Compute(1));
    assert_eq!(
        s.results.expect_msg(PATIENCE).unwrap(),
        (2, "given-rt".to_string())
    );
    terminate(&s.system, PATIENCE);
}

#[test]
fn a_panic_inside_the_future_reaches_the_actor_as_a_failure() {
    quiet_panics(&["pipe-test: the future broke"]);
    let s = setup(ActorSystem::builder());
    s.piper.tell(Msg::PanicInside);
    let failure = s.results.expect_msg(PATIENCE).unwrap_err();
    assert_eq!(failure, "pipe-test: the future broke");
    // The actor itself did not fail: the same instance goes on piping.
    s.piper.tell(Msg::Compute(9));
    assert_eq!(s.results.expect_msg(PATIENCE).unwrap().0, 10);
    terminate(&s.system, PATIENCE);
    assert!(s.instances.received().is_empty(), "no restart happened");
}

/// Starts a future that waits for the returned gate, and waits until it
/// is running.
fn start_waiting(s: &Setup) -> (oneshot::Sender<()>, TestProbe<&'static str>) {
    let (gate_tx, gate) = oneshot::channel();
    let dropped = TestProbe::new(&s.system, "waiting future dropped");
    let signal = DropSignal(dropped.actor_ref());
    s.piper
        .ask(
            |started| Msg::Wait {
                gate,
                signal,
                started,
            },
            PATIENCE,
        )
        .wait()
        .unwrap();
    (gate_tx, dropped)
}

#[test]
fn a_stopped_actors_pending_future_is_cancelled() {
    let s = setup(ActorSystem::builder());
    let (gate, dropped) = start_waiting(&s);
    s.system.stop(&s.piper);
    dropped.expect_msg_eq("dropped", PATIENCE); // the future was dropped
    assert!(gate.send(()).is_err(), "nobody waits on the gate any more");
    terminate(&s.system, PATIENCE);
    assert!(s.results.received().is_empty(), "no result was delivered");
}

#[test]
fn a_restart_cancels_the_futures_of_the_failed_instance() {
    quiet_panics(&["pipe-test: the handler broke"]);
    let s = setup(ActorSystem::builder());
    let (gate, dropped) = start_waiting(&s);
    s.piper.tell(Msg::Fail);
    s.instances.expect_msg(PATIENCE);
    dropped.expect_msg_eq("dropped", PATIENCE); // the future was dropped
    assert!(gate.send(()).is_err(), "nobody waits on the gate any more");
    // The new instance pipes as usual, and it is the first result it sees.
    s.piper.tell(Msg::Compute(1));
    assert_eq!(s.results.expect_msg(PATIENCE).unwrap().0, 2);
    terminate(&s.system, PATIENCE);
    assert!(
        s.results.received().is_empty(),
        "the old future's result never came"
    );
}

#[test]
fn a_tokio_task_awaits_an_ask() {
    struct Doubler;
    impl Actor for Doubler {
        type Msg = (u64, ReplyTo<u64>);
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, (n, reply): Self::Msg) {
            reply.reply(2 * n);
        }
    }
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let doubler = system.spawn(Props::new(|| Doubler)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let answers = TestProbe::new(&system, "answers from a task");
    let out = answers.actor_ref();
    runtime.spawn(async move {
        let answer = doubler.ask(|r| (21, r), Duration::from_secs(5)).await;
        out.tell(answer.unwrap());
    });
    answers.expect_msg_eq(42, PATIENCE);
    terminate(&system, PATIENCE);
}

#[test]
fn zero_async_threads_is_refused() {
    let err = ActorSystem::builder().async_threads(0).build().unwrap_err();
    assert!(err.to_string().contains("async_threads"), "{err}");
}

/// The error of `pipe_to_self_result`'s futures: their own, or a panic.
#[derive(Debug, PartialEq)]
enum LookupError {
    Missing,
    Panicked(String),
}

impl From<Failure> for LookupError {
    fn from(failure: Failure) -> Self {
        LookupError::Panicked(failure.message)
    }
}

/// Pipes a lookup that succeeds, fails or panics, as told.
struct Looker {
    out: ActorRef<Result<u64, LookupError>>,
}

enum LookerMsg {
    Lookup(u64),
    Found(Result<u64, LookupError>),
}

impl Actor for Looker {
    type Msg = LookerMsg;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: LookerMsg) {
        match msg {
            LookerMsg::Lookup(n) => ctx.pipe_to_self_result(
                async move {
                    match n {
                        0 => Err(LookupError::Missing),
                        1 => panic!("pipe-test: the lookup broke"),
                        n => Ok(n + 1),
                    }
                },
                LookerMsg::Found,
            ),
            LookerMsg::Found(result) => self.out.tell(result),
        }
    }
}

#[test]
fn pipe_to_self_result_folds_a_panic_into_the_futures_own_error() {
    quiet_panics(&["pipe-test: the lookup broke"]);
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let results = TestProbe::new(&system, "lookups");
    let out = results.actor_ref();
    let looker = system
        .spawn(Props::new(move || Looker { out: out.clone() }))
        .unwrap();
    looker.tell(LookerMsg::Lookup(41));
    results.expect_msg_eq(Ok(42), PATIENCE);
    looker.tell(LookerMsg::Lookup(0));
    results.expect_msg_eq(Err(LookupError::Missing), PATIENCE);
    looker.tell(LookerMsg::Lookup(1));
    results.expect_msg_eq(
        Err(LookupError::Panicked("pipe-test: the lookup broke".into())),
        PATIENCE,
    );
    terminate(&system, PATIENCE);
}

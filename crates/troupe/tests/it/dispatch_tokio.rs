//! The tokio dispatcher (feature `tokio`): actors run as tasks on the
//! runtime the system was given, on its threads; messages keep their order
//! across many turns; a blocking `Ask::wait` inside a handler is refused as
//! on the pool; the system terminates while the runtime lives on.

use std::time::Duration;

use crate::support::PATIENCE;
use troupe::{Actor, ActorRef, ActorSystem, AskError, Context, Props, ReplyTo};
use troupe_testkit::{terminate, TestProbe};

enum Msg {
    /// Report the name of the thread handling this message.
    Where(ReplyTo<String>),
    /// A numbered message, reported in arrival order.
    Count(u32, ActorRef<u32>),
    /// Try to block on an ask to itself, and report how that went.
    BlockOnSelf(ActorRef<Result<(), AskError>>),
    Ping(ReplyTo<()>),
}

struct Worker;

impl Actor for Worker {
    type Msg = Msg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Where(reply) => {
                let name = std::thread::current().name().unwrap_or("").to_string();
                reply.reply(name);
            }
            Msg::Count(n, out) => out.tell(n),
            Msg::BlockOnSelf(out) => {
                let answer = ctx.myself().ask(Msg::Ping, Duration::from_millis(1)).wait();
                out.tell(answer);
            }
            Msg::Ping(reply) => {
                reply.reply(());
            }
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("test-rt")
        .enable_all()
        .build()
        .unwrap()
}

fn system_on(runtime: &tokio::runtime::Runtime) -> ActorSystem {
    ActorSystem::builder()
        .name("tokio-dispatch")
        .tokio_dispatcher("default", runtime.handle().clone(), 5)
        .build()
        .unwrap()
}

#[test]
fn actors_run_on_the_runtime_threads_and_answer_async_asks() {
    let rt = runtime();
    let system = system_on(&rt);
    let worker = system.spawn(Props::new(|| Worker)).unwrap();
    let name = rt
        .block_on(async {
            tokio::spawn(async move { worker.ask(Msg::Where, PATIENCE).await })
                .await
                .unwrap()
        })
        .unwrap();
    assert_eq!(name, "test-rt");
    terminate(&system, PATIENCE);
}

#[test]
fn messages_keep_their_order_over_many_turns() {
    let rt = runtime();
    let system = system_on(&rt);
    let worker = system.spawn(Props::new(|| Worker)).unwrap();
    let seen = TestProbe::new(&system, "counts");
    // Throughput 5: a thousand messages take two hundred turns, each a
    // task of its own, rescheduled behind the others.
    for n in 0..1000 {
        worker.tell(Msg::Count(n, seen.actor_ref()));
    }
    assert_eq!(
        seen.receive_n(1000, PATIENCE),
        (0..1000).collect::<Vec<_>>()
    );
    terminate(&system, PATIENCE);
}

#[test]
fn a_blocking_wait_inside_a_handler_is_refused() {
    let rt = runtime();
    let system = system_on(&rt);
    let worker = system.spawn(Props::new(|| Worker)).unwrap();
    let result = TestProbe::new(&system, "wait");
    worker.tell(Msg::BlockOnSelf(result.actor_ref()));
    result.expect_msg_eq(Err(AskError::WouldBlockDispatcher), PATIENCE);
    terminate(&system, PATIENCE);
    // The runtime outlived the system, as it must; it is still usable.
    assert_eq!(rt.block_on(async { 7 }), 7);
}

//! A small end-to-end run of the runtime that is cheap enough for Miri:
//! it drives the unsafe code outside the mailbox (the cell's run state and
//! its borrowed `Arc`, the non-owning dispatcher tasks, the worker's
//! thread-local pointer, the pinned hand-over) through ping-pong, ask,
//! restart, stop with queued messages, death watch and shutdown; and an
//! async actor's host (its actor behind a raw pointer, the poll's frame in
//! a thread-local slot) through awaits, a stop, a restart and a resume.
//! `.ci/run` runs it under Miri; it also runs as an ordinary test.

use std::sync::mpsc;
use std::time::Duration;

use troupe::prelude::*;
use troupe::{AsyncActor, AsyncContext, Signal};

const TIMEOUT: Duration = Duration::from_secs(60);

enum Msg {
    Ping(u32, ActorRef<Msg>),
    Pong(u32),
    Fail,
    Get(ReplyTo<u32>),
    Watch(ActorRef<Msg>),
}

struct Player {
    count: u32,
    report: mpsc::Sender<String>,
}

impl Actor for Player {
    type Msg = Msg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Ping(n, from) => from.tell(Msg::Pong(n)),
            Msg::Pong(n) => {
                self.count += 1;
                if n == 0 {
                    let _ = self.report.send(format!("done {}", self.count));
                }
            }
            Msg::Fail => panic!("planned failure"),
            Msg::Get(reply) => {
                reply.reply(self.count);
            }
            Msg::Watch(other) => ctx.watch(&other),
        }
    }

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            let _ = self.report.send(format!("terminated {}", id.as_u64()));
        }
    }
}

#[test]
fn the_runtime_end_to_end_in_miniature() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let props = |dispatcher: &str| {
        let tx = tx.clone();
        Props::new(move || Player {
            count: 0,
            report: tx.clone(),
        })
        .dispatcher(dispatcher)
    };
    let a = system.spawn(props("default")).unwrap();
    let b = system.spawn(props("pinned")).unwrap();

    // Ping-pong between a pool actor and a pinned one.
    for n in (0..10).rev() {
        b.tell(Msg::Ping(n, a.clone()));
    }
    assert_eq!(rx.recv_timeout(TIMEOUT).unwrap(), "done 10");
    assert_eq!(a.ask(Msg::Get, TIMEOUT).wait().unwrap(), 10);

    // A restart builds a new instance; the mailbox is kept.
    a.tell(Msg::Fail);
    a.tell(Msg::Pong(5));
    assert_eq!(a.ask(Msg::Get, TIMEOUT).wait().unwrap(), 1);

    // Death watch and a stop with messages left to dead letters.
    a.tell(Msg::Watch(b.clone()));
    assert_eq!(a.ask(Msg::Get, TIMEOUT).wait().unwrap(), 1);
    system.stop(&b);
    assert_eq!(
        rx.recv_timeout(TIMEOUT).unwrap(),
        format!("terminated {}", b.id().as_u64())
    );
    // The stopped actor's last run may still be finishing: the dead letter
    // is recorded by whoever drains the closed mailbox, so wait for it.
    let (dead_tx, dead_rx) = mpsc::channel();
    let dead_tx = std::sync::Mutex::new(dead_tx);
    system.on_dead_letter(move |letter| {
        let _ = dead_tx.lock().unwrap().send(letter.recipient);
    });
    b.tell(Msg::Pong(1));
    assert_eq!(dead_rx.recv_timeout(TIMEOUT).unwrap(), b.id());
    assert!(matches!(
        b.ask(Msg::Get, TIMEOUT).wait(),
        Err(AskError::NoReply { .. })
    ));

    system.shutdown();
    system.await_termination_timeout(TIMEOUT).unwrap();
}

/// The async actor's host (`actor/asynchronous/host.rs`): its actor behind
/// a raw pointer shared by the host and the driver future, and the frame a
/// poll publishes in a thread-local slot. A handler that awaits a gate
/// opened from another thread, a stop while one awaits, a panic after an
/// await (restart, then resume), and the context used across an await.
enum AsyncMsg {
    Wait(mpsc::Receiver<()>, ReplyTo<u32>),
    Gate(tokio_oneshot::Receiver<()>, ReplyTo<u32>),
    PanicAfter(tokio_oneshot::Receiver<()>),
    Count(ReplyTo<u32>),
}

use tokio::sync::oneshot as tokio_oneshot;

struct Waiter {
    count: u32,
    report: mpsc::Sender<String>,
}

impl AsyncActor for Waiter {
    type Msg = AsyncMsg;

    fn started(&mut self, _ctx: &mut AsyncContext<Self>) {
        let _ = self.report.send("started".into());
    }

    async fn receive(&mut self, ctx: &mut AsyncContext<Self>, msg: AsyncMsg) {
        match msg {
            // A channel that is already full: the handler never suspends.
            AsyncMsg::Wait(rx, reply) => {
                rx.recv().unwrap();
                self.count += 1;
                reply.reply(self.count);
            }
            AsyncMsg::Gate(gate, reply) => {
                let me = ctx.myself();
                let _ = gate.await;
                // The context across the await: the frame of this poll.
                ctx.watch(&me);
                self.count += 1;
                reply.reply(self.count);
            }
            AsyncMsg::PanicAfter(gate) => {
                let _ = gate.await;
                panic!("planned async failure");
            }
            AsyncMsg::Count(reply) => {
                reply.reply(self.count);
            }
        }
    }
}

#[test]
fn an_async_actor_end_to_end_in_miniature() {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let props = |strategy: SupervisorStrategy| {
        let tx = tx.clone();
        Props::new_async(move || Waiter {
            count: 0,
            report: tx.clone(),
        })
        .supervisor(strategy)
    };
    let a = system.spawn(props(SupervisorStrategy::restart())).unwrap();
    assert_eq!(rx.recv_timeout(TIMEOUT).unwrap(), "started");

    let (ready, ready_rx) = mpsc::channel();
    ready.send(()).unwrap();
    assert_eq!(
        a.ask(|r| AsyncMsg::Wait(ready_rx, r), TIMEOUT)
            .wait()
            .unwrap(),
        1
    );
    // Woken from another thread.
    let (open, gate) = tokio_oneshot::channel();
    let answer = a.ask(|r| AsyncMsg::Gate(gate, r), TIMEOUT);
    let opener = std::thread::spawn(move || open.send(()).unwrap());
    assert_eq!(answer.wait().unwrap(), 2);
    opener.join().unwrap();

    // A panic after an await restarts the actor.
    let (open, gate) = tokio_oneshot::channel();
    a.tell(AsyncMsg::PanicAfter(gate));
    open.send(()).unwrap();
    assert_eq!(rx.recv_timeout(TIMEOUT).unwrap(), "started");
    assert_eq!(a.ask(AsyncMsg::Count, TIMEOUT).wait().unwrap(), 0);

    // Resumed, the same instance goes on with a fresh driver.
    let b = system.spawn(props(SupervisorStrategy::resume())).unwrap();
    assert_eq!(rx.recv_timeout(TIMEOUT).unwrap(), "started");
    let (open, gate) = tokio_oneshot::channel();
    b.tell(AsyncMsg::PanicAfter(gate));
    open.send(()).unwrap();
    let (ready, ready_rx) = mpsc::channel();
    ready.send(()).unwrap();
    assert_eq!(
        b.ask(|r| AsyncMsg::Wait(ready_rx, r), TIMEOUT)
            .wait()
            .unwrap(),
        1
    );

    // A stop while a handler awaits drops its future and its reply.
    let (_open, gate) = tokio_oneshot::channel();
    let pending = a.ask(|r| AsyncMsg::Gate(gate, r), TIMEOUT);
    system.stop(&a);
    assert!(matches!(pending.wait(), Err(AskError::NoReply { .. })));

    system.shutdown();
    system.await_termination_timeout(TIMEOUT).unwrap();
}

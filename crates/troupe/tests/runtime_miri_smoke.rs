//! A small end-to-end run of the runtime that is cheap enough for Miri:
//! it drives the unsafe code outside the mailbox (the cell's run state and
//! its borrowed `Arc`, the non-owning dispatcher tasks, the worker's
//! thread-local pointer, the pinned hand-over) through ping-pong, ask,
//! restart, stop with queued messages, death watch and shutdown.
//! `.ci/run` runs it under Miri; it also runs as an ordinary test.

use std::sync::mpsc;
use std::time::Duration;

use troupe::prelude::*;
use troupe::Signal;

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

//! The async ping-pong rows: the game of [`super::actor_pair`] played by two
//! `AsyncActor`s, whose `receive` is an `async fn`, to price what an async
//! handler costs against the synchronous rows of the same setting
//! (`async-<mode>-tp5-w<workers>` against `actor-tp5-w<workers>`).
//!
//! Three modes, one per row family:
//! - `never`: the handler awaits nothing (an async body that never
//!   suspends): one poll of the actor's driver per message on top of the
//!   synchronous path.
//! - `ready`: the handler awaits a future that is ready when first polled
//!   (`std::future::ready`, through `black_box` so it is not folded away).
//! - `yield`: the handler suspends once per message (a future that wakes
//!   itself and returns `Pending` once), so every message costs a wake, a
//!   system message and a second run of the cell.
//!
//! Each actor checks the sequence numbers, as in the synchronous rows.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use troupe::prelude::*;

use crate::experiments::pingpong::hops;
use crate::runner::{expect_eq, Stopwatch, Workload, WorkloadError};
use crate::shared::SystemGuard;

/// What a handler awaits (see the module header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Nothing.
    Never,
    /// A future that is ready at once.
    Ready,
    /// A future that suspends once.
    Yield,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Never => "never",
            Mode::Ready => "ready",
            Mode::Yield => "yield",
        }
    }
}

/// Starts a game of `n` round trips against `peer`.
struct Serve {
    peer: ActorRef<Msg>,
    n: u64,
    done: mpsc::Sender<u64>,
}

enum Msg {
    Serve(Box<Serve>),
    Hello(ActorRef<Msg>),
    Ping(u64),
    Pong(u64),
}

struct Player {
    mode: Mode,
    peer: Option<ActorRef<Msg>>,
    target: u64,
    received: u64,
    done: Option<mpsc::Sender<u64>>,
    fault: Option<String>,
}

/// Wakes itself and returns `Pending` once, then `Ready`.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

impl Player {
    fn new(mode: Mode) -> Self {
        Player {
            mode,
            peer: None,
            target: 0,
            received: 0,
            done: None,
            fault: None,
        }
    }

    async fn pause(&self) {
        match self.mode {
            Mode::Never => {}
            Mode::Ready => std::hint::black_box(std::future::ready(())).await,
            Mode::Yield => YieldOnce(false).await,
        }
    }
}

impl AsyncActor for Player {
    type Msg = Msg;

    async fn receive(&mut self, ctx: &mut AsyncContext<Self>, msg: Msg) {
        match msg {
            Msg::Serve(serve) => {
                let Serve { peer, n, done } = *serve;
                self.target = n;
                self.received = 0;
                self.done = Some(done);
                peer.tell(Msg::Hello(ctx.myself()));
                peer.tell(Msg::Ping(1));
                self.peer = Some(peer);
            }
            Msg::Hello(pinger) => {
                self.received = 0;
                self.peer = Some(pinger);
            }
            Msg::Ping(i) => {
                self.pause().await;
                self.received += 1;
                if i != self.received && self.fault.is_none() {
                    self.fault = Some(format!("ping {i} arrived as number {}", self.received));
                }
                self.peer.as_ref().expect("said hello").tell(Msg::Pong(i));
            }
            Msg::Pong(i) => {
                self.pause().await;
                self.received += 1;
                if i != self.received {
                    self.fault = Some(format!("pong {i} arrived as number {}", self.received));
                }
                if i < self.target && self.fault.is_none() {
                    self.peer.as_ref().expect("served").tell(Msg::Ping(i + 1));
                } else if let Some(done) = self.done.take() {
                    let _ = done.send(if self.fault.is_some() {
                        0
                    } else {
                        self.received
                    });
                }
            }
        }
    }
}

/// The async ping-pong row of `mode` on `workers` pool threads at
/// throughput 5 (the default, as the Rust peers' rows are compared at).
pub fn workload(mode: Mode, workers: usize, repetitions: u64) -> Workload {
    let throughput = 5;
    let variant = format!("async-{}-tp{throughput}-w{workers}", mode.name());
    Workload::with_setup(variant, move || {
        let system = ActorSystem::builder()
            .name("pingpong")
            .threads(workers)
            .throughput(throughput)
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let spawn = || {
            system
                .spawn(Props::new_async(move || Player::new(mode)))
                .map_err(|e| WorkloadError::new(e.to_string()))
        };
        let (pinger, ponger) = (spawn()?, spawn()?);
        let guard = SystemGuard(system);
        Ok(move || {
            let _keep = &guard;
            let expected = hops(repetitions)?;
            let (tx, rx) = mpsc::channel();
            let clock = Stopwatch::start();
            pinger.tell(Msg::Serve(Box::new(Serve {
                peer: ponger.clone(),
                n: repetitions,
                done: tx,
            })));
            let pongs = rx
                .recv_timeout(Duration::from_secs(600))
                .map_err(|_| WorkloadError::new("the game did not finish within 600 s"))?;
            let sample = clock.stop(expected);
            expect_eq("pongs received in order", repetitions, pongs)?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("workers", workers)
    .param("throughput", throughput)
    .param("pinned", false)
    .param("handler", "async")
    .param("awaits", mode.name())
    .param("repetitions", repetitions)
}

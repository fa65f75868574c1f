//! The micro-benchmarks' rows that have a peer twin in the Rust libraries:
//!
//! - `ask-actor`: an asker actor asks an echo actor N times in a row, each
//!   ask sent when the previous answer arrived (`ActorRef::ask` and
//!   `Ask::on_answer`, whose callback tells the asker the answer);
//!   `ns_per_msg` is the mean round trip.
//! - `spawn-stop`: spawns N idle actors, waits until every one has run its
//!   `started` hook, stops them all (`ActorSystem::stop`) and waits until
//!   every one has run its `stopped` hook; `ns_per_msg` is the whole
//!   cycle's time per actor. The memory of an idle actor is the `spawn`
//!   row's (a fresh process per run).

use std::sync::{mpsc, Arc};
use std::time::Duration;

use troupe::prelude::*;
use troupe::AskError;

use super::{Echo, EchoActor};
use crate::runner::{expect_eq, Stopwatch, Workload, WorkloadError};
use crate::shared::{Countdown, SystemGuard};

/// The longest a run may take.
const DEADLINE: Duration = crate::shared::DEADLINE;

enum AskerMsg {
    /// Ask the echo `n` times in a row; send the wrong answers to `done`.
    Run(u64, mpsc::Sender<Result<u64, AskError>>),
    /// The answer to question `i`.
    Answer(u64, Result<u64, AskError>),
}

struct Asker {
    echo: ActorRef<Echo>,
    n: u64,
    wrong: u64,
    done: Option<mpsc::Sender<Result<u64, AskError>>>,
}

impl Asker {
    fn ask(&self, ctx: &mut Context<'_, Self>, i: u64) {
        let me = ctx.myself();
        self.echo
            .ask(|r| Echo::Ask(i, r), Duration::from_secs(10))
            .on_answer(move |answer| me.tell(AskerMsg::Answer(i, answer)));
    }
}

impl Actor for Asker {
    type Msg = AskerMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: AskerMsg) {
        match msg {
            AskerMsg::Run(n, done) => {
                (self.n, self.wrong, self.done) = (n, 0, Some(done));
                self.ask(ctx, 0);
            }
            AskerMsg::Answer(i, Ok(answer)) => {
                self.wrong += u64::from(answer != i);
                if i + 1 < self.n {
                    self.ask(ctx, i + 1);
                } else if let Some(done) = self.done.take() {
                    let _ = done.send(Ok(self.wrong));
                }
            }
            AskerMsg::Answer(_, Err(e)) => {
                if let Some(done) = self.done.take() {
                    let _ = done.send(Err(e));
                }
            }
        }
    }
}

/// The `ask-actor` row: `asks` asks per run on a system of `workers`.
pub fn ask_actor_workload(asks: u64, workers: usize) -> Workload {
    Workload::with_setup("ask-actor", move || {
        let system = ActorSystem::builder()
            .name("ask-actor")
            .threads(workers)
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let spawn = |e| WorkloadError::new(format!("cannot spawn: {e}"));
        let echo = system.spawn(Props::new(|| EchoActor)).map_err(spawn)?;
        let asker = system
            .spawn(Props::new(move || Asker {
                echo: echo.clone(),
                n: 0,
                wrong: 0,
                done: None,
            }))
            .map_err(spawn)?;
        let guard = SystemGuard(system);
        Ok(move || {
            let _keep = &guard;
            let (tx, rx) = mpsc::channel();
            let clock = Stopwatch::start();
            asker.tell(AskerMsg::Run(asks, tx));
            let wrong = rx
                .recv_timeout(DEADLINE)
                .map_err(|_| WorkloadError::new("the asks did not finish within 600 s"))?
                .map_err(|e| WorkloadError::new(format!("an ask failed: {e}")))?;
            let sample = clock.stop(asks);
            expect_eq("answers that did not echo their question", 0, wrong)?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("asks", asks)
    .param("workers", workers)
}

/// An idle actor that counts its start and its stop.
struct Cycled {
    started: Arc<Countdown>,
    stopped: Arc<Countdown>,
}

impl Actor for Cycled {
    type Msg = ();

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.started.count_down();
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.stopped.count_down();
    }
}

/// The `spawn-stop` row: `actors` actors per run on a system of `workers`.
pub fn spawn_stop_workload(actors: usize, workers: usize) -> Workload {
    Workload::with_setup("spawn-stop", move || {
        let system = ActorSystem::builder()
            .name("spawn-stop")
            .threads(workers)
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let guard = SystemGuard(system);
        let (started, stopped) = (Arc::new(Countdown::new()), Arc::new(Countdown::new()));
        let (s, t) = (started.clone(), stopped.clone());
        let props = Props::new(move || Cycled {
            started: s.clone(),
            stopped: t.clone(),
        });
        Ok(move || {
            started.arm(actors);
            stopped.arm(actors);
            let mut refs = Vec::with_capacity(actors);
            let clock = Stopwatch::start();
            for _ in 0..actors {
                refs.push(
                    guard
                        .0
                        .spawn(props.clone())
                        .map_err(|e| WorkloadError::new(format!("cannot spawn: {e}")))?,
                );
            }
            started.wait("the actors' start")?;
            for r in &refs {
                guard.0.stop(r);
            }
            // Each countdown reached zero: every actor started and stopped.
            stopped.wait("the actors' stop")?;
            Ok(clock.stop(actors as u64))
        })
    })
    .param("runtime", "troupe")
    .param("actors", actors)
    .param("workers", workers)
}

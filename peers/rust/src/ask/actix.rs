//! Asks on actix: `send(..)` waited for with a plain executor
//! (`futures::executor::block_on`) from a plain thread, and between actors
//! `send(..)` turned into an actor future (`into_actor`) that the asker
//! spawns in its context, the next ask sent from its continuation. On two
//! Arbiters the asker and the echo run on different ones.

use std::time::Instant;

use ::actix::prelude::*;
use tokio::sync::oneshot;

use super::Asks;
use crate::actix_system::Arbiters;

struct Echo;

impl Actor for Echo {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "u64")]
struct Question(u64);

impl Handler<Question> for Echo {
    type Result = u64;

    fn handle(&mut self, Question(n): Question, _: &mut Context<Self>) -> u64 {
        n
    }
}

struct Asker {
    echo: Addr<Echo>,
    n: u64,
    wrong: u64,
    failure: Option<String>,
    done: Option<oneshot::Sender<Result<u64, String>>>,
}

impl Actor for Asker {
    type Context = Context<Self>;
}

/// Ask the echo `n` times in a row; the answer is the wrong answers.
#[derive(Message)]
#[rtype(result = "()")]
struct Run(u64, oneshot::Sender<Result<u64, String>>);

impl Handler<Run> for Asker {
    type Result = ();

    fn handle(&mut self, Run(n, done): Run, ctx: &mut Context<Self>) {
        self.n = n;
        self.wrong = 0;
        self.done = Some(done);
        ctx.notify(Next(0));
    }
}

/// Ask question `i`.
#[derive(Message)]
#[rtype(result = "()")]
struct Next(u64);

impl Handler<Next> for Asker {
    type Result = ();

    fn handle(&mut self, Next(i): Next, ctx: &mut Context<Self>) {
        if i == self.n {
            if let Some(done) = self.done.take() {
                let _ = done.send(match self.failure.take() {
                    None => Ok(self.wrong),
                    Some(why) => Err(why),
                });
            }
            return;
        }
        ctx.spawn(
            self.echo
                .send(Question(i))
                .into_actor(self)
                .map(move |answer, act, ctx| {
                    match answer {
                        Ok(a) => act.wrong += u64::from(a != i),
                        Err(e) => {
                            act.failure.get_or_insert(e.to_string());
                        }
                    }
                    ctx.notify(Next(i + 1));
                }),
        );
    }
}

/// The echo and the asker on a System's Arbiters.
pub struct Runner {
    arbiters: Arbiters,
    echo: Addr<Echo>,
    asker: Addr<Asker>,
}

impl Runner {
    /// The actors on `threads` Arbiters.
    pub fn new(threads: usize) -> Runner {
        let arbiters = Arbiters::new(threads);
        let echo = Echo::start_in_arbiter(&arbiters.handle(1), |_| Echo);
        let to = echo.clone();
        let asker = Asker::start_in_arbiter(&arbiters.handle(0), move |_| Asker {
            echo: to,
            n: 0,
            wrong: 0,
            failure: None,
            done: None,
        });
        Runner {
            arbiters,
            echo,
            asker,
        }
    }
}

impl Asks for Runner {
    fn ask_from_thread(&mut self, asks: u64) -> Result<(Vec<f64>, u64), String> {
        let echo = self.echo.clone();
        std::thread::spawn(move || {
            let mut lat = Vec::with_capacity(asks as usize);
            let mut wrong = 0;
            for i in 0..asks {
                let t0 = Instant::now();
                let answer = futures::executor::block_on(echo.send(Question(i)))
                    .map_err(|e| e.to_string())?;
                lat.push(t0.elapsed().as_nanos() as f64);
                wrong += u64::from(answer != i);
            }
            Ok((lat, wrong))
        })
        .join()
        .map_err(|_| "the asking thread panicked".to_string())?
    }

    fn between_actors(&mut self, asks: u64) -> Result<(f64, u64), String> {
        let asker = self.asker.clone();
        self.arbiters.block_on(async move {
            let (done, wrong) = oneshot::channel();
            let t0 = Instant::now();
            asker.do_send(Run(asks, done));
            let wrong = wrong.await.map_err(|_| "the asker stopped".to_string())??;
            Ok((t0.elapsed().as_nanos() as f64, wrong))
        })
    }
}

//! Asks on kameo: `ask(..).blocking_send()` from a plain thread, and
//! `ask(..).await` in an asker actor's handler.

use std::time::Instant;

use ::kameo::prelude::*;

use super::Asks;
use crate::harness::tokio_runtime;

#[derive(Actor)]
struct Echo;

struct Question(u64);

impl Message<Question> for Echo {
    type Reply = u64;

    async fn handle(&mut self, Question(n): Question, _: &mut Context<Self, u64>) -> u64 {
        n
    }
}

#[derive(Actor)]
struct Asker {
    echo: ActorRef<Echo>,
}

/// Ask the echo `n` times in a row; the reply is the wrong answers.
struct Run(u64);

impl Message<Run> for Asker {
    type Reply = Result<u64, SendError<Question>>;

    async fn handle(&mut self, Run(n): Run, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let mut wrong = 0;
        for i in 0..n {
            if self.echo.ask(Question(i)).await? != i {
                wrong += 1;
            }
        }
        Ok(wrong)
    }
}

/// The echo and the asker on a tokio runtime.
pub struct Runner {
    rt: tokio::runtime::Runtime,
    echo: ActorRef<Echo>,
    asker: ActorRef<Asker>,
}

impl Runner {
    /// The actors on `threads` threads.
    pub fn new(threads: usize) -> Result<Runner, String> {
        let rt = tokio_runtime(threads)?;
        let (echo, asker) = rt.block_on(async {
            let echo = Echo::spawn(Echo);
            let asker = Asker::spawn(Asker { echo: echo.clone() });
            (echo, asker)
        });
        Ok(Runner { rt, echo, asker })
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
                let answer = echo
                    .ask(Question(i))
                    .blocking_send()
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
        self.rt.block_on(async {
            let t0 = Instant::now();
            let wrong = self.asker.ask(Run(asks)).await.map_err(|e| e.to_string())?;
            Ok((t0.elapsed().as_nanos() as f64, wrong))
        })
    }
}

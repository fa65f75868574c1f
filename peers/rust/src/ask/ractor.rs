//! Asks on ractor: `call!` from a plain thread through the runtime's handle
//! (`Handle::block_on`, the way to wait for async code outside the
//! runtime), and `call!` awaited in an asker actor's handler.

use std::time::Instant;

use ::ractor::{call, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::Asks;
use crate::harness::tokio_runtime;

struct Echo;

enum Question {
    Echo(u64, RpcReplyPort<u64>),
}

impl Actor for Echo {
    type Msg = Question;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Question>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Question>,
        Question::Echo(n, reply): Question,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        reply.send(n)?;
        Ok(())
    }
}

struct Asker;

/// Ask the echo `n` times in a row; the reply is the wrong answers.
enum Run {
    Asks(u64, RpcReplyPort<u64>),
}

impl Actor for Asker {
    type Msg = Run;
    type State = ActorRef<Question>;
    type Arguments = ActorRef<Question>;

    async fn pre_start(
        &self,
        _: ActorRef<Run>,
        echo: ActorRef<Question>,
    ) -> Result<ActorRef<Question>, ActorProcessingErr> {
        Ok(echo)
    }

    async fn handle(
        &self,
        _: ActorRef<Run>,
        Run::Asks(n, reply): Run,
        echo: &mut ActorRef<Question>,
    ) -> Result<(), ActorProcessingErr> {
        let mut wrong = 0;
        for i in 0..n {
            if call!(echo, Question::Echo, i)? != i {
                wrong += 1;
            }
        }
        reply.send(wrong)?;
        Ok(())
    }
}

/// The echo and the asker on a tokio runtime.
pub struct Runner {
    rt: tokio::runtime::Runtime,
    echo: ActorRef<Question>,
    asker: ActorRef<Run>,
}

impl Runner {
    /// The actors on `threads` threads.
    pub fn new(threads: usize) -> Result<Runner, String> {
        let rt = tokio_runtime(threads)?;
        let (echo, asker) = rt.block_on(async {
            let (echo, _) = Actor::spawn(None, Echo, ())
                .await
                .map_err(|e| e.to_string())?;
            let (asker, _) = Actor::spawn(None, Asker, echo.clone())
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((echo, asker))
        })?;
        Ok(Runner { rt, echo, asker })
    }
}

impl Asks for Runner {
    fn ask_from_thread(&mut self, asks: u64) -> Result<(Vec<f64>, u64), String> {
        let (echo, handle) = (self.echo.clone(), self.rt.handle().clone());
        std::thread::spawn(move || {
            let mut lat = Vec::with_capacity(asks as usize);
            let mut wrong = 0;
            for i in 0..asks {
                let t0 = Instant::now();
                let answer = handle
                    .block_on(async { call!(echo, Question::Echo, i) })
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
            let wrong = call!(self.asker, Run::Asks, asks).map_err(|e| e.to_string())?;
            Ok((t0.elapsed().as_nanos() as f64, wrong))
        })
    }
}

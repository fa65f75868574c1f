//! Fan-in and fan-out on ractor: producers that `cast` in a loop from their
//! handler (ractor's mailboxes are unbounded), receivers that count, and
//! the counts read with `call!`.

use std::sync::Arc;
use std::time::Instant;

use ::ractor::{call, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::{Counts, Fans, Sequence, PRODUCERS, WORKERS};
use crate::harness::{tokio_runtime, Latch};

struct Receiver;

struct ReceiverState {
    seq: Sequence,
    expected: u64,
    done: Arc<Latch>,
}

enum ReceiverMsg {
    /// Message `seq` of producer `from`.
    Item {
        from: usize,
        seq: u64,
    },
    Counts(RpcReplyPort<Counts>),
}

impl Actor for Receiver {
    type Msg = ReceiverMsg;
    type State = ReceiverState;
    type Arguments = ReceiverState;

    async fn pre_start(
        &self,
        _: ActorRef<ReceiverMsg>,
        state: ReceiverState,
    ) -> Result<ReceiverState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<ReceiverMsg>,
        msg: ReceiverMsg,
        s: &mut ReceiverState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ReceiverMsg::Item { from, seq } => {
                s.seq.arrived(from, seq);
                if s.seq.counts().received == s.expected {
                    s.done.count_down();
                }
            }
            ReceiverMsg::Counts(reply) => reply.send(s.seq.counts())?,
        }
        Ok(())
    }
}

struct Producer;

/// Send `n` messages round-robin to `to`.
struct Produce {
    to: Vec<ActorRef<ReceiverMsg>>,
    n: u64,
}

impl Actor for Producer {
    type Msg = Produce;
    type State = usize;
    type Arguments = usize;

    async fn pre_start(
        &self,
        _: ActorRef<Produce>,
        id: usize,
    ) -> Result<usize, ActorProcessingErr> {
        Ok(id)
    }

    async fn handle(
        &self,
        _: ActorRef<Produce>,
        Produce { to, n }: Produce,
        id: &mut usize,
    ) -> Result<(), ActorProcessingErr> {
        for seq in 0..n {
            let r = &to[(seq % to.len() as u64) as usize];
            r.cast(ReceiverMsg::Item {
                from: *id,
                seq: seq / to.len() as u64,
            })?;
        }
        Ok(())
    }
}

/// Runs with `producers` producers, `receivers` receivers and `n` messages
/// per producer; every receiver expects `expected`.
async fn fan(
    producers: usize,
    receivers: usize,
    n: u64,
    expected: u64,
) -> Result<(f64, Counts), String> {
    let done = Arc::new(Latch::new(receivers));
    let mut to = Vec::with_capacity(receivers);
    let mut handles = Vec::new();
    for _ in 0..receivers {
        let state = ReceiverState {
            seq: Sequence::new(producers),
            expected,
            done: done.clone(),
        };
        let (r, h) = Actor::spawn(None, Receiver, state)
            .await
            .map_err(|e| e.to_string())?;
        to.push(r);
        handles.push(h);
    }
    let mut from = Vec::with_capacity(producers);
    for id in 0..producers {
        let (p, h) = Actor::spawn(None, Producer, id)
            .await
            .map_err(|e| e.to_string())?;
        from.push(p);
        handles.push(h);
    }
    let t0 = Instant::now();
    for p in &from {
        p.cast(Produce { to: to.clone(), n })
            .map_err(|e| e.to_string())?;
    }
    done.wait("the fan").await?;
    let ns = t0.elapsed().as_nanos() as f64;
    let mut total = Counts::default();
    for r in &to {
        let c = call!(r, ReceiverMsg::Counts).map_err(|e| e.to_string())?;
        total.received += c.received;
        total.disorder += c.disorder;
        r.stop(None);
    }
    for p in &from {
        p.stop(None);
    }
    for h in handles {
        h.await.map_err(|e| e.to_string())?;
    }
    Ok((ns, total))
}

/// Runs on a tokio runtime.
pub struct Runner {
    rt: tokio::runtime::Runtime,
}

impl Runner {
    /// A runner on `threads` threads.
    pub fn new(threads: usize) -> Result<Runner, String> {
        Ok(Runner {
            rt: tokio_runtime(threads)?,
        })
    }
}

impl Fans for Runner {
    fn fan_in(&mut self, per_producer: u64) -> Result<(f64, Counts), String> {
        self.rt.block_on(fan(
            PRODUCERS,
            1,
            per_producer,
            per_producer * PRODUCERS as u64,
        ))
    }

    fn fan_out(&mut self, per_worker: u64) -> Result<(f64, Counts), String> {
        self.rt
            .block_on(fan(1, WORKERS, per_worker * WORKERS as u64, per_worker))
    }
}

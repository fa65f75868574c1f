//! Order receivers and clients.
//!
//! A receiver is stateless: it looks up the primary engine that owns the
//! order's book and forwards the order with its completion.
//!
//! A client is an actor that places the scenario's orders one at a time:
//! it sends an order, and only when told the order is complete does it
//! record the latency and send the next. No thread ever blocks waiting for
//! a reply; the client simply has nothing to do until the reply comes.

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use hdrhistogram::Histogram;
use troupe::{Actor, ActorRef, Context};

use crate::messages::{ClientMsg, Completion, EngineMsg, ReceiverMsg, Token};
use crate::topology::{self, engine_of};

/// A stateless order receiver.
pub struct Receiver {
    /// Primary engine by engine index.
    pub primaries: Arc<[ActorRef<EngineMsg>]>,
}

impl Actor for Receiver {
    type Msg = ReceiverMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ReceiverMsg) {
        self.primaries[engine_of(msg.order.book)].tell(EngineMsg::Order {
            order: msg.order,
            completion: msg.completion,
        });
    }
}

/// How clients are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The primary replies (request-reply).
    Reply,
    /// Both engines complete a token (one-way).
    Token,
}

/// A finished client's results.
#[derive(Debug)]
pub struct ClientReport {
    /// Latency of every order, send to completion, in nanoseconds.
    pub latency_ns: Histogram<u64>,
    /// When its last order completed.
    pub finished: Instant,
}

/// A scenario client.
pub struct Client {
    index: usize,
    receiver: ActorRef<ReceiverMsg>,
    answer: Answer,
    total: usize,
    sent: usize,
    sent_at: Instant,
    latency_ns: Option<Histogram<u64>>,
    token: Option<Arc<Token>>,
    report: Sender<ClientReport>,
}

impl Client {
    /// Client `index`, placing `total` orders through `receiver`, reporting
    /// to `report` when done.
    pub fn new(
        index: usize,
        receiver: ActorRef<ReceiverMsg>,
        answer: Answer,
        total: usize,
        report: Sender<ClientReport>,
    ) -> Self {
        Client {
            index,
            receiver,
            answer,
            total,
            sent: 0,
            sent_at: Instant::now(),
            latency_ns: Some(new_histogram()),
            token: None,
            report,
        }
    }

    fn send_next(&mut self, ctx: &mut Context<'_, Self>) {
        let order = topology::scenario_order(self.index, self.sent);
        self.sent += 1;
        let completion = match self.answer {
            Answer::Reply => Completion::Reply(ctx.myself()),
            Answer::Token => {
                let token = self
                    .token
                    .get_or_insert_with(|| Arc::new(Token::new(ctx.myself())));
                token.arm();
                Completion::Token(token.clone())
            }
        };
        self.sent_at = Instant::now();
        self.receiver.tell(ReceiverMsg { order, completion });
    }
}

/// A histogram for latencies from 1 ns to 1 minute, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

impl Actor for Client {
    type Msg = ClientMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        match msg {
            ClientMsg::Start => self.send_next(ctx),
            ClientMsg::Completed => {
                let now = Instant::now();
                let ns = now.duration_since(self.sent_at).as_nanos() as u64;
                if let Some(h) = self.latency_ns.as_mut() {
                    h.saturating_record(ns.max(1));
                }
                if self.sent < self.total {
                    self.send_next(ctx);
                } else if let Some(latency_ns) = self.latency_ns.take() {
                    // The receiving end may be gone if the run was abandoned;
                    // nothing else is waiting for this report then.
                    let _ = self.report.send(ClientReport {
                        latency_ns,
                        finished: now,
                    });
                    ctx.stop();
                }
            }
        }
    }
}

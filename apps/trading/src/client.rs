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
use crate::topology::{engine_of, Scenario};

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
    /// Latency of every completed order, send to completion, in nanoseconds.
    pub latency_ns: Histogram<u64>,
    /// Orders it was told had failed (not in the latencies).
    pub failed: u64,
    /// When it sent its first order.
    pub first_sent: Instant,
    /// When its last order completed.
    pub finished: Instant,
}

/// A scenario client.
pub struct Client {
    index: usize,
    receiver: ActorRef<ReceiverMsg>,
    answer: Answer,
    scenario: Scenario,
    sent: usize,
    failed: u64,
    first_sent: Option<Instant>,
    sent_at: Instant,
    latency_ns: Option<Histogram<u64>>,
    token: Option<Arc<Token>>,
    report: Sender<ClientReport>,
}

impl Client {
    /// Client `index`, placing its orders of `scenario` through `receiver`,
    /// reporting to `report` when done.
    pub fn new(
        index: usize,
        receiver: ActorRef<ReceiverMsg>,
        answer: Answer,
        scenario: Scenario,
        report: Sender<ClientReport>,
    ) -> Self {
        Client {
            index,
            receiver,
            answer,
            scenario,
            sent: 0,
            failed: 0,
            first_sent: None,
            sent_at: Instant::now(),
            latency_ns: Some(new_histogram()),
            token: None,
            report,
        }
    }

    fn send_next(&mut self, ctx: &mut Context<'_, Self>) {
        let order = self.scenario.order(self.index, self.sent);
        self.sent += 1;
        let completion = match self.answer {
            Answer::Reply => Completion::Reply(ctx.myself()),
            Answer::Token => {
                let token = self
                    .token
                    .get_or_insert_with(|| Arc::new(Token::new(ctx.myself())));
                Completion::Token(token.arm())
            }
        };
        self.sent_at = Instant::now();
        self.first_sent.get_or_insert(self.sent_at);
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
            ClientMsg::Completed | ClientMsg::Failed => {
                let now = Instant::now();
                if let ClientMsg::Failed = msg {
                    self.failed += 1;
                } else if let Some(h) = self.latency_ns.as_mut() {
                    let ns = now.duration_since(self.sent_at).as_nanos() as u64;
                    h.saturating_record(ns.max(1));
                }
                if self.sent < self.scenario.orders_per_client() {
                    self.send_next(ctx);
                } else if let Some(latency_ns) = self.latency_ns.take() {
                    // The receiving end may be gone if the run was abandoned;
                    // nothing else is waiting for this report then.
                    let _ = self.report.send(ClientReport {
                        latency_ns,
                        failed: self.failed,
                        first_sent: self.first_sent.unwrap_or(now),
                        finished: now,
                    });
                    ctx.stop();
                }
            }
        }
    }
}

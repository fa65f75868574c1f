//! Order receivers and clients.
//!
//! A receiver is stateless: it looks up the primary engine that owns the
//! order's book and forwards the order with its completion.
//!
//! A client is an actor that places the scenario's orders with up to a
//! window of them in flight (1: one at a time, the original's closed loop):
//! it sends orders until the window is full, and each time it is told an
//! order is complete it records that order's latency (from its send) and
//! sends the next. No thread ever blocks waiting for a reply; the client
//! simply has nothing to do until a reply comes.
//!
//! A client's orders reach the engines in the order it sent them, with any
//! window: one receiver forwards them, in order, to the primary of each
//! book, which forwards them, in order, to its standby.

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
    window: usize,
    sent: usize,
    failed: u64,
    first_sent: Option<Instant>,
    /// Orders sent and not yet ended: id, when it was sent, and the token
    /// slot it holds (one-way). A window is small and orders mostly end in
    /// the order they were sent: a search from the front beats hashing.
    in_flight: Vec<(u64, Instant, usize)>,
    latency_ns: Option<Histogram<u64>>,
    /// One-way: a token per slot of the window, made on first use, and the
    /// slots free to arm.
    tokens: Vec<Arc<Token>>,
    free: Vec<usize>,
    report: Sender<ClientReport>,
}

impl Client {
    /// Client `index`, placing its orders of `scenario` through `receiver`
    /// with up to `window` (at least 1) in flight, reporting to `report`
    /// when done.
    pub fn new(
        index: usize,
        receiver: ActorRef<ReceiverMsg>,
        answer: Answer,
        scenario: Scenario,
        window: usize,
        report: Sender<ClientReport>,
    ) -> Self {
        let window = window.max(1);
        Client {
            index,
            receiver,
            answer,
            scenario,
            window,
            sent: 0,
            failed: 0,
            first_sent: None,
            in_flight: Vec::with_capacity(window),
            latency_ns: Some(new_histogram()),
            tokens: Vec::new(),
            free: Vec::new(),
            report,
        }
    }

    /// Sends orders until the window is full or none is left.
    fn fill(&mut self, ctx: &mut Context<'_, Self>) {
        while self.in_flight.len() < self.window && self.sent < self.scenario.orders_per_client() {
            let order = self.scenario.order(self.index, self.sent);
            self.sent += 1;
            let (completion, slot) = match self.answer {
                Answer::Reply => (Completion::Reply(ctx.myself()), 0),
                Answer::Token => {
                    let slot = self.free.pop().unwrap_or_else(|| {
                        self.tokens.push(Arc::new(Token::new(ctx.myself())));
                        self.tokens.len() - 1
                    });
                    (Completion::Token(self.tokens[slot].arm(order.id)), slot)
                }
            };
            let now = Instant::now();
            self.first_sent.get_or_insert(now);
            self.in_flight.push((order.id, now, slot));
            self.receiver.tell(ReceiverMsg { order, completion });
        }
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
            ClientMsg::Start => self.fill(ctx),
            ClientMsg::Completed { id } | ClientMsg::Failed { id } => {
                let now = Instant::now();
                // Each order ends once (a token tells its client once).
                let Some(at) = self.in_flight.iter().position(|f| f.0 == id) else {
                    return;
                };
                let (_, sent_at, slot) = self.in_flight.remove(at);
                if self.answer == Answer::Token {
                    self.free.push(slot);
                }
                if let ClientMsg::Failed { .. } = msg {
                    self.failed += 1;
                } else if let Some(h) = self.latency_ns.as_mut() {
                    let ns = now.duration_since(sent_at).as_nanos() as u64;
                    h.saturating_record(ns.max(1));
                }
                self.fill(ctx);
                if !self.in_flight.is_empty() {
                    return;
                }
                if let Some(latency_ns) = self.latency_ns.take() {
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

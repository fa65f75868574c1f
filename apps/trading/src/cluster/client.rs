//! Receivers and clients of the distributed trading system.
//!
//! A receiver routes each order to the primary of the engine that owns its
//! book, by the engine's published name: when the lease moves, the name
//! moves with it, so receivers need not be told.
//!
//! A client places its orders one at a time. It sends an order, and if no
//! acknowledgement comes within the retry timeout it sends the same order
//! (same id) again, until it is acknowledged or the client gives up on it
//! after `give_up_after`. Latency is measured from the first send.

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use troupe::{Actor, ActorRef, Context};

use super::wire::{ClientMsg, EngineCmd, ReceiverMsg, WireOrder};
use crate::client::new_histogram;
use crate::topology::{engine_of, Scenario};

/// A stateless order receiver.
pub struct ClusterReceiver {
    /// The engines' primaries by engine index (published-name refs).
    pub engines: Arc<[ActorRef<EngineCmd>]>,
}

impl Actor for ClusterReceiver {
    type Msg = ReceiverMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ReceiverMsg) {
        let engine = engine_of(trading_engine::BookId(msg.order.book));
        if let Some(primary) = self.engines.get(engine) {
            primary.tell(EngineCmd::Order {
                order: msg.order,
                client: msg.client,
            });
        }
    }
}

/// When a client retries and gives up.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Resend an order not acknowledged for this long.
    pub retry_after: Duration,
    /// Give an order up after this long since its first send.
    pub give_up_after: Duration,
}

/// A finished client's results.
#[derive(Debug)]
pub struct ClusterClientReport {
    /// The client.
    pub index: usize,
    /// Latency of every acknowledged order, first send to acknowledgement.
    pub latency_ns: Histogram<u64>,
    /// Orders acknowledged.
    pub acked: u64,
    /// Orders given up (ids).
    pub given_up: Vec<u64>,
    /// Resends.
    pub retries: u64,
    /// Acknowledgements for an order no longer current (a retry's twin).
    pub late_acks: u64,
    /// When the first order was sent and the last one ended.
    pub first_sent: Instant,
    /// See `first_sent`.
    pub finished: Instant,
}

struct Current {
    order: WireOrder,
    first_sent: Instant,
}

/// A client of the distributed system.
pub struct ClusterClient {
    index: usize,
    receiver: ActorRef<ReceiverMsg>,
    scenario: Scenario,
    policy: RetryPolicy,
    sent: usize,
    current: Option<Current>,
    report: Option<ClusterClientReport>,
    to: Sender<ClusterClientReport>,
}

impl ClusterClient {
    /// Client `index`, placing its orders of `scenario` through `receiver`.
    pub fn new(
        index: usize,
        receiver: ActorRef<ReceiverMsg>,
        scenario: Scenario,
        policy: RetryPolicy,
        to: Sender<ClusterClientReport>,
    ) -> Self {
        let now = Instant::now();
        ClusterClient {
            index,
            receiver,
            scenario,
            policy,
            sent: 0,
            current: None,
            report: Some(ClusterClientReport {
                index,
                latency_ns: new_histogram(),
                acked: 0,
                given_up: Vec::new(),
                retries: 0,
                late_acks: 0,
                first_sent: now,
                finished: now,
            }),
            to,
        }
    }

    fn send(&mut self, ctx: &mut Context<'_, Self>, order: WireOrder) {
        self.receiver.tell(ReceiverMsg {
            order,
            client: ctx.myself(),
        });
        ctx.timers().start_single(
            "retry",
            self.policy.retry_after,
            ClientMsg::Retry { id: order.id },
        );
    }

    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        if self.sent == self.scenario.orders_per_client() {
            self.current = None;
            ctx.timers().cancel("retry");
            if let Some(mut report) = self.report.take() {
                report.finished = Instant::now();
                let _ = self.to.send(report);
            }
            ctx.stop();
            return;
        }
        let order = WireOrder::from(self.scenario.order(self.index, self.sent));
        self.sent += 1;
        let now = Instant::now();
        if self.sent == 1 {
            if let Some(r) = self.report.as_mut() {
                r.first_sent = now;
            }
        }
        self.current = Some(Current {
            order,
            first_sent: now,
        });
        self.send(ctx, order);
    }
}

impl Actor for ClusterClient {
    type Msg = ClientMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        let Some(report) = self.report.as_mut() else {
            return;
        };
        match msg {
            ClientMsg::Start => {
                if self.sent == 0 {
                    self.next(ctx);
                }
            }
            ClientMsg::Ack { id } => match &self.current {
                Some(c) if c.order.id == id => {
                    let ns = c.first_sent.elapsed().as_nanos() as u64;
                    report.latency_ns.saturating_record(ns.max(1));
                    report.acked += 1;
                    self.next(ctx);
                }
                _ => report.late_acks += 1,
            },
            ClientMsg::Retry { id } => {
                let Some(c) = &self.current else { return };
                if c.order.id != id {
                    return;
                }
                let order = c.order;
                if c.first_sent.elapsed() >= self.policy.give_up_after {
                    report.given_up.push(id);
                    self.next(ctx);
                } else {
                    report.retries += 1;
                    self.send(ctx, order);
                }
            }
        }
    }
}

//! Receivers and clients of the distributed trading system.
//!
//! A receiver routes each order to the primary of the engine that owns its
//! book, by the engine's published name: when the lease moves, the name
//! moves with it, so receivers need not be told. A client's batch leaves a
//! receiver as one message per engine it touches.
//!
//! A client keeps up to a window of orders in flight (1: one at a time),
//! and sends what it can send at once as one batch: after answers, it
//! refills its window once the answers already in its mailbox are taken
//! (a `Refill` it tells itself goes behind them), and a scan's resends go
//! together.
//! An order not acknowledged within the retry timeout is sent again with
//! the same id, until it is acknowledged or the client gives up on it after
//! `give_up_after`. Latency is measured per order from its first send.
//!
//! One-way, an order is complete once the client holds the primary's
//! `PrimaryDone` naming the standby's revision and that standby's
//! `StandbyDone` (in either order), or a `PrimaryDone` naming no standby.
//!
//! The clients of one process share a [`Progress`]: every acknowledgement
//! counts there, and each whole percent of the scenario's orders reached
//! is announced once, so that a launcher can tie a fault to how far the
//! load got rather than to the clock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use troupe::{Actor, ActorRef, Context};

use super::wire::{seq_of, AckMode, ClientMsg, EngineCmd, ReceiverMsg, WireOrder};
use crate::client::new_histogram;
use crate::topology::{engine_of, Scenario};

/// A stateless order receiver.
pub struct ClusterReceiver {
    /// The engines' primaries by engine index: `Node::select` refs, which
    /// follow each engine's name to whichever node serves it.
    pub engines: Arc<[ActorRef<EngineCmd>]>,
}

impl Actor for ClusterReceiver {
    type Msg = ReceiverMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ReceiverMsg) {
        // Split by engine, each part in the client's order; an order of a
        // book no engine owns goes nowhere (the client gives it up).
        let mut parts: Vec<(usize, Vec<WireOrder>)> = Vec::new();
        for order in msg.orders {
            let engine = engine_of(trading_engine::BookId(order.book));
            match parts.iter_mut().find(|(e, _)| *e == engine) {
                Some((_, orders)) => orders.push(order),
                None => parts.push((engine, vec![order])),
            }
        }
        for (engine, orders) in parts {
            if let Some(primary) = self.engines.get(engine) {
                primary.tell(EngineCmd::Orders {
                    orders,
                    client: msg.client.clone(),
                    mode: msg.mode,
                });
            }
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

/// Acknowledged orders over every client of a process.
pub struct Progress {
    acked: AtomicU64,
    total: u64,
    /// Called once per whole percent of `total` acknowledged (1 to 100),
    /// on the thread of the acknowledgement that reached it.
    on_percent: Box<dyn Fn(u64) + Send + Sync>,
}

impl Progress {
    /// Counts towards `total` orders; `on_percent` hears each percent.
    pub fn new(total: u64, on_percent: impl Fn(u64) + Send + Sync + 'static) -> Progress {
        Progress {
            acked: AtomicU64::new(0),
            total: total.max(1),
            on_percent: Box::new(on_percent),
        }
    }

    /// One more order acknowledged. Each count is taken by exactly one
    /// caller, so a percent boundary is crossed (and announced) once even
    /// when clients on several threads acknowledge at the same moment.
    pub fn acked(&self) {
        let n = self.acked.fetch_add(1, Ordering::Relaxed) + 1;
        let (before, now) = ((n - 1) * 100 / self.total, n * 100 / self.total);
        for percent in before + 1..=now {
            (self.on_percent)(percent);
        }
    }
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
    /// Batches of orders sent (each one message).
    pub batches_sent: u64,
    /// When the first order was sent and the last one ended.
    pub first_sent: Instant,
    /// See `first_sent`.
    pub finished: Instant,
}

/// An order sent and not yet acknowledged.
struct InFlight {
    order: WireOrder,
    first_sent: Instant,
    last_sent: Instant,
    /// One-way: the standby revisions named by the primaries' answers so
    /// far, and those the standbys answered for (a retry can bring
    /// answers of a later primary or standby).
    primary_named: Vec<u64>,
    standby_said: Vec<u64>,
}

/// A client of the distributed system.
pub struct ClusterClient {
    index: usize,
    receiver: ActorRef<ReceiverMsg>,
    scenario: Scenario,
    policy: RetryPolicy,
    window: usize,
    mode: AckMode,
    sent: usize,
    in_flight: BTreeMap<u64, InFlight>,
    /// A `Refill` is on its way to this client.
    refill_due: bool,
    report: Option<ClusterClientReport>,
    to: Sender<ClusterClientReport>,
    progress: Arc<Progress>,
}

impl ClusterClient {
    /// Client `index`, placing its orders of `scenario` through `receiver`
    /// with up to `window` (at least 1) in flight, acknowledged as `mode`
    /// says, counting each acknowledgement in `progress`.
    // Each argument is a setting of its own; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        receiver: ActorRef<ReceiverMsg>,
        scenario: Scenario,
        policy: RetryPolicy,
        window: usize,
        mode: AckMode,
        to: Sender<ClusterClientReport>,
        progress: Arc<Progress>,
    ) -> Self {
        let now = Instant::now();
        ClusterClient {
            index,
            receiver,
            scenario,
            policy,
            window: window.max(1),
            mode,
            sent: 0,
            in_flight: BTreeMap::new(),
            refill_due: false,
            report: Some(ClusterClientReport {
                index,
                latency_ns: new_histogram(),
                acked: 0,
                given_up: Vec::new(),
                retries: 0,
                late_acks: 0,
                batches_sent: 0,
                first_sent: now,
                finished: now,
            }),
            to,
            progress,
        }
    }

    /// Sends `orders` as one batch, each with the client's settled mark as
    /// of now: every sequence number below the oldest order in flight (or
    /// below the next to send, if none is) has its answer or was given up.
    fn send(&mut self, ctx: &mut Context<'_, Self>, mut orders: Vec<WireOrder>) {
        if orders.is_empty() {
            return;
        }
        if let Some(r) = self.report.as_mut() {
            r.batches_sent += 1;
        }
        let settled_below = match self.in_flight.keys().next() {
            Some(&oldest) => seq_of(oldest),
            None => self.sent as u32,
        };
        for order in &mut orders {
            order.settled_below = settled_below;
        }
        self.receiver.tell(ReceiverMsg {
            orders,
            client: ctx.myself(),
            mode: self.mode,
        });
    }

    /// Sends new orders until the window is full or none is left; reports
    /// and stops once every order is acknowledged or given up.
    fn fill(&mut self, ctx: &mut Context<'_, Self>) {
        let mut batch = Vec::new();
        while self.in_flight.len() < self.window && self.sent < self.scenario.orders_per_client() {
            let order = WireOrder::from(self.scenario.order(self.index, self.sent));
            self.sent += 1;
            let now = Instant::now();
            if self.sent == 1 {
                if let Some(r) = self.report.as_mut() {
                    r.first_sent = now;
                }
            }
            self.in_flight.insert(
                order.id,
                InFlight {
                    order,
                    first_sent: now,
                    last_sent: now,
                    primary_named: Vec::new(),
                    standby_said: Vec::new(),
                },
            );
            batch.push(order);
        }
        self.send(ctx, batch);
        if self.in_flight.is_empty() {
            ctx.timers().cancel("retry");
            if let Some(mut report) = self.report.take() {
                report.finished = Instant::now();
                let _ = self.to.send(report);
            }
            ctx.stop();
        }
    }

    /// Resends what waited `retry_after` since its last send; gives up
    /// what waited `give_up_after` since its first.
    fn scan(&mut self, ctx: &mut Context<'_, Self>) {
        let now = Instant::now();
        let mut given_up = Vec::new();
        let mut resend = Vec::new();
        for (id, f) in &mut self.in_flight {
            if now.duration_since(f.first_sent) >= self.policy.give_up_after {
                given_up.push(*id);
            } else if now.duration_since(f.last_sent) >= self.policy.retry_after {
                f.last_sent = now;
                resend.push(f.order);
            }
        }
        for id in &given_up {
            self.in_flight.remove(id);
        }
        let resent = resend.len() as u64;
        self.send(ctx, resend);
        if let Some(r) = self.report.as_mut() {
            r.retries += resent;
            r.given_up.extend(given_up);
        }
        self.fill(ctx);
    }
}

impl Actor for ClusterClient {
    type Msg = ClientMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        if self.report.is_none() {
            return;
        }
        match msg {
            ClientMsg::Start => {
                if self.sent == 0 {
                    // Checked a few times per retry timeout: an order is
                    // resent between 1 and 1.25 timeouts after its last send.
                    let every = (self.policy.retry_after / 4).max(Duration::from_millis(5));
                    ctx.timers()
                        .start_periodic("retry", every, ClientMsg::RetryScan);
                    self.fill(ctx);
                }
                return;
            }
            ClientMsg::Acks { ids } => {
                for id in ids {
                    self.complete(id);
                }
            }
            ClientMsg::PrimaryDone { ids, standby } => {
                for id in ids {
                    let Some(f) = self.in_flight.get_mut(&id) else {
                        self.late();
                        continue;
                    };
                    match standby {
                        Some(epoch) if !f.standby_said.contains(&epoch) => {
                            f.primary_named.push(epoch)
                        }
                        _ => self.complete(id),
                    }
                }
            }
            ClientMsg::StandbyDone { ids, epoch } => {
                for id in ids {
                    let Some(f) = self.in_flight.get_mut(&id) else {
                        self.late();
                        continue;
                    };
                    if f.primary_named.contains(&epoch) {
                        self.complete(id);
                    } else {
                        f.standby_said.push(epoch);
                    }
                }
            }
            ClientMsg::RetryScan => return self.scan(ctx),
            ClientMsg::Refill => {
                self.refill_due = false;
                return self.fill(ctx);
            }
        }
        // Refill once the answers already queued are taken too: the
        // refill goes behind them, and the window leaves as one batch.
        if !self.refill_due {
            self.refill_due = true;
            ctx.myself().tell(ClientMsg::Refill);
        }
    }
}

impl ClusterClient {
    /// Order `id` is acknowledged (if it is still in flight); a `Refill`
    /// refills the window.
    fn complete(&mut self, id: u64) {
        let Some(f) = self.in_flight.remove(&id) else {
            return self.late();
        };
        if let Some(r) = self.report.as_mut() {
            let ns = f.first_sent.elapsed().as_nanos() as u64;
            r.latency_ns.saturating_record(ns.max(1));
            r.acked += 1;
        }
        self.progress.acked();
    }

    /// An answer for an order no longer in flight (a retry's twin).
    fn late(&mut self) {
        if let Some(r) = self.report.as_mut() {
            r.late_acks += 1;
        }
    }
}

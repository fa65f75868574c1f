//! What the trading nodes say to each other across processes: orders in a
//! fixed binary shape, and the messages of clients, receivers and engines,
//! each with a stable tag (see docs/semantics.md, "Across nodes").
//!
//! An order's id is its idempotency key: the high 32 bits are the client's
//! id, the low 32 bits the client's sequence number for it
//! ([`client_of`], [`seq_of`]). A retry sends the same id again.

use serde::{Deserialize, Serialize};
use trading_engine::{BookId, NewOrder, OrderKind, Side};
use troupe::{ActorRef, ReplyTo};
use troupe_remote::RemoteMessage;

/// A [`NewOrder`] as it travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireOrder {
    /// Client id << 32 | the client's sequence number.
    pub id: u64,
    /// Book id (the same in every process: see `topology::market`).
    pub book: u32,
    /// 0 buy, 1 sell.
    pub side: u8,
    /// 0 limit, 1 immediate-or-cancel, 2 market.
    pub kind: u8,
    /// Limit price in ticks.
    pub price: u64,
    /// Lots.
    pub qty: u64,
    /// When sent: the client holds the answer of each of its orders with a
    /// lower sequence number (or gave it up), so engines may forget them
    /// (`applied.rs`). 0 says nothing.
    pub settled_below: u32,
}

impl From<NewOrder> for WireOrder {
    fn from(o: NewOrder) -> Self {
        WireOrder {
            id: o.id,
            book: o.book.0,
            side: match o.side {
                Side::Buy => 0,
                Side::Sell => 1,
            },
            kind: match o.kind {
                OrderKind::Limit => 0,
                OrderKind::ImmediateOrCancel => 1,
                OrderKind::Market => 2,
            },
            price: o.price,
            qty: o.qty,
            settled_below: 0,
        }
    }
}

impl WireOrder {
    /// The order, or `None` if a field is out of range (a frame from a
    /// peer that does not speak this version).
    pub fn to_order(self) -> Option<NewOrder> {
        Some(NewOrder {
            id: self.id,
            book: BookId(self.book),
            side: match self.side {
                0 => Side::Buy,
                1 => Side::Sell,
                _ => return None,
            },
            price: self.price,
            qty: self.qty,
            kind: match self.kind {
                0 => OrderKind::Limit,
                1 => OrderKind::ImmediateOrCancel,
                2 => OrderKind::Market,
                _ => return None,
            },
        })
    }
}

/// The client an order id belongs to.
pub fn client_of(id: u64) -> u32 {
    (id >> 32) as u32
}

/// The client's sequence number of an order id.
pub fn seq_of(id: u64) -> u32 {
    id as u32
}

/// To a client actor. Engines answer a client's orders in batches: the
/// orders one message handling of an engine completed, per client.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ClientMsg {
    /// Begin placing orders.
    Start,
    /// Orders `ids` are applied exactly once and logged by every engine
    /// that counts (the primary and, if it has one, its standby). A retried
    /// order is answered with the same acknowledgement.
    Acks {
        /// The orders, in the engine's processing order.
        ids: Vec<u64>,
    },
    /// One-way: the primary applied orders `ids` (once each) and their
    /// records are durable. With `standby: None` the primary holds the
    /// lease alone and this completes the orders; with `Some(epoch)` an
    /// order completes when the standby that joined at `epoch` says
    /// [`ClientMsg::StandbyDone`] for it too.
    PrimaryDone {
        /// The orders.
        ids: Vec<u64>,
        /// The lease revision the primary's standby joined at, if it has one.
        standby: Option<u64>,
    },
    /// One-way: the standby following the primary's lease revision `epoch`
    /// applied orders `ids` and their records are durable.
    StandbyDone {
        /// The orders.
        ids: Vec<u64>,
        /// The revision it follows.
        epoch: u64,
    },
    /// Time to resend what waited too long (a timer of the client's own).
    RetryScan,
    /// Time to refill the window (from the client itself, behind the
    /// answers that were queued when it took one).
    Refill,
}

impl RemoteMessage for ClientMsg {
    const TAG: &'static str = "trading.client.v3";
}

/// How a client learns that its order is complete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum AckMode {
    /// The primary acknowledges once its own record is durable and its
    /// standby answered that it logged the order ([`ClientMsg::Acks`]).
    #[default]
    RequestReply,
    /// Primary and standby each tell the client themselves once their own
    /// record is durable ([`ClientMsg::PrimaryDone`],
    /// [`ClientMsg::StandbyDone`]): no answer travels back to the primary.
    OneWay,
}

impl AckMode {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            AckMode::RequestReply => "request-reply",
            AckMode::OneWay => "one-way",
        }
    }
}

/// Whom a standby answers for a replicated order, and whether it applies
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StandbyAck {
    /// Apply it (if not applied yet) and answer the primary (request-reply),
    /// with [`EngineCmd::Replicated`].
    Primary,
    /// Apply it (if not applied yet) and answer its client (one-way), with
    /// [`ClientMsg::StandbyDone`]: the client is `clients[i]` of the
    /// [`EngineCmd::Replicate`] it came in.
    Client(u32),
    /// Do not apply it: it arrived at the primary again after it was
    /// applied there (one-way). If it is applied here, answer its client
    /// (`clients[i]`) once everything applied so far is durable here.
    Reconfirm(u32),
}

/// One order as the primary forwards it to its standby.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    /// The order.
    pub order: WireOrder,
    /// What the standby does with it.
    pub ack: StandbyAck,
}

/// To an order receiver: a client's orders, as many as it sends at once.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReceiverMsg {
    /// The orders, in the client's order.
    pub orders: Vec<WireOrder>,
    /// Who to acknowledge them to.
    pub client: ActorRef<ClientMsg>,
    /// How.
    pub mode: AckMode,
}

impl RemoteMessage for ReceiverMsg {
    const TAG: &'static str = "trading.receiver.v3";
}

/// What an engine reports about itself, for verification and the failover
/// figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineReport {
    /// The node it runs on.
    pub node: String,
    /// `primary`, `standby` or `joining`.
    pub role: String,
    /// The lease revision it holds or follows.
    pub epoch: u64,
    /// A primary's standby: the revision it joined at (its replication
    /// carries that one).
    pub standby_epoch: Option<u64>,
    /// Orders applied (each id once).
    pub orders: u64,
    /// Trades made.
    pub trades: u64,
    /// Orders resting.
    pub resting: u64,
    /// Hash of the resting orders in priority order.
    pub fingerprint: u64,
    /// Per-book digests of orders and trades in processing order.
    pub digests: Vec<u64>,
    /// Orders that arrived again after being applied and were answered
    /// with their original acknowledgement instead.
    pub duplicates: u64,
    /// Wall-clock time (Unix ns) this engine became primary by taking the
    /// lease over, if it did.
    pub promoted_at_ns: Option<u64>,
    /// Wall-clock time (Unix ns) of the first order it accepted as primary
    /// after that.
    pub first_order_after_promotion_ns: Option<u64>,
    /// How it recovered when it opened its log.
    pub recovery: Recovery,
    /// The count and digest of the ids it applied (`applied.rs`).
    pub applied_digest: (u64, u64),
    /// As a standby: gaps it found in its primary's replication (a
    /// `Replicate` lost on the way), each filled by the primary's state
    /// sent again.
    #[serde(default)]
    pub gaps: u64,
    /// Messages it took and sent for orders, since it started.
    pub messages: EngineMessages,
}

/// An engine's order traffic, in messages (each a batch of orders or
/// answers), since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineMessages {
    /// `Orders` taken as primary.
    pub orders_in: u64,
    /// `Replicate` sent as primary.
    pub replicate_out: u64,
    /// `Replicated` sent as standby.
    pub replicated_out: u64,
    /// Answers sent to clients (`Acks`, `PrimaryDone`, `StandbyDone`).
    pub answers_out: u64,
}

impl std::iter::Sum for EngineMessages {
    fn sum<I: Iterator<Item = EngineMessages>>(iter: I) -> EngineMessages {
        iter.fold(EngineMessages::default(), |a, b| EngineMessages {
            orders_in: a.orders_in + b.orders_in,
            replicate_out: a.replicate_out + b.replicate_out,
            replicated_out: a.replicated_out + b.replicated_out,
            answers_out: a.answers_out + b.answers_out,
        })
    }
}

impl EngineMessages {
    /// Every message counted (the ones taken and the ones sent are each
    /// one frame on the wire).
    pub fn total(&self) -> u64 {
        self.orders_in + self.replicate_out + self.replicated_out + self.answers_out
    }
}

/// How an engine recovered when it opened its log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// The snapshot it started from (its sequence number; 0 if none).
    pub snapshot_seq_nr: u64,
    /// The events replayed after it.
    pub replayed_events: u64,
    /// How long opening and replaying took, in microseconds.
    pub micros: u64,
}

/// To a matching engine of the distributed system.
#[derive(Debug, Serialize, Deserialize)]
pub enum EngineCmd {
    /// From a receiver, to the primary: orders of one client for this
    /// engine's books, in the client's order.
    Orders {
        /// The orders.
        orders: Vec<WireOrder>,
        /// Who placed them.
        client: ActorRef<ClientMsg>,
        /// How the client wants them acknowledged.
        mode: AckMode,
    },
    /// From the primary to its standby: the orders one message handling of
    /// the primary forwarded, in its processing order. Each `Replicate`
    /// covers the primary's sequence numbers `from..to`, and the next one
    /// starts where it ended (or where the latest catch-up did): a standby
    /// that gets one starting elsewhere lost one on the way, and asks for
    /// the primary's state again instead of applying it. An empty one (a
    /// probe, sent when a client resends an order that waits for the
    /// standby) asks the standby to answer again.
    Replicate {
        /// The primary's lease revision: a standby that follows another
        /// (newer) primary ignores it.
        epoch: u64,
        /// The first sequence number it covers.
        from: u64,
        /// The sequence number after the last it covers.
        to: u64,
        /// The orders.
        replicas: Vec<Replica>,
        /// The clients the replicas answer (one-way), each once.
        clients: Vec<ActorRef<ClientMsg>>,
    },
    /// From the standby to its primary: every order it was sent up to the
    /// primary's sequence number `through` is applied and logged there.
    Replicated {
        /// The lease revision the standby follows.
        epoch: u64,
        /// The primary's sequence number of the last order covered.
        through: u64,
    },
    /// From a fresh engine to the primary: make me your standby, or, from
    /// the primary's standby (the same `session`), send me your state
    /// again (it found a gap in what it was sent, or its catch-up did not
    /// come).
    Join {
        /// The lease revision the joiner saw.
        epoch: u64,
        /// The joining engine.
        standby: ActorRef<EngineCmd>,
        /// Drawn by the engine when it starts to follow: a `Join` with the
        /// session of the primary's standby is the same standby asking
        /// again.
        session: u64,
    },
    /// From the primary to a joining standby: its state as of now (books,
    /// counters, digests, ids applied; `cluster::state`), in chunks;
    /// `last` ends the catch-up.
    CatchUp {
        /// The primary's lease revision.
        epoch: u64,
        /// The primary's next sequence number: the first `Replicate` after
        /// this state starts there.
        next: u64,
        /// Where in the encoded state this chunk starts (a chunk lost on
        /// the way shows as a chunk starting elsewhere).
        offset: u64,
        /// A chunk of the encoded state.
        state: Vec<u8>,
        /// No more catch-up follows.
        last: bool,
    },
    /// From the engine itself: its catch-up has not come within
    /// `JOIN_RETRY` (the engine's); ask for it again.
    RetryJoin,
    /// From the node's lease keeper: this engine now holds the lease at
    /// revision `epoch` and is the primary.
    Promote {
        /// The lease revision.
        epoch: u64,
    },
    /// From the node's lease keeper: follow `primary`, which holds the
    /// lease at revision `epoch`.
    Follow {
        /// The lease revision.
        epoch: u64,
        /// The primary (the engine's published name).
        primary: ActorRef<EngineCmd>,
    },
    /// From the node's lease keeper: the lease was renewed at `epoch` with
    /// no standby; acknowledge on the own log alone.
    Solo {
        /// The new lease revision.
        epoch: u64,
    },
    /// From the engine's own log: the first `lsn` records are durable.
    Durable {
        /// Events durable.
        lsn: u64,
        /// The log position of the last of them.
        position: u64,
    },
    /// From the engine itself: send what was gathered (see `engine.rs`,
    /// batches). From anyone else it only sends a batch early.
    Flush,
    /// From the engine's own log: a group commit failed.
    LogFailed(String),
    /// Report counters and digests.
    Report(ReplyTo<EngineReport>),
}

impl RemoteMessage for EngineCmd {
    const TAG: &'static str = "trading.engine.v4";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::scenario_order;

    #[test]
    fn orders_survive_the_wire_form() {
        for n in 0..30 {
            let o = scenario_order(7, n);
            assert_eq!(WireOrder::from(o).to_order(), Some(o));
            assert_eq!((client_of(o.id), seq_of(o.id)), (7, n as u32));
        }
        let bad = WireOrder {
            side: 9,
            ..WireOrder::from(scenario_order(0, 0))
        };
        assert_eq!(bad.to_order(), None);
    }
}

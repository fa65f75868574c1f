//! The messages between clients, receivers and engines (including what an
//! engine's log sends back once a record is durable), and the completion
//! token of the one-way variant.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use trading_engine::NewOrder;
use troupe::{ActorRef, ReplyTo};

use crate::engine_core::EngineSummary;

/// To a client actor.
#[derive(Debug)]
pub enum ClientMsg {
    /// Begin placing orders.
    Start,
    /// The current order is complete: both engines processed (and, if the
    /// log is on, logged) it.
    Completed,
    /// The current order failed: an engine could not process it even after
    /// its restart (see docs/semantics.md, trading).
    Failed,
}

/// How the client learns that its order is complete.
#[derive(Clone, Debug)]
pub enum Completion {
    /// request-reply: the primary replies to this client once both engines
    /// are done.
    Reply(ActorRef<ClientMsg>),
    /// one-way: primary and standby each complete the token; the second
    /// tells the client.
    Token(Arc<Token>),
}

/// To an order receiver: an order and how to complete it.
#[derive(Debug)]
pub struct ReceiverMsg {
    /// The order.
    pub order: NewOrder,
    /// Who to tell when it is done.
    pub completion: Completion,
}

/// How a standby acknowledges a replicated order.
#[derive(Clone, Debug)]
pub enum Ack {
    /// request-reply: tell the primary that record `seq` is done here.
    Primary {
        /// The primary.
        to: ActorRef<EngineMsg>,
        /// The primary's sequence number for the order.
        seq: u64,
    },
    /// one-way: complete the client's token.
    Token(Arc<Token>),
}

/// To a matching engine (primary or standby).
#[derive(Debug)]
pub enum EngineMsg {
    /// From a receiver to a primary.
    Order {
        /// The order.
        order: NewOrder,
        /// Who to tell when it is done.
        completion: Completion,
    },
    /// From a primary to its standby.
    Replicate {
        /// The order, in the primary's processing order.
        order: NewOrder,
        /// What to do once it is done here.
        ack: Ack,
    },
    /// To a primary from its own log: records up to `seq` are durable.
    Durable {
        /// The record's sequence number.
        seq: u64,
    },
    /// To a primary from its standby: order `seq` is done there.
    StandbyDone {
        /// The primary's sequence number for the order.
        seq: u64,
    },
    /// Report counters, a fingerprint of the books and per-book digests.
    Summary(ReplyTo<EngineSummary>),
    /// Fail on purpose (a panic in the handler), to exercise supervision.
    Crash,
    /// Make the next `n` log appends fail as if the disk refused them,
    /// after their orders were matched in memory: failures inside
    /// processing, to exercise the engine's redo of the order after its
    /// restart (the count carries over to the restarted instance).
    FailAppends(u32),
}

/// Which message a deferred completion sends to an engine.
#[derive(Clone, Copy, Debug)]
pub enum DoneMsg {
    /// The primary's own record `seq` is durable.
    Durable(u64),
    /// The standby has done order `seq`.
    StandbyDone(u64),
}

impl DoneMsg {
    /// The engine message it stands for.
    pub fn into_msg(self) -> EngineMsg {
        match self {
            DoneMsg::Durable(seq) => EngineMsg::Durable { seq },
            DoneMsg::StandbyDone(seq) => EngineMsg::StandbyDone { seq },
        }
    }
}

/// A one-way order's completion: two parties must complete it; the second
/// one tells the client. Or one party fails it, and the client is told at
/// once; a completion after that is ignored. A client has one order in
/// flight at a time, so it keeps one token and re-arms it for each order.
#[derive(Debug)]
pub struct Token {
    remaining: AtomicU8,
    client: ActorRef<ClientMsg>,
}

impl Token {
    /// A token that notifies `client`.
    pub fn new(client: ActorRef<ClientMsg>) -> Self {
        Token {
            remaining: AtomicU8::new(0),
            client,
        }
    }

    /// Expects two completions for the next order. Only the client calls it,
    /// and only while no order of its is in flight; the send that carries
    /// the token publishes the store.
    pub fn arm(&self) {
        self.remaining.store(2, Ordering::Relaxed);
    }

    /// One party is done; the last one tells the client.
    pub fn complete(&self) {
        // AcqRel: the last completer sees the other's work, and the client
        // sees both through the message it is sent. A token already failed
        // (or not armed) is left as it is: its client has been told.
        let done = self
            .remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| match r {
                0 | FAILED => None,
                r => Some(r - 1),
            });
        if done == Ok(1) {
            self.client.tell(ClientMsg::Completed);
        }
    }

    /// The order cannot be completed; the client is told once, unless it
    /// was already told (completed or failed).
    pub fn fail(&self) {
        let failed =
            self.remaining
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| match r {
                    0 | FAILED => None,
                    _ => Some(FAILED),
                });
        if failed.is_ok() {
            self.client.tell(ClientMsg::Failed);
        }
    }
}

/// The token's state once failed.
const FAILED: u8 = u8::MAX;

//! The messages between clients, receivers and engines (including what an
//! engine's log sends back once a record is durable), and the completion
//! token of the one-way variant.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use trading_engine::NewOrder;
use troupe::{ActorRef, ReplyTo};

use crate::engine_core::EngineSummary;

/// To a client actor.
#[derive(Debug)]
pub enum ClientMsg {
    /// Begin placing orders.
    Start,
    /// Order `id` is complete: both engines processed (and, if the log is
    /// on, logged) it.
    Completed {
        /// The order.
        id: u64,
    },
    /// Order `id` failed: an engine could not process it even after its
    /// restart (see apps/trading/GUARANTEES.md).
    Failed {
        /// The order.
        id: u64,
    },
}

/// How the client learns that its order is complete.
#[derive(Clone, Debug)]
pub enum Completion {
    /// request-reply: the primary replies to this client once both engines
    /// are done.
    Reply(ActorRef<ClientMsg>),
    /// one-way: primary and standby each complete the token; the second
    /// tells the client.
    Token(Armed),
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
    Token(Armed),
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
    /// From an engine's own log: a group-commit write failed, so the log
    /// refuses every later record; the engine restarts on a fresh open.
    LogFailed {
        /// The engine instance that owned the log (a notice for a failed
        /// predecessor is stale and ignored).
        instance: u64,
    },
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

/// A one-way client's completion token. Two parties must complete an
/// order (the second one tells the client), or one party fails it (the
/// client is told at once, and a completion after that is ignored). A
/// client keeps one token per order it may have in flight (its window) and
/// re-arms a token for the next order once its order ended; each arming is
/// a new *generation*, and a
/// completion or failure counts only for the generation it was armed for,
/// so a late one for an earlier order (say the standby's, after the primary
/// failed that order) never counts towards the next order.
#[derive(Debug)]
pub struct Token {
    /// generation << 8 | what is left to do (2, 1, 0, or `FAILED`).
    state: AtomicU64,
    client: ActorRef<ClientMsg>,
}

/// A token armed for one order: what travels with the order.
#[derive(Clone, Debug)]
pub struct Armed {
    token: Arc<Token>,
    generation: u64,
    /// The order it is armed for (what the client is told).
    id: u64,
}

/// The low byte of a token's state once its order failed.
const FAILED: u64 = 0xff;

impl Token {
    /// A token that notifies `client`.
    pub fn new(client: ActorRef<ClientMsg>) -> Self {
        Token {
            state: AtomicU64::new(0),
            client,
        }
    }

    /// Expects two completions for the next order. Only the client calls it,
    /// and only while no order of its is in flight; the send that carries
    /// the returned [`Armed`] publishes the store. A late completion of an
    /// earlier generation racing with it either lands before the store
    /// (and is overwritten) or sees the new generation and is ignored.
    pub fn arm(self: &Arc<Self>, id: u64) -> Armed {
        let generation = (self.state.load(Ordering::Relaxed) >> 8) + 1;
        self.state.store(generation << 8 | 2, Ordering::Relaxed);
        Armed {
            token: self.clone(),
            generation,
            id,
        }
    }
}

impl Armed {
    /// One party is done; the last one tells the client.
    pub fn complete(&self) {
        // AcqRel: the last completer sees the other's work, and the client
        // sees both through the message it is sent.
        let generation = self.generation;
        let before =
            self.token
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                    match (s >> 8 == generation, s & 0xff) {
                        (true, 1 | 2) => Some(s - 1),
                        _ => None,
                    }
                });
        if matches!(before, Ok(s) if s & 0xff == 1) {
            self.token.client.tell(ClientMsg::Completed { id: self.id });
        }
    }

    /// The order cannot be completed; the client is told once, unless it
    /// was already told (completed or failed).
    pub fn fail(&self) {
        let generation = self.generation;
        let failed =
            self.token
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                    match (s >> 8 == generation, s & 0xff) {
                        (true, 1 | 2) => Some(generation << 8 | FAILED),
                        _ => None,
                    }
                });
        if failed.is_ok() {
            self.token.client.tell(ClientMsg::Failed { id: self.id });
        }
    }
}

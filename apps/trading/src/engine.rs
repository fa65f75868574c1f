//! The matching engine actor, in either role.
//!
//! A **primary** receives orders from receivers, matches them, logs them,
//! and forwards each to its standby in its own processing order, so the
//! standby's books are an exact replica. A **standby** matches and logs what
//! its primary forwards and acknowledges it.
//!
//! An order is complete when both engines have processed it and each has
//! its record as durable as its log's policy promises:
//! - one-way: each engine completes the client's token at that point;
//! - request-reply: the primary keeps the order pending until its own
//!   record is durable and the standby has acknowledged, then replies.
//!   Both events arrive in sequence order (one log, one standby mailbox), so
//!   pending orders complete in order from the front of a queue.
//!
//! On start (and restart) the engine replays its own log into fresh books:
//! a primary that panics is restarted by its supervisor with every logged
//! order back in place. Orders that were in flight at the failure (not yet
//! acknowledged to their clients) stay unacknowledged; acknowledgements
//! still arriving for them are recognised as stale and ignored.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use troupe::{Actor, ActorRef, Context};

use crate::engine_core::EngineCore;
use crate::messages::{Ack, ClientMsg, Completion, EngineMsg};
use crate::txlog::{Done, EngineLog, LogSpec};

/// Which half of a pair an engine is.
#[derive(Clone, Debug)]
pub enum Role {
    /// Takes orders from receivers and forwards them to `standby`.
    Primary {
        /// Its standby.
        standby: ActorRef<EngineMsg>,
    },
    /// Takes orders from its primary.
    Standby,
}

struct Pending {
    client: ActorRef<ClientMsg>,
    own_durable: bool,
    standby_done: bool,
}

/// A matching engine actor.
pub struct Engine {
    role: Role,
    core: EngineCore,
    spec: LogSpec,
    log: EngineLog,
    /// request-reply orders not yet replied to; `pending[0]` has sequence
    /// number `first_pending`.
    pending: VecDeque<Pending>,
    first_pending: u64,
    next_seq: u64,
    record: Vec<u8>,
}

impl Engine {
    /// An engine with empty books; its log (if any) is opened and replayed
    /// when it starts.
    pub fn new(role: Role, spec: LogSpec) -> Self {
        // Each instance numbers its orders from its own base, so an
        // acknowledgement addressed to a failed predecessor (its log still
        // completing as it closes) is recognisably stale and ignored.
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let base = INSTANCES.fetch_add(1, Ordering::Relaxed) << 32;
        Engine {
            role,
            core: EngineCore::new(),
            spec,
            log: EngineLog::Off,
            pending: VecDeque::new(),
            first_pending: base,
            next_seq: base,
            record: Vec::with_capacity(64),
        }
    }

    fn process(&mut self, order: &trading_engine::NewOrder, done: Done) -> Option<Done> {
        self.core.process(order);
        self.record.clear();
        trading_engine::codec::encode(
            &trading_engine::Command::New(*order),
            self.core.market(),
            &mut self.record,
        );
        // A log that cannot take the record must not let the order be
        // acknowledged: failing the handler lets the supervisor restart the
        // engine from what the log does hold.
        self.log
            .append(&self.record, done)
            .unwrap_or_else(|e| panic!("transaction log append failed: {e}"))
    }

    fn complete_front(&mut self) {
        while let Some(front) = self.pending.front() {
            if !(front.own_durable && front.standby_done) {
                break;
            }
            let front = self.pending.pop_front().expect("front exists");
            self.first_pending += 1;
            front.client.tell(ClientMsg::Completed);
        }
    }

    /// The pending order `seq`, unless the acknowledgement is stale (for
    /// an order of a failed predecessor, never acknowledged to its client).
    fn pending_mut(&mut self, seq: u64) -> Option<&mut Pending> {
        let index = seq.checked_sub(self.first_pending)?;
        self.pending.get_mut(usize::try_from(index).ok()?)
    }
}

impl Actor for Engine {
    type Msg = EngineMsg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        // Without a log there is nothing to open; with one, the books are
        // rebuilt from it before the first message is handled.
        self.log = EngineLog::open(&self.spec, &mut self.core)
            .unwrap_or_else(|e| panic!("cannot open the transaction log: {e}"));
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: EngineMsg) {
        match msg {
            EngineMsg::Order { order, completion } => {
                let Role::Primary { standby } = &self.role else {
                    panic!("a standby was sent an order directly");
                };
                let standby = standby.clone();
                match completion {
                    Completion::Token(token) => {
                        if let Some(done) = self.process(&order, Done::Token(token.clone())) {
                            done.fire();
                        }
                        standby.tell(EngineMsg::Replicate {
                            order,
                            ack: Ack::Token(token),
                        });
                    }
                    Completion::Reply(client) => {
                        let seq = self.next_seq;
                        self.next_seq += 1;
                        let later = Done::Tell {
                            to: ctx.myself(),
                            msg: DoneMsg::Durable(seq),
                        };
                        let own_durable = self.process(&order, later).is_some();
                        self.pending.push_back(Pending {
                            client,
                            own_durable,
                            standby_done: false,
                        });
                        standby.tell(EngineMsg::Replicate {
                            order,
                            ack: Ack::Primary {
                                to: ctx.myself(),
                                seq,
                            },
                        });
                    }
                }
            }
            EngineMsg::Replicate { order, ack } => {
                let done = match ack {
                    Ack::Token(token) => Done::Token(token),
                    Ack::Primary { to, seq } => Done::Tell {
                        to,
                        msg: DoneMsg::StandbyDone(seq),
                    },
                };
                if let Some(done) = self.process(&order, done) {
                    done.fire();
                }
            }
            EngineMsg::Durable { seq } => {
                if let Some(p) = self.pending_mut(seq) {
                    p.own_durable = true;
                    self.complete_front();
                }
            }
            EngineMsg::StandbyDone { seq } => {
                if let Some(p) = self.pending_mut(seq) {
                    p.standby_done = true;
                    self.complete_front();
                }
            }
            EngineMsg::Summary(reply) => {
                reply.reply(self.core.summary());
            }
            EngineMsg::Crash => panic!("engine crash requested"),
        }
    }
}

/// Which message a deferred completion sends.
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

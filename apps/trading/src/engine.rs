//! The matching engine actor, in either role.
//!
//! A **primary** receives orders from receivers, matches them, logs them,
//! and forwards each to its standby in its own processing order, so the
//! standby matches the same orders in the same order (what each run checks
//! of that: `verify`). A **standby** matches and logs what its primary
//! forwards and acknowledges it.
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
//!
//! A failure *inside* processing (matching panics, or the log refuses the
//! record) leaves the order matched in the failed instance's memory and not
//! in the log. The failed instance hands that order to its successor (a
//! slot shared by every instance the actor's factory builds), which, after
//! replaying its log, processes it before anything else in the mailbox, so
//! the order keeps its place in the processing order. If it fails again,
//! the engine gives up on it: the client is told the order failed.
//!
//! A group-commit write that fails is reported after the handler returned:
//! the orders of the failed batch are failed (one-way clients are told),
//! and the log tells the engine, which restarts on a fresh open of its log.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use trading_engine::NewOrder;
use troupe::{Actor, ActorRef, Context, Failure};

use crate::ledger::Ledger;
use crate::messages::{Ack, ClientMsg, Completion, DoneMsg, EngineMsg};
use crate::txlog::{Done, FailureNotice, LogSpec};

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
    id: u64,
    own_durable: bool,
    standby_done: bool,
}

/// How an order came in, and so how it completes.
#[derive(Clone, Debug)]
enum Source {
    /// From a receiver, to a primary.
    Order(Completion),
    /// From a primary, to its standby.
    Replicate(Ack),
}

/// The order an engine is processing, kept until it is done.
#[derive(Clone, Debug)]
struct InHand {
    order: NewOrder,
    source: Source,
    /// Earlier attempts that failed.
    failures: u32,
}

/// Attempts after which an order that keeps failing is given up.
const ATTEMPTS: u32 = 2;

/// What a failed instance leaves for the next one: the order it was
/// processing, and how many injected append failures are still to come.
#[derive(Debug, Default)]
struct Handover {
    order: Option<InHand>,
    failing_appends: u32,
}

/// Where a failed instance leaves the order it was processing for the
/// next instance. One per engine actor: its factory clones it into every
/// instance it builds. Touched only on failure and restart, never per order.
#[derive(Clone, Debug, Default)]
pub struct Redo(Arc<Mutex<Handover>>);

impl Redo {
    fn put(&self, handover: Handover) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = handover;
    }

    fn take(&self) -> Handover {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A matching engine actor.
pub struct Engine {
    role: Role,
    ledger: Ledger,
    spec: LogSpec,
    /// request-reply orders not yet replied to; `pending[0]` has sequence
    /// number `first_pending`.
    pending: VecDeque<Pending>,
    first_pending: u64,
    next_seq: u64,
    /// This instance's number (a log failure notice names it).
    instance: u64,
    in_hand: Option<InHand>,
    redo: Redo,
    /// Appends still to fail on purpose (`EngineMsg::FailAppends`).
    failing_appends: u32,
}

impl Engine {
    /// An engine with empty books; its log (if any) is opened and replayed
    /// when it starts. `redo` is shared by every instance of one actor.
    pub fn new(role: Role, spec: LogSpec, redo: Redo) -> Self {
        // Each instance numbers its orders from its own base, so an
        // acknowledgement addressed to a failed predecessor (its log still
        // completing as it closes) is recognisably stale and ignored.
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let instance = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let base = instance << 32;
        Engine {
            role,
            ledger: Ledger::unopened(),
            spec,
            pending: VecDeque::new(),
            first_pending: base,
            next_seq: base,
            instance,
            in_hand: None,
            redo,
            failing_appends: 0,
        }
    }

    fn process(&mut self, order: &NewOrder, done: Done) -> Option<Done> {
        if self.failing_appends > 0 {
            self.failing_appends -= 1;
            self.ledger.fail_next_append();
        }
        // A log that cannot take the record must not let the order be
        // acknowledged: failing the handler lets the supervisor restart the
        // engine from what the log does hold (and redo the order).
        self.ledger
            .process(order, done)
            .unwrap_or_else(|e| panic!("transaction log append failed: {e}"))
    }

    /// Processes `order` from a receiver (primary only).
    fn take_order(
        &mut self,
        ctx: &mut Context<'_, Self>,
        order: NewOrder,
        completion: Completion,
        failures: u32,
    ) {
        let Role::Primary { standby } = &self.role else {
            panic!("a standby was sent an order directly");
        };
        let standby = standby.clone();
        self.in_hand = Some(InHand {
            order,
            source: Source::Order(completion.clone()),
            failures,
        });
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
                let later = Done::Tell {
                    to: ctx.myself(),
                    msg: DoneMsg::Durable(seq),
                };
                let own_durable = self.process(&order, later).is_some();
                self.next_seq += 1;
                self.pending.push_back(Pending {
                    client,
                    id: order.id,
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
        self.in_hand = None;
    }

    /// Processes `order` from the primary (standby only).
    fn replicate(&mut self, order: NewOrder, ack: Ack, failures: u32) {
        self.in_hand = Some(InHand {
            order,
            source: Source::Replicate(ack.clone()),
            failures,
        });
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
        self.in_hand = None;
    }

    /// Processes again the order a failed predecessor was processing, or
    /// gives it up if it has failed too often.
    fn redo(&mut self, ctx: &mut Context<'_, Self>, order: InHand) {
        if self.ledger.core().last_order() == Some(order.order.id) {
            // Its record reached the log before the failure: it is in the
            // rebuilt books already and must not be matched twice.
            return;
        }
        let failures = order.failures + 1;
        if failures >= ATTEMPTS {
            match order.source {
                Source::Order(Completion::Token(token)) | Source::Replicate(Ack::Token(token)) => {
                    token.fail()
                }
                Source::Order(Completion::Reply(client)) => {
                    client.tell(ClientMsg::Failed { id: order.order.id })
                }
                // The primary's table of pending orders is not told: see
                // apps/trading/GUARANTEES.md (request-reply).
                Source::Replicate(Ack::Primary { .. }) => {}
            }
            return;
        }
        match order.source {
            Source::Order(completion) => self.take_order(ctx, order.order, completion, failures),
            Source::Replicate(ack) => self.replicate(order.order, ack, failures),
        }
    }

    fn complete_front(&mut self) {
        while let Some(front) = self.pending.front() {
            if !(front.own_durable && front.standby_done) {
                break;
            }
            let front = self.pending.pop_front().expect("front exists");
            self.first_pending += 1;
            front.client.tell(ClientMsg::Completed { id: front.id });
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

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        // Without a log there is nothing to open; with one, the books are
        // rebuilt from it before the first message is handled.
        self.ledger = Ledger::open(&self.spec)
            .unwrap_or_else(|e| panic!("cannot open the transaction log: {e}"));
        self.ledger
            .notify_failures(FailureNotice::new(ctx.myself(), self.instance));
    }

    fn before_restart(&mut self, _ctx: &mut Context<'_, Self>, _failure: &Failure) {
        self.redo.put(Handover {
            order: self.in_hand.take(),
            failing_appends: self.failing_appends,
        });
    }

    fn after_restart(&mut self, ctx: &mut Context<'_, Self>, _failure: &Failure) {
        self.started(ctx);
        let handover = self.redo.take();
        self.failing_appends = handover.failing_appends;
        if let Some(order) = handover.order {
            self.redo(ctx, order);
        }
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: EngineMsg) {
        match msg {
            EngineMsg::Order { order, completion } => self.take_order(ctx, order, completion, 0),
            EngineMsg::Replicate { order, ack } => self.replicate(order, ack, 0),
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
                reply.reply(self.ledger.core().summary());
            }
            EngineMsg::Crash => panic!("engine crash requested"),
            EngineMsg::LogFailed { instance } => {
                if instance == self.instance {
                    panic!("the transaction log failed a group commit; restarting from it");
                }
            }
            EngineMsg::FailAppends(n) => self.failing_appends += n,
        }
    }
}

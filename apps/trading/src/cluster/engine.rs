//! The matching engine of the distributed trading system: one actor per
//! engine index on every engine node, primary or standby as the lease in
//! NATS says (see [`super::lease`]).
//!
//! A **primary** applies each order once (a retried id is answered with
//! its acknowledgement, not applied again: [`Applied`]), logs it, forwards
//! it to its standby, and acknowledges it to the client when its own
//! record is durable and the standby has applied and logged it too.
//! Acknowledgements leave in processing order from a queue.
//!
//! A **standby** applies what its primary forwards, in order, and answers
//! once its records are durable: one answer covers every order up to a
//! sequence number.
//!
//! **Gaps.** Between processes a message can be lost (the NATS server
//! restarting drops what it held, and what is sent to a node not yet
//! reconnected), so an answer that covered "everything up to" a sequence
//! number would vouch for a `Replicate` the standby never got. Each
//! `Replicate` therefore covers a range of the primary's sequence numbers
//! and the next starts where it ended; a standby applies only the one that
//! continues what it holds, and on any other it has found a gap: it asks
//! the primary for its state again (a `Join` of the same session: the
//! catch-up of a joining standby, not a new standby) and ignores what
//! comes before that state. Its answers thus only ever cover a prefix it
//! holds. A standby that hears nothing more (the lost `Replicate` was the
//! last) or whose answer was lost is found by the clients' resends: a
//! resent order that waits for the standby makes the primary send an
//! empty `Replicate`, which shows the gap or is answered again. A `Join`
//! or catch-up lost on the way is asked for again after
//! [`JOIN_RETRY`]. The standby stays a standby meanwhile: what it holds
//! covers every order acknowledged, so it may still take over.
//!
//! **Batches.** Orders come a client's batch at a time, and what the
//! engine produces is gathered ([`super::batches`]) and leaves at a
//! `Flush` it tells itself when it gathers the first of it: the `Flush`
//! goes behind the messages already in its mailbox, so what they produce
//! leaves with it, the events logged as one append, the orders forwarded
//! as one `Replicate`, the answers as one message per client. An idle
//! engine flushes after the message it took; a busy one batches as much as
//! arrived while it worked. A message that can change the engine's role or
//! standby flushes what was gathered before it is handled, so everything
//! gathered goes where it was meant to. A joining engine reads nothing of
//! its own log (events left by its node's earlier life count for
//! nothing), first receives the primary's whole state (`CatchUp`: books,
//! counters, digests and the ids applied; [`super::state`]), records it
//! as the first event of its new life, and counts as a standby from then
//! on. No engine keeps its history: what
//! it holds in memory is its books and one entry per client, however many
//! orders it has processed.
//!
//! **Storage** is troupe-cluster's local journal, one per node shared by
//! its engines (persistence id `engine-<i>`; under group commit one fsync
//! covers a batch of all the node's engines): each order an event, each
//! catch-up a state event, and every `snapshot_every` events a snapshot
//! of the state, so a restart reads the latest snapshot and the
//! log's tail after it, not the whole log. Each activation of the engine
//! (each time it opens its log) takes the next fencing token of the
//! journal, and every append carries it.
//!
//! In the **one-way** mode (chosen per order by its client) nothing
//! travels back to the primary: primary and standby each tell the client
//! themselves once their own record is durable, and the client counts the
//! order complete when it holds both (or the primary's alone, when the
//! primary acknowledges alone).
//!
//! Who may acknowledge changes only through the lease: a standby becomes
//! primary by taking the lease over (`Promote`), and a primary whose
//! standby is declared gone acknowledges alone only after renewing the
//! lease at a new revision (`Solo`); both are compare-and-set on the same
//! revision, so of the two sides of a partition at most one wins. The
//! loser's node exits. Replication carries the lease revision, and an
//! engine drops replication of another revision than the one it follows.
//!
//! Failures are fail-stop: an engine that panics stops, and its node exits
//! (its books live on in the other process).

mod log;
mod primary;
mod standby;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc::UnboundedSender;
use troupe::{Actor, ActorRef, Context, Signal};
use troupe_cluster::persistence::{
    Durability, LocalJournal, LogOptions, PersistenceError, Snapshot,
};

use super::applied::Applied;
use super::batches::{Answers, Forward};
use super::lease::{engine_name, LeaseRequest};
use super::wire::{AckMode, ClientMsg, EngineCmd, EngineMessages, EngineReport, Recovery};
use crate::engine_core::EngineCore;
use crate::txlog::TxLog;

/// The default snapshot interval, in logged events: a restart replays at
/// most this many events after the snapshot (a second or so), and a
/// snapshot costs a copy of the books (milliseconds) this rarely.
pub const SNAPSHOT_EVERY: u64 = 100_000;

/// How long a standby waits for the catch-up it asked for (a `Join`)
/// before it asks again: a catch-up is a few messages and comes in
/// milliseconds, unless the `Join` or a chunk was lost.
pub const JOIN_RETRY: Duration = Duration::from_secs(1);

/// Bytes of state per catch-up message: well inside a NATS frame.
const CATCH_UP_CHUNK: usize = 256 * 1024;

enum Role {
    /// Neither following nor leading yet.
    Idle,
    /// Receiving the primary's state, `received` so far.
    Joining {
        epoch: u64,
        primary: ActorRef<EngineCmd>,
        received: Vec<u8>,
    },
    Standby {
        epoch: u64,
        primary: ActorRef<EngineCmd>,
        /// Found a gap and asked for the primary's state again: what came
        /// of it so far. Replication before that state is ignored.
        resync: Option<Vec<u8>>,
    },
    Primary {
        /// The lease revision held now...
        epoch: u64,
        /// ...and the first one this engine held: renewals (`Solo`) keep
        /// the owner, so a standby that joined at any revision in between
        /// follows this primary.
        since: u64,
        standby: Option<Attached>,
        /// Asked the keeper to go on alone; pending orders wait.
        going_solo: bool,
    },
}

/// A primary's standby.
struct Attached {
    standby: ActorRef<EngineCmd>,
    /// The revision it joined at (its replication carries that one).
    joined: u64,
    /// The session of its `Join`: the same again is this standby asking
    /// for the state again.
    session: u64,
}

impl Role {
    fn name(&self) -> &'static str {
        match self {
            Role::Idle => "idle",
            Role::Joining { .. } => "joining",
            Role::Standby { .. } => "standby",
            Role::Primary { .. } => "primary",
        }
    }

    fn epoch(&self) -> u64 {
        match self {
            Role::Idle => 0,
            Role::Joining { epoch, .. }
            | Role::Standby { epoch, .. }
            | Role::Primary { epoch, .. } => *epoch,
        }
    }
}

/// An order a primary has not acknowledged yet.
struct Pending {
    client: ActorRef<ClientMsg>,
    id: u64,
    mode: AckMode,
    /// Durable once the log's durable count reaches this.
    lsn: u64,
    standby_done: bool,
    /// The standby it was forwarded to (see `standby_gen`).
    gen: u64,
}

/// A standby's answer, sent once its log is durable up to the order.
enum Owed {
    /// To the primary: every order up to this sequence number is here
    /// (request-reply).
    Primary(u64),
    /// To the order's client: the order's id (one-way).
    Client(ActorRef<ClientMsg>, u64),
}

/// How an engine logs: its node's journal (shared by the node's engines,
/// opened by [`open_node_log`]; `None` when the log is off) and how often
/// it saves a snapshot. The engine takes its place in the journal (its
/// fencing token, its recovery) when it first takes a role.
#[derive(Clone)]
pub struct LogPlan {
    /// The node's journal, or `None` when the log is off.
    pub journal: Option<Arc<LocalJournal>>,
    /// A snapshot every this many events (0: never).
    pub snapshot_every: u64,
}

impl LogPlan {
    /// No log: every event counts as durable at once.
    pub fn off() -> LogPlan {
        LogPlan {
            journal: None,
            snapshot_every: 0,
        }
    }
}

/// Opens the journal a node's engines share, in `dir`, for `mode` (`None`
/// when the log is off). One journal per node, not per engine: under group
/// commit its one writer thread makes the appends of all the node's
/// engines durable with one fsync per batch, where a journal per engine
/// ran one fsync stream per engine on the same disk.
///
/// # Errors
///
/// As [`LocalJournal::open_with`]: the directory cannot be created or
/// locked (another process holds it), or the log in it is damaged.
pub fn open_node_log(
    dir: &std::path::Path,
    mode: TxLog,
) -> Result<Option<Arc<LocalJournal>>, PersistenceError> {
    let durability = match mode {
        TxLog::Off => return Ok(None),
        TxLog::GroupCommit => Durability::GroupCommit,
        TxLog::Buffered => Durability::None,
    };
    let options = LogOptions {
        durability,
        ..LogOptions::default()
    };
    LocalJournal::open_with(dir, options).map(|j| Some(Arc::new(j)))
}

/// One engine of the distributed system.
pub struct ClusterEngine {
    index: usize,
    node: String,
    plan: LogPlan,
    /// The journal, its persistence id, and this activation's token.
    journal: Option<Arc<LocalJournal>>,
    persistence_id: String,
    token: u64,
    core: EngineCore,
    applied: Applied,
    role: Role,
    /// Events appended to the log so far (its last sequence number), and
    /// how many of them are durable (the journal completes them in order).
    lsn: u64,
    /// Events since the last flush, appended as one unit then; the last of
    /// them is `lsn`.
    unappended: Vec<Vec<u8>>,
    /// Primary: orders forwarded since the last flush, for the standby.
    forward: Forward,
    /// Primary: where the next `Replicate` starts (where the last one, or
    /// the standby's catch-up, ended).
    forwarded_to: u64,
    /// Primary: a resent order waits for the standby; the next flush
    /// sends a `Replicate` even if it carries nothing (a probe).
    probe: bool,
    /// Answers to clients since the last flush.
    answers: Answers,
    /// A `Flush` is on its way to this engine.
    flush_due: bool,
    /// Order traffic, for the report.
    messages: EngineMessages,
    durable: u64,
    /// The log position of the latest durable event: a snapshot's replay
    /// starts there.
    durable_position: u64,
    /// The sequence number of the latest snapshot taken.
    snapshot_lsn: u64,
    /// A snapshot taken, saved once the log is durable up to it.
    unsaved_snapshot: Option<Snapshot>,
    /// How opening the log went (see `EngineReport::recovery`).
    recovery: Recovery,
    /// Primary: orders not yet acknowledged; `pending[0]` has sequence
    /// number `first_pending`.
    pending: VecDeque<Pending>,
    first_pending: u64,
    next_seq: u64,
    /// Standby: the primary's sequence number the next `Replicate` must
    /// start at (everything before it is here).
    expected: u64,
    /// Standby: this engine's session with its primary (see `Join`).
    session: u64,
    /// Standby: gaps found (see the module docs).
    gaps: u64,
    /// Standby: what to answer once the log is durable up to the lsn.
    to_answer: VecDeque<(u64, Owed)>,
    duplicates: u64,
    /// Counts the standbys attached; a pending order remembers which one
    /// it waits for, so going on alone releases only the lost one's.
    standby_gen: u64,
    lost_gen: u64,
    promoted_at_ns: Option<u64>,
    first_order_after_promotion_ns: Option<u64>,
    keeper: UnboundedSender<LeaseRequest>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl ClusterEngine {
    /// Engine `index` on `node`, logging as `plan` says, asking `keeper`
    /// for lease changes.
    pub fn new(
        index: usize,
        node: String,
        plan: LogPlan,
        keeper: UnboundedSender<LeaseRequest>,
    ) -> Self {
        ClusterEngine {
            index,
            node,
            plan,
            journal: None,
            persistence_id: engine_name(index),
            token: 0,
            core: EngineCore::new(),
            applied: Applied::default(),
            role: Role::Idle,
            lsn: 0,
            unappended: Vec::new(),
            forward: Forward::default(),
            forwarded_to: 0,
            probe: false,
            answers: Answers::default(),
            flush_due: false,
            messages: EngineMessages::default(),
            durable: 0,
            durable_position: 0,
            snapshot_lsn: 0,
            unsaved_snapshot: None,
            recovery: Recovery::default(),
            pending: VecDeque::new(),
            first_pending: 0,
            next_seq: 0,
            expected: 0,
            session: 0,
            gaps: 0,
            to_answer: VecDeque::new(),
            duplicates: 0,
            standby_gen: 0,
            lost_gen: 0,
            promoted_at_ns: None,
            first_order_after_promotion_ns: None,
            keeper,
        }
    }

    fn report(&self) -> EngineReport {
        let s = self.core.summary();
        EngineReport {
            node: self.node.clone(),
            role: self.role.name().to_string(),
            epoch: self.role.epoch(),
            standby_epoch: match &self.role {
                Role::Primary {
                    standby: Some(attached),
                    ..
                } => Some(attached.joined),
                _ => None,
            },
            orders: s.orders,
            trades: s.trades,
            resting: s.resting,
            fingerprint: s.fingerprint,
            digests: s.digests.to_vec(),
            duplicates: self.duplicates,
            promoted_at_ns: self.promoted_at_ns,
            first_order_after_promotion_ns: self.first_order_after_promotion_ns,
            recovery: self.recovery,
            applied_digest: self.applied.digest(),
            gaps: self.gaps,
            messages: self.messages,
        }
    }
}

impl Actor for ClusterEngine {
    type Msg = EngineCmd;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: EngineCmd) {
        match msg {
            EngineCmd::Flush => {
                self.flush_due = false;
                self.flush(ctx);
            }
            EngineCmd::Orders { .. }
            | EngineCmd::Replicate { .. }
            | EngineCmd::Replicated { .. }
            | EngineCmd::Durable { .. } => {
                self.handle(ctx, msg);
                if !self.flush_due && self.gathered() {
                    self.flush_due = true;
                    ctx.myself().tell(EngineCmd::Flush);
                }
            }
            // Rare, and may change the role or the standby.
            other => {
                self.flush(ctx);
                self.handle(ctx, other);
                self.flush(ctx);
            }
        }
    }

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        self.flush(ctx);
        let Signal::Terminated(id, _) = signal else {
            return;
        };
        let Role::Primary {
            epoch,
            standby,
            going_solo,
            ..
        } = &mut self.role
        else {
            return;
        };
        if standby.as_ref().is_some_and(|a| a.standby.id() == id) {
            // The standby is gone (stopped, or its node declared down). Its
            // acknowledgements will not come; go on alone only once the
            // lease says so (see the module docs).
            *standby = None;
            *going_solo = true;
            self.lost_gen = self.standby_gen;
            let _ = self.keeper.send(LeaseRequest::Solo { epoch: *epoch });
        }
    }
}

impl ClusterEngine {
    /// Whether anything waits for a flush.
    fn gathered(&self) -> bool {
        !(self.unappended.is_empty()
            && self.forward.is_empty()
            && self.answers.is_empty()
            && !self.probe)
    }

    /// Sends everything gathered: the log's events, the standby's orders,
    /// the clients' answers.
    fn flush(&mut self, ctx: &mut Context<'_, Self>) {
        self.flush_log(ctx);
        self.flush_forward();
        self.messages.answers_out += std::mem::take(&mut self.answers).send();
    }

    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: EngineCmd) {
        match msg {
            EngineCmd::Orders {
                orders,
                client,
                mode,
            } => self.take_orders(orders, client, mode),
            EngineCmd::Replicate {
                epoch,
                from,
                to,
                replicas,
                clients,
            } => self.take_replicas(ctx, epoch, from..to, replicas, clients),
            EngineCmd::Replicated { epoch, through } => self.replicated(epoch, through),
            EngineCmd::Join {
                epoch,
                standby,
                session,
            } => self.join(ctx, epoch, standby, session),
            EngineCmd::CatchUp {
                epoch,
                next,
                offset,
                state,
                last,
            } => self.catch_up(ctx, epoch, next, offset, state, last),
            EngineCmd::RetryJoin => self.retry_join(ctx),
            EngineCmd::Promote { epoch } => {
                self.open_log(ctx, true);
                let was_following = !matches!(self.role, Role::Idle);
                self.role = Role::Primary {
                    epoch,
                    since: epoch,
                    standby: None,
                    going_solo: false,
                };
                self.to_answer.clear();
                if was_following {
                    self.promoted_at_ns = Some(now_ns());
                }
            }
            EngineCmd::Solo { epoch } => {
                if let Role::Primary {
                    epoch: e,
                    going_solo,
                    ..
                } = &mut self.role
                {
                    *e = epoch;
                    *going_solo = false;
                    let lost = self.lost_gen;
                    for p in self.pending.iter_mut().filter(|p| p.gen <= lost) {
                        p.standby_done = true;
                    }
                }
                self.complete_front();
            }
            EngineCmd::Follow { epoch, primary } => self.follow(ctx, epoch, primary),
            EngineCmd::Durable { lsn, position } => {
                self.durable = self.durable.max(lsn);
                self.durable_position = self.durable_position.max(position);
                self.save_snapshot();
                self.complete_front();
                self.answer();
            }
            // Handled in `receive`.
            EngineCmd::Flush => {}
            EngineCmd::LogFailed(e) => panic!("engine {}: group commit failed: {e}", self.index),
            EngineCmd::Report(reply) => {
                reply.reply(self.report());
            }
        }
    }
}

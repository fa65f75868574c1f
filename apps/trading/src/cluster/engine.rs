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

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc::UnboundedSender;
use troupe::{Actor, ActorRef, Context, Signal};
use troupe_cluster::persistence::{
    Durability, Journal, LocalJournal, LogOptions, PersistenceError, Snapshot,
};

use super::applied::Applied;
use super::batches::{Answer, Answers, Forward, Forwarded};
use super::lease::{engine_name, LeaseRequest};
use super::state::{self, EngineState, Event};
use super::wire::{
    client_of, AckMode, ClientMsg, EngineCmd, EngineMessages, EngineReport, Recovery, Replica,
    StandbyAck, WireOrder,
};
use crate::engine_core::EngineCore;
use crate::txlog::TxLog;

/// The default snapshot interval, in logged events: a restart replays at
/// most this many events after the snapshot (a second or so), and a
/// snapshot costs a copy of the books (milliseconds) this rarely.
pub const SNAPSHOT_EVERY: u64 = 100_000;

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
    },
    Primary {
        /// The lease revision held now...
        epoch: u64,
        /// ...and the first one this engine held: renewals (`Solo`) keep
        /// the owner, so a standby that joined at any revision in between
        /// follows this primary.
        since: u64,
        /// The standby and the revision it joined at (its replication
        /// carries that one).
        standby: Option<(ActorRef<EngineCmd>, u64)>,
        /// Asked the keeper to go on alone; pending orders wait.
        going_solo: bool,
    },
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
    /// To the primary: its sequence number (request-reply).
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
            to_answer: VecDeque::new(),
            duplicates: 0,
            standby_gen: 0,
            lost_gen: 0,
            promoted_at_ns: None,
            first_order_after_promotion_ns: None,
            keeper,
        }
    }

    /// Takes this engine's place in the node's journal (once): the next
    /// fencing token, then, with `recover`, what the journal holds of it:
    /// the latest snapshot, then the events after it.
    fn open_log(&mut self, ctx: &mut Context<'_, Self>, recover: bool) {
        if self.journal.is_some() {
            return;
        }
        let Some(journal) = self.plan.journal.clone() else {
            return;
        };
        let started = std::time::Instant::now();
        let index = self.index;
        let fail = |what: &str, e: &dyn std::fmt::Display| -> ! {
            panic!("engine {index}: cannot {what} its log: {e}")
        };
        let id = self.persistence_id.clone();
        // The only writer of this id is this actor: the next token is
        // free, and the fence record it writes orders every append of an
        // earlier activation before this one's.
        let (last, token) = journal.position_of(&id);
        self.token = token + 1;
        let me = ctx.myself();
        journal.acquire(
            &id,
            Some(self.token),
            Box::new(move |r| {
                if let Err(e) = r {
                    me.tell(EngineCmd::LogFailed(e.to_string()));
                }
            }),
        );
        if !recover {
            // The sequence goes on from what is there; nothing of it is
            // read (see `open_fresh_log`).
            self.lsn = last;
            self.durable = last;
            self.snapshot_lsn = last;
            self.journal = Some(journal);
            return;
        }
        let mut from = (0, 0);
        if let Some(snapshot) = journal
            .load_snapshot(&id)
            .unwrap_or_else(|e| fail("read", &e))
        {
            let restored = state::decode(&snapshot.state).unwrap_or_else(|e| fail("read", &e));
            self.install(restored);
            from = (snapshot.seq_nr, snapshot.position);
        }
        let mut reader = state::EventReader::default();
        let mut each = |_seq_nr: u64, bytes: &[u8]| {
            match reader.read_stored(&id, bytes)? {
                Event::Order(order) => {
                    self.core.process(&order);
                    self.applied.insert(order.id);
                }
                Event::State(restored) => self.install(*restored),
            }
            Ok(())
        };
        let replayed = journal
            .replay(&id, from.0, from.1, &mut each)
            .unwrap_or_else(|e| fail("replay", &e));
        self.lsn = replayed.seq_nr;
        self.durable = self.lsn;
        self.durable_position = replayed.position;
        self.snapshot_lsn = from.0;
        self.recovery = Recovery {
            snapshot_seq_nr: from.0,
            replayed_events: replayed.events,
            micros: started.elapsed().as_micros() as u64,
        };
        self.journal = Some(journal);
    }

    /// Replaces the books and the applied ids with `restored`.
    fn install(&mut self, restored: EngineState) {
        self.core = restored.core;
        self.applied = restored.applied;
    }

    /// Takes this engine's place in the journal for joining a primary,
    /// without reading what the journal holds of it: a standby's books
    /// are its primary's state and what follows it, nothing else. Events
    /// left by an earlier life of this node (a whole-cluster restart) may
    /// hold orders its primary never logged, or the same orders in
    /// another order (the primary applied a retry later than the standby
    /// had), and replaying them would leave the standby's books different
    /// from the primary's. They stay in the shared log but count for
    /// nothing: the first event the standby records is the primary's
    /// whole state (`CatchUp`), and a replay installs a state event in
    /// place of everything before it. Until that event is durable the
    /// standby answers nothing (answers wait for durability in log
    /// order), and an order counts only once the primary's own record of
    /// it is durable, so nothing acknowledged rests on the events left.
    fn open_fresh_log(&mut self, ctx: &mut Context<'_, Self>) {
        self.open_log(ctx, false);
    }

    /// Applies `order` (not applied before) and appends its event; the
    /// returned lsn is durable once `durable` reaches it.
    fn apply(&mut self, order: WireOrder) -> u64 {
        let Some(new) = order.to_order() else {
            // Not a valid order: never acknowledged, never applied.
            return u64::MAX;
        };
        self.core.process(&new);
        self.applied.insert(order.id);
        let mut event = Vec::with_capacity(48);
        state::order_event(&new, &self.core, &mut event);
        let lsn = self.append(event);
        self.maybe_snapshot();
        lsn
    }

    /// Appends one event (already applied) as the next lsn: to the
    /// journal at the next flush ([`flush_log`](Self::flush_log)),
    /// durable once `Durable` comes back. Without a log it is durable at
    /// once.
    fn append(&mut self, event: Vec<u8>) -> u64 {
        self.lsn += 1;
        match &self.journal {
            Some(_) => self.unappended.push(event),
            None => self.durable = self.lsn,
        }
        self.lsn
    }

    /// Hands the events gathered to the journal as one unit (all or none
    /// survive a crash; one `Durable` for them all).
    fn flush_log(&mut self, ctx: &mut Context<'_, Self>) {
        let Some(journal) = &self.journal else {
            return;
        };
        if self.unappended.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.unappended);
        let lsn = self.lsn;
        let first = lsn + 1 - events.len() as u64;
        let me = ctx.myself();
        journal.append(
            &self.persistence_id,
            self.token,
            first,
            events,
            Box::new(move |result| match result {
                Ok(position) => me.tell(EngineCmd::Durable { lsn, position }),
                Err(e) => me.tell(EngineCmd::LogFailed(e.to_string())),
            }),
        );
    }

    /// Sends the orders gathered to the standby they were forwarded to
    /// (still the primary's standby: a change of standby flushes first).
    fn flush_forward(&mut self) {
        if self.forward.is_empty() {
            return;
        }
        match &self.role {
            Role::Primary {
                standby: Some((standby, joined)),
                ..
            } => {
                self.forward.send(standby, *joined);
                self.messages.replicate_out += 1;
            }
            _ => self.forward.clear(),
        }
    }

    /// Takes a snapshot of the state if `snapshot_every` events were
    /// appended since the last one: encoded here (a copy of the books:
    /// about 30 bytes a resting order), saved once the log is durable up
    /// to it ([`save_snapshot`](Self::save_snapshot)).
    fn maybe_snapshot(&mut self) {
        let every = self.plan.snapshot_every;
        if self.journal.is_none() || every == 0 || self.lsn - self.snapshot_lsn < every {
            return;
        }
        self.snapshot_lsn = self.lsn;
        self.unsaved_snapshot = Some(Snapshot {
            seq_nr: self.lsn,
            // At or before this event's record: replay starts there and
            // skips what the snapshot holds.
            position: self.durable_position,
            token: self.token,
            state: state::encode(&self.core, &self.applied),
        });
        self.save_snapshot();
    }

    /// Hands the snapshot taken to the journal's snapshot thread once
    /// every event it holds is durable in the log. Saved earlier, a crash
    /// could leave a snapshot ahead of the log: a restart would hold
    /// orders its log lacks, and its next append would not continue the
    /// log's sequence.
    fn save_snapshot(&mut self) {
        let (Some(journal), Some(snapshot)) = (&self.journal, &self.unsaved_snapshot) else {
            return;
        };
        if snapshot.seq_nr > self.durable {
            return;
        }
        let snapshot = self.unsaved_snapshot.take().expect("checked above");
        let index = self.index;
        journal.save_snapshot(
            &self.persistence_id,
            snapshot,
            Box::new(move |r| {
                if let Err(e) = r {
                    // Not fatal: the log still holds every event, and the
                    // next snapshot is tried as usual.
                    eprintln!("engine {index}: snapshot not saved: {e}");
                }
            }),
        );
    }

    /// Takes a client's orders (a receiver's batch for this engine).
    fn take_orders(&mut self, orders: Vec<WireOrder>, client: ActorRef<ClientMsg>, mode: AckMode) {
        let Role::Primary { standby, .. } = &self.role else {
            // Only the lease holder serves the engine's name; orders here
            // were routed before a change of hands. The client retries.
            return;
        };
        let has_standby = standby.is_some();
        self.messages.orders_in += 1;
        if self.promoted_at_ns.is_some() && self.first_order_after_promotion_ns.is_none() {
            self.first_order_after_promotion_ns = Some(now_ns());
        }
        for order in orders {
            if order.to_order().is_none() {
                // A field out of range (a peer of another version): neither
                // applied nor acknowledged, and kept out of the queue,
                // where it would hold up every order behind it.
                continue;
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            self.applied
                .settle_below(client_of(order.id), order.settled_below);
            let (lsn, standby_done) = if self.applied.contains(order.id) {
                // A retry: the original acknowledgement, once everything
                // applied so far (the original included) is durable and
                // replicated. One-way, the standby confirms it to the
                // client itself.
                self.duplicates += 1;
                if has_standby && mode == AckMode::OneWay {
                    self.forward.push(seq, order, Forwarded::Reconfirm(&client));
                }
                (self.lsn, true)
            } else {
                let lsn = self.apply(order);
                if has_standby {
                    let to = match mode {
                        AckMode::RequestReply => Forwarded::Primary,
                        AckMode::OneWay => Forwarded::Client(&client),
                    };
                    self.forward.push(seq, order, to);
                }
                // One-way, the standby answers the client, not us.
                (lsn, !has_standby || mode == AckMode::OneWay)
            };
            self.pending.push_back(Pending {
                client: client.clone(),
                id: order.id,
                mode,
                lsn,
                standby_done,
                gen: self.standby_gen,
            });
        }
        self.complete_front();
    }

    fn complete_front(&mut self) {
        let Role::Primary {
            going_solo: false,
            standby,
            ..
        } = &self.role
        else {
            return;
        };
        // One-way: the client completes the order once it also holds the
        // answer of the standby that joined at this revision (an order
        // forwarded to an earlier standby is completed by the client's
        // retry, which this standby confirms).
        let standby = standby.as_ref().map(|(_, joined)| *joined);
        while let Some(front) = self.pending.front() {
            if !(front.standby_done && front.lsn <= self.durable) {
                break;
            }
            let front = self.pending.pop_front().expect("front exists");
            self.first_pending += 1;
            let answer = match front.mode {
                AckMode::RequestReply => Answer::Ack,
                AckMode::OneWay => Answer::PrimaryDone(standby),
            };
            self.answers.add(&front.client, front.id, answer);
        }
    }

    fn answer(&mut self) {
        let (Role::Standby { epoch, primary } | Role::Joining { epoch, primary, .. }) = &self.role
        else {
            return;
        };
        let mut through = None;
        while let Some((lsn, _)) = self.to_answer.front() {
            if *lsn > self.durable {
                break;
            }
            match self.to_answer.pop_front().expect("front exists").1 {
                Owed::Primary(seq) => through = Some(seq),
                Owed::Client(client, id) => {
                    self.answers.add(&client, id, Answer::StandbyDone(*epoch))
                }
            }
        }
        if let Some(through) = through {
            primary.tell(EngineCmd::Replicated {
                epoch: *epoch,
                through,
            });
            self.messages.replicated_out += 1;
        }
    }

    fn follows(&self, epoch: u64) -> bool {
        matches!(self.role, Role::Standby { epoch: e, .. } | Role::Joining { epoch: e, .. } if e == epoch)
    }

    fn report(&self) -> EngineReport {
        let s = self.core.summary();
        EngineReport {
            node: self.node.clone(),
            role: self.role.name().to_string(),
            epoch: self.role.epoch(),
            standby_epoch: match &self.role {
                Role::Primary {
                    standby: Some((_, joined)),
                    ..
                } => Some(*joined),
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
        if standby.as_ref().is_some_and(|(s, _)| s.id() == id) {
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
        !(self.unappended.is_empty() && self.forward.is_empty() && self.answers.is_empty())
    }

    /// Sends everything gathered: the log's events, the standby's orders,
    /// the clients' answers.
    fn flush(&mut self, ctx: &mut Context<'_, Self>) {
        self.flush_log(ctx);
        self.flush_forward();
        self.messages.answers_out += std::mem::take(&mut self.answers).send();
    }

    /// A standby takes what its primary forwarded, in order.
    fn take_replicas(
        &mut self,
        epoch: u64,
        replicas: Vec<Replica>,
        clients: Vec<ActorRef<ClientMsg>>,
    ) {
        if !self.follows(epoch) {
            return; // from a primary we no longer follow
        }
        for Replica { seq, order, ack } in replicas {
            let client = match ack {
                StandbyAck::Primary => None,
                StandbyAck::Client(i) | StandbyAck::Reconfirm(i) => {
                    match clients.get(i as usize) {
                        Some(client) => Some(client.clone()),
                        // Names no client it carries: a malformed frame.
                        None => continue,
                    }
                }
            };
            if let StandbyAck::Reconfirm(_) = ack {
                // Applied at the primary before: everything applied so
                // far here, the original included, is covered once the
                // log is durable up to now. Never applied here.
                if let (Some(client), true) = (client, self.applied.contains(order.id)) {
                    self.to_answer
                        .push_back((self.lsn, Owed::Client(client, order.id)));
                }
                continue;
            }
            // The client's mark as the primary saw it: the primary
            // settled the same ids before this order.
            self.applied
                .settle_below(client_of(order.id), order.settled_below);
            let lsn = if self.applied.contains(order.id) {
                self.lsn
            } else {
                self.apply(order)
            };
            self.to_answer.push_back((
                lsn,
                match client {
                    None => Owed::Primary(seq),
                    Some(client) => Owed::Client(client, order.id),
                },
            ));
        }
        self.answer();
    }

    /// A primary hears that its standby holds every order it was sent up
    /// to sequence number `through`.
    fn replicated(&mut self, epoch: u64, through: u64) {
        let Role::Primary {
            standby: Some((_, joined)),
            ..
        } = &self.role
        else {
            return;
        };
        if epoch != *joined {
            return; // from a standby replaced since
        }
        let covered = through
            .checked_sub(self.first_pending)
            .map_or(0, |i| i.saturating_add(1));
        let gen = self.standby_gen;
        // Only what was forwarded to this standby: orders that waited for
        // one lost before are released by the lease (`Solo`) alone.
        for p in self
            .pending
            .iter_mut()
            .take(usize::try_from(covered).unwrap_or(usize::MAX))
            .filter(|p| p.gen == gen)
        {
            p.standby_done = true;
        }
        self.complete_front();
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
                replicas,
                clients,
            } => self.take_replicas(epoch, replicas, clients),
            EngineCmd::Replicated { epoch, through } => self.replicated(epoch, through),
            EngineCmd::Join { epoch, standby } => {
                let Role::Primary {
                    epoch: mine,
                    since,
                    standby: current,
                    going_solo,
                } = &mut self.role
                else {
                    return;
                };
                if epoch < *since || epoch > *mine {
                    return; // it follows another primary
                }
                if let Some((old, _)) = current.take() {
                    // Replaced before it was declared gone: what waits for
                    // it is released only as when it is lost (the lease
                    // renewed first: it might still be alive elsewhere).
                    ctx.unwatch(&old);
                    *going_solo = true;
                    self.lost_gen = self.standby_gen;
                    let _ = self.keeper.send(LeaseRequest::Solo { epoch: *mine });
                }
                // The state as of now; every order after it is forwarded.
                let bytes = state::encode(&self.core, &self.applied);
                let mut chunks = bytes.chunks(CATCH_UP_CHUNK).peekable();
                while let Some(chunk) = chunks.next() {
                    standby.tell(EngineCmd::CatchUp {
                        epoch,
                        state: chunk.to_vec(),
                        last: chunks.peek().is_none(),
                    });
                }
                ctx.watch(&standby);
                *current = Some((standby, epoch));
                self.standby_gen += 1;
            }
            EngineCmd::CatchUp { epoch, state, last } => {
                let Role::Joining {
                    epoch: e,
                    primary,
                    received,
                } = &mut self.role
                else {
                    return;
                };
                if *e != epoch {
                    return;
                }
                received.extend_from_slice(&state);
                if !last {
                    return;
                }
                let primary = primary.clone();
                let bytes = std::mem::take(received);
                let restored = state::decode(&bytes).unwrap_or_else(|e| {
                    panic!(
                        "engine {}: unreadable state from its primary: {e}",
                        self.index
                    )
                });
                self.install(restored);
                // Recorded before anything after it, so the log replays to
                // these books (answers wait for durability in log order).
                self.append(state::state_event(&bytes));
                self.role = Role::Standby { epoch, primary };
            }
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
            EngineCmd::Follow { epoch, primary } => {
                assert!(
                    matches!(self.role, Role::Idle),
                    "engine {} asked to follow a second primary; its node restarts instead",
                    self.index
                );
                self.open_fresh_log(ctx);
                primary.tell(EngineCmd::Join {
                    epoch,
                    standby: ctx.myself(),
                });
                self.role = Role::Joining {
                    epoch,
                    primary,
                    received: Vec::new(),
                };
            }
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

//! How an engine logs (see the parent module's docs, storage): its place
//! in the node's journal, the events it appends at each flush, and the
//! snapshots it saves once the log is durable up to them.

use troupe::Context;
use troupe_cluster::persistence::{Journal, Snapshot};

use super::super::state::{self, EngineState, Event};
use super::super::wire::{EngineCmd, Recovery, WireOrder};
use super::ClusterEngine;

impl ClusterEngine {
    /// Takes this engine's place in the node's journal (once): the next
    /// fencing token, then, with `recover`, what the journal holds of it:
    /// the latest snapshot, then the events after it.
    pub(super) fn open_log(&mut self, ctx: &mut Context<'_, Self>, recover: bool) {
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
        // free, and taking it is acknowledged only after every append an
        // earlier activation queued has been answered, so this one's
        // appends come after all of those (it writes no record itself).
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
    pub(super) fn install(&mut self, restored: EngineState) {
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
    pub(super) fn open_fresh_log(&mut self, ctx: &mut Context<'_, Self>) {
        self.open_log(ctx, false);
    }

    /// Applies `order` (not applied before) and appends its event; the
    /// returned lsn is durable once `durable` reaches it.
    pub(super) fn apply(&mut self, order: WireOrder) -> u64 {
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
    pub(super) fn append(&mut self, event: Vec<u8>) -> u64 {
        self.lsn += 1;
        match &self.journal {
            Some(_) => self.unappended.push(event),
            None => self.durable = self.lsn,
        }
        self.lsn
    }

    /// Hands the events gathered to the journal as one unit (all or none
    /// survive a crash; one `Durable` for them all).
    pub(super) fn flush_log(&mut self, ctx: &mut Context<'_, Self>) {
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

    /// Takes a snapshot of the state if `snapshot_every` events were
    /// appended since the last one: encoded here (a copy of the books:
    /// about 30 bytes a resting order), saved once the log is durable up
    /// to it ([`save_snapshot`](Self::save_snapshot)).
    pub(super) fn maybe_snapshot(&mut self) {
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
    pub(super) fn save_snapshot(&mut self) {
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
}

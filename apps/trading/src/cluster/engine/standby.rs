//! The standby's side of replication (see the parent module's docs,
//! standby and gaps): joining a primary, taking its catch-up, applying its
//! `Replicate`s only where they continue what is here, asking for the
//! state again on a gap, and answering once the log is durable.

use std::hash::{BuildHasher, Hasher};
use std::ops::Range;

use troupe::{ActorRef, Context};

use super::super::batches::Answer;
use super::super::state;
use super::super::wire::{client_of, ClientMsg, EngineCmd, Replica, StandbyAck};
use super::{now_ns, ClusterEngine, Owed, Role, JOIN_RETRY};

/// The key of the timer that asks for a catch-up again.
const JOIN_TIMER: &str = "join";

/// A session number no other engine draws (see `EngineCmd::Join`): the
/// standard library's per-process random hash keys, with the time.
fn fresh_session() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(now_ns());
    hasher.finish()
}

impl ClusterEngine {
    /// Starts following `primary`, which holds the lease at `epoch`: asks
    /// it for its state.
    pub(super) fn follow(
        &mut self,
        ctx: &mut Context<'_, Self>,
        epoch: u64,
        primary: ActorRef<EngineCmd>,
    ) {
        assert!(
            matches!(self.role, Role::Idle),
            "engine {} asked to follow a second primary; its node restarts instead",
            self.index
        );
        self.open_fresh_log(ctx);
        self.session = fresh_session();
        self.role = Role::Joining {
            epoch,
            primary,
            received: Vec::new(),
        };
        self.ask_for_state(ctx);
    }

    /// Sends the primary a `Join` of this session, and asks again after
    /// [`JOIN_RETRY`] unless its catch-up has come by then.
    fn ask_for_state(&mut self, ctx: &mut Context<'_, Self>) {
        let (Role::Joining { epoch, primary, .. } | Role::Standby { epoch, primary, .. }) =
            &self.role
        else {
            return;
        };
        primary.tell(EngineCmd::Join {
            epoch: *epoch,
            standby: ctx.myself(),
            session: self.session,
        });
        ctx.timers()
            .start_single(JOIN_TIMER, JOIN_RETRY, EngineCmd::RetryJoin);
    }

    /// The catch-up asked for has not come: ask again if still waiting.
    pub(super) fn retry_join(&mut self, ctx: &mut Context<'_, Self>) {
        if matches!(
            self.role,
            Role::Joining { .. }
                | Role::Standby {
                    resync: Some(_),
                    ..
                }
        ) {
            self.ask_for_state(ctx);
        }
    }

    /// A chunk of the primary's state, starting at `offset`; with `last`,
    /// the state as of the primary's sequence number `next`, installed if
    /// this engine waits for one (joining, or after a gap). A chunk that
    /// does not continue the ones before (one was lost) drops them: the
    /// timer asks again.
    pub(super) fn catch_up(
        &mut self,
        ctx: &mut Context<'_, Self>,
        epoch: u64,
        next: u64,
        offset: u64,
        chunk: Vec<u8>,
        last: bool,
    ) {
        let received = match &mut self.role {
            Role::Joining {
                epoch: e, received, ..
            }
            | Role::Standby {
                epoch: e,
                resync: Some(received),
                ..
            } if *e == epoch => received,
            // Not waiting for one: a second answer to a `Join` asked
            // again, or for another revision. What this engine holds goes
            // on from where it is.
            _ => return,
        };
        if offset == 0 {
            received.clear();
        }
        if offset != received.len() as u64 {
            received.clear();
            return;
        }
        received.extend_from_slice(&chunk);
        if !last {
            return;
        }
        let bytes = std::mem::take(received);
        let restored = state::decode(&bytes).unwrap_or_else(|e| {
            panic!(
                "engine {}: unreadable state from its primary: {e}",
                self.index
            )
        });
        let primary = match &self.role {
            Role::Joining { primary, .. } | Role::Standby { primary, .. } => primary.clone(),
            _ => unreachable!("matched above"),
        };
        self.install(restored);
        // Recorded before anything after it, so the log replays to these
        // books (answers wait for durability in log order).
        self.append(state::state_event(&bytes));
        self.expected = next;
        self.role = Role::Standby {
            epoch,
            primary,
            resync: None,
        };
        ctx.timers().cancel(JOIN_TIMER);
        // Everything the primary sent before this state is in it: once it
        // is durable here, the answer covers it (orders that waited for a
        // `Replicate` lost in a gap are released then).
        if let Some(through) = next.checked_sub(1) {
            self.to_answer.push_back((self.lsn, Owed::Primary(through)));
        }
        self.answer();
    }

    /// A standby takes what its primary forwarded, the primary's sequence
    /// numbers `range`: applied if it continues what is here, a gap
    /// otherwise.
    pub(super) fn take_replicas(
        &mut self,
        ctx: &mut Context<'_, Self>,
        epoch: u64,
        range: Range<u64>,
        replicas: Vec<Replica>,
        clients: Vec<ActorRef<ClientMsg>>,
    ) {
        match &self.role {
            Role::Standby {
                epoch: e,
                resync: None,
                ..
            } if *e == epoch => {}
            // Waiting for the state asked for after a gap: this was sent
            // before it (messages keep their order on the way), and the
            // state holds it. Joining: the same, or the catch-up was lost
            // and the timer asks again. Another revision: from a primary
            // this engine no longer follows.
            _ => return,
        }
        if range.start != self.expected {
            self.gaps += 1;
            if let Role::Standby { resync, .. } = &mut self.role {
                *resync = Some(Vec::new());
            }
            self.ask_for_state(ctx);
            return;
        }
        self.expected = range.end;
        // An empty one is a probe: answer again.
        let mut answer_primary = replicas.is_empty();
        for Replica { order, ack } in replicas {
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
            match client {
                None => answer_primary = true,
                Some(client) => self
                    .to_answer
                    .push_back((lsn, Owed::Client(client, order.id))),
            }
        }
        // Everything up to the range's end is here once the log is durable
        // up to now: the range continued what was here.
        if let (true, Some(through)) = (answer_primary, range.end.checked_sub(1)) {
            self.to_answer.push_back((self.lsn, Owed::Primary(through)));
        }
        self.answer();
    }

    /// Sends what is owed for the records now durable: one answer to the
    /// primary for the latest sequence number covered, and the clients'.
    pub(super) fn answer(&mut self) {
        let (Role::Standby { epoch, primary, .. } | Role::Joining { epoch, primary, .. }) =
            &self.role
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
}

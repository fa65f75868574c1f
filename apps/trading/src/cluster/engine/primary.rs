//! The primary's side of replication (see the parent module's docs): it
//! takes the clients' orders, forwards them to its standby as ranges of
//! its sequence numbers, acknowledges in order once its own record is
//! durable and the standby answered, and answers a standby's `Join` with
//! its state.

use troupe::{ActorRef, Context};

use super::super::batches::{Answer, Forwarded};
use super::super::lease::LeaseRequest;
use super::super::state;
use super::super::wire::{client_of, AckMode, ClientMsg, EngineCmd, WireOrder};
use super::{now_ns, Attached, ClusterEngine, Pending, Role, CATCH_UP_CHUNK};

impl ClusterEngine {
    /// Sends the orders gathered to the standby they were forwarded to
    /// (still the primary's standby: a change of standby flushes first),
    /// as the range of sequence numbers since the last `Replicate`; with
    /// nothing gathered, a probe if one is due.
    pub(super) fn flush_forward(&mut self) {
        let probe = std::mem::take(&mut self.probe);
        if self.forward.is_empty() && !probe {
            return;
        }
        match &self.role {
            Role::Primary {
                standby: Some(attached),
                ..
            } => {
                let (from, to) = (self.forwarded_to, self.next_seq);
                self.forward
                    .send(&attached.standby, attached.joined, from, to);
                self.forwarded_to = to;
                self.messages.replicate_out += 1;
            }
            _ => self.forward.clear(),
        }
    }

    /// Takes a client's orders (a receiver's batch for this engine).
    pub(super) fn take_orders(
        &mut self,
        orders: Vec<WireOrder>,
        client: ActorRef<ClientMsg>,
        mode: AckMode,
    ) {
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
        let mut resent = false;
        for order in orders {
            if order.to_order().is_none() {
                // A field out of range (a peer of another version): neither
                // applied nor acknowledged, and kept out of the queue,
                // where it would hold up every order behind it.
                continue;
            }
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
                    self.forward.push(order, Forwarded::Reconfirm(&client));
                }
                resent |= mode == AckMode::RequestReply;
                (self.lsn, true)
            } else {
                let lsn = self.apply(order);
                if has_standby {
                    let to = match mode {
                        AckMode::RequestReply => Forwarded::Primary,
                        AckMode::OneWay => Forwarded::Client(&client),
                    };
                    self.forward.push(order, to);
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
        // A client resends what was not acknowledged: if something waits
        // for the standby, its `Replicate` or its answer may have been
        // lost, and a probe finds out (see the module docs).
        if resent && has_standby && self.pending.iter().any(|p| !p.standby_done) {
            self.probe = true;
        }
        self.complete_front();
    }

    pub(super) fn complete_front(&mut self) {
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
        let standby = standby.as_ref().map(|a| a.joined);
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

    /// A primary hears that its standby holds every order it was sent up
    /// to sequence number `through`.
    pub(super) fn replicated(&mut self, epoch: u64, through: u64) {
        let Role::Primary {
            standby: Some(attached),
            ..
        } = &self.role
        else {
            return;
        };
        if epoch != attached.joined {
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

    /// A primary takes `standby`'s `Join` at revision `epoch`: a new
    /// standby, or (the same `session`) its standby asking for the state
    /// again. Either way it sends its state as of now, and replication
    /// goes on from here.
    pub(super) fn join(
        &mut self,
        ctx: &mut Context<'_, Self>,
        epoch: u64,
        standby: ActorRef<EngineCmd>,
        session: u64,
    ) {
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
        let again = current
            .as_ref()
            .is_some_and(|a| a.session == session && a.joined == epoch);
        if !again {
            if let Some(old) = current.take() {
                // Replaced before it was declared gone: what waits for it
                // is released only as when it is lost (the lease renewed
                // first: it might still be alive elsewhere).
                ctx.unwatch(&old.standby);
                *going_solo = true;
                self.lost_gen = self.standby_gen;
                let _ = self.keeper.send(LeaseRequest::Solo { epoch: *mine });
            }
            ctx.watch(&standby);
            *current = Some(Attached {
                standby,
                joined: epoch,
                session,
            });
            self.standby_gen += 1;
        }
        // Asked again, the standby that found a gap holds what it was
        // answered for, and this state covers every order waiting for it:
        // its first answer after it releases them.
        let to = current.as_ref().expect("attached above").standby.clone();
        let next = self.next_seq;
        let bytes = state::encode(&self.core, &self.applied);
        let mut offset = 0;
        let mut chunks = bytes.chunks(CATCH_UP_CHUNK).peekable();
        loop {
            let chunk = chunks.next().unwrap_or_default();
            let last = chunks.peek().is_none();
            to.tell(EngineCmd::CatchUp {
                epoch,
                next,
                offset,
                state: chunk.to_vec(),
                last,
            });
            offset += chunk.len() as u64;
            if last {
                break;
            }
        }
        self.forwarded_to = next;
    }
}

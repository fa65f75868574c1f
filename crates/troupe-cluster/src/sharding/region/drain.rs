//! Draining a route: how one node's messages to an entity keep their order
//! when the entity's shard moves.
//!
//! This node's senders send a shard's messages along one route at a time:
//! to the node that owns it by this region's view (through the lane, or
//! forwarded by the region). When the view names another owner, messages
//! already sent to the old one are still on their way: delivered there
//! before its shard stopped, held there and forwarded to the new owner,
//! or lost with a node that died. Sending the next ones straight to the
//! new owner could overtake those forwarded. So the region first sends a
//! marker (`Body::Flush`) along the old route, holds this node's new
//! messages for the shard, and sends them on only when the owner the
//! marker reached answers (`Body::Flushed`, sent to this node's published
//! name, not back along the route, whose nodes may be leaving): every
//! region on the way handles envelopes in order and forwards them in
//! order, so the marker reaches the owner after every message sent
//! before it, each of which was by then handed to that owner's shard (or
//! lost).
//!
//! When the old route's region is gone, what it held is lost, and what
//! it forwarded before it went was published before its end was, so the
//! server hands it to any node before what this node publishes next. The
//! region learns it from `Terminated` (its node left, or this node
//! declared it down), or at once from the marker itself: it is sent as an
//! ask that the old route's node answers on arrival, so a node that died
//! is known by the server's "no responders" within a round trip, not a
//! heartbeat timeout later (its shards were moved by a node that declared
//! it down first). If the shard's owner is
//! another node, the drain ends there. If it is this node, whose own
//! messages would not pass the server, the marker goes again, to this
//! node's own name through the server, behind whatever the gone region
//! forwarded here. A drain ends in any case after [`DRAIN_TIMEOUT`]
//! (logged, counted in `RegionStats::drain_timeouts`): a node cut off
//! from the others may forward what it held much later, and nothing then
//! orders it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use troupe::{Actor, ActorRef, AskError, Context, Props};

use super::{Region, RegionMsg};
use crate::sharding::envelope::{Body, Envelope};
use crate::sharding::EntityContext;

/// How long a region holds its node's new messages for a moved shard
/// waiting for the marker's answer, at most.
pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The region's drains.
pub(crate) struct Drains {
    next_id: u64,
    /// Per shard: the node this node's messages for it last went to, if
    /// another node.
    sent_to: Vec<Option<String>>,
    /// Shards whose old route is draining: the marker's id and the node
    /// it was sent to.
    waiting: HashMap<u32, (u64, String)>,
}

impl Drains {
    pub(crate) fn new(shards: u32) -> Self {
        Drains {
            next_id: 0,
            sent_to: vec![None; shards as usize],
            waiting: HashMap::new(),
        }
    }

    /// This node's messages for `shard` go to `node` now (`None`: here).
    pub(crate) fn sent(&mut self, shard: u32, node: Option<&str>) {
        if let Some(slot) = self.sent_to.get_mut(shard as usize) {
            if slot.as_deref() != node {
                *slot = node.map(str::to_string);
            }
        }
    }

    /// Whether this node's messages for `shard` wait for a drain.
    pub(crate) fn draining(&self, shard: u32) -> bool {
        self.waiting.contains_key(&shard)
    }

    /// The view of `shard` now names `owner`: if this node's messages
    /// went to another node before, and no drain runs yet, the route must
    /// drain. Returns the node to send the marker to and its id.
    pub(crate) fn must_drain(&mut self, shard: u32, owner: Option<&str>) -> Option<(String, u64)> {
        let slot = self.sent_to.get_mut(shard as usize)?;
        match slot.as_deref() {
            Some(old) if Some(old) != owner => {}
            _ => return None,
        }
        let old = slot.take()?;
        if self.waiting.contains_key(&shard) {
            return None;
        }
        Some((old, self.fresh_id()))
    }

    /// A new marker's id.
    pub(crate) fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The marker `id` for `shard` went to `via`.
    pub(crate) fn started(&mut self, shard: u32, via: String, id: u64) {
        self.waiting.insert(shard, (id, via));
    }

    /// `node`'s region is gone: the drains through it end. Returns their
    /// shards.
    pub(crate) fn gone(&mut self, node: &str) -> Vec<u32> {
        let shards: Vec<u32> = self
            .waiting
            .iter()
            .filter(|(_, (_, via))| via == node)
            .map(|(shard, _)| *shard)
            .collect();
        for shard in &shards {
            self.waiting.remove(shard);
        }
        shards
    }

    /// The drain of `shard` with marker `id` is over: the node it went
    /// through, if it was still waiting.
    pub(crate) fn end(&mut self, shard: u32, id: u64) -> Option<String> {
        match self.waiting.get(&shard) {
            Some((waiting, _)) if *waiting == id => self.waiting.remove(&shard).map(|(_, via)| via),
            _ => None,
        }
    }
}

impl<A, F, M> Region<A, F, M>
where
    A: Actor,
    A::Msg: From<M>,
    M: Send + 'static,
    F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
{
    /// The view of `shard` changed: if this node's earlier messages for it
    /// went to a node that no longer owns it, send a marker after them
    /// and hold the next ones until it is answered.
    pub(super) fn drain_if_moved(&mut self, ctx: &mut Context<'_, Self>, shard: u32) {
        let view = &self.views[shard as usize];
        let Some((via, id)) = self.drains.must_drain(shard, view.owner.as_deref()) else {
            return;
        };
        match self.peers.get(&via).cloned() {
            Some(peer) => self.send_marker(ctx, shard, via, id, &peer),
            None => self.drain_gone_route(ctx, shard, &via),
        }
    }

    /// A marker from `origin` reached this node, which owns `shard`:
    /// everything `origin` sent before it has been handed to the shard
    /// here (or lost), so `origin` may send on.
    pub(super) fn answer_marker(
        &mut self,
        ctx: &mut Context<'_, Self>,
        shard: u32,
        origin: String,
        id: u64,
    ) {
        if origin == self.me {
            self.drained(ctx, shard, id);
            return;
        }
        if let Some(region) = self.published(&origin) {
            region.tell(Envelope {
                shard,
                rev: 0,
                hops: 1,
                body: Body::Flushed { id },
            });
        }
    }

    /// The marker `id` of `shard` was answered: this node's held messages
    /// for it go on, in order.
    pub(super) fn drained(&mut self, ctx: &mut Context<'_, Self>, shard: u32, id: u64) {
        if let Some(via) = self.drains.end(shard, id) {
            tracing::debug!(me = %self.me, shard, id, via = %via, "sharding: the old route drained");
            self.release(ctx, shard);
        }
    }

    /// The drain of `shard` with marker `id` had no answer in time.
    pub(super) fn drain_timed_out(&mut self, ctx: &mut Context<'_, Self>, shard: u32, id: u64) {
        if let Some(via) = self.drains.end(shard, id) {
            self.counters.drain_timeouts.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(region = %self.type_name, shard, via = %via, timeout = ?DRAIN_TIMEOUT, "sharding: the old route of a moved shard did not drain in time; sending on (a message still on that route may arrive after later ones)");
            self.release(ctx, shard);
        }
    }

    /// The node the marker `id` of `shard` went to did not take it (the
    /// server found nobody serving the name: the node died or left): the
    /// drain goes on as for a gone route, at once rather than when this
    /// node declares that node down.
    pub(super) fn drain_unreachable(&mut self, ctx: &mut Context<'_, Self>, shard: u32, id: u64) {
        if let Some(via) = self.drains.end(shard, id) {
            tracing::debug!(me = %self.me, shard, id, via = %via, "sharding: the old route's node is gone");
            self.drain_gone_route(ctx, shard, &via);
            self.release(ctx, shard);
        }
    }

    /// `node`'s region ended: the drains through it go on as for a gone
    /// route.
    pub(super) fn drains_gone(&mut self, ctx: &mut Context<'_, Self>, node: &str) {
        for shard in self.drains.gone(node) {
            self.drain_gone_route(ctx, shard, node);
            self.release(ctx, shard);
        }
    }

    /// The region this node's messages for `shard` went to, on `via`, is
    /// gone. What it held is lost; what it forwarded before it went was
    /// published before its end was, so it reaches any other node before
    /// what this node sends next through the server. Only this node's own
    /// shard could see later messages first (they would not pass the
    /// server): then the marker goes to this node's own name through the
    /// server, behind whatever the gone region forwarded here.
    fn drain_gone_route(&mut self, ctx: &mut Context<'_, Self>, shard: u32, via: &str) {
        let here = self.views[shard as usize].owner.as_deref() == Some(self.me.as_str());
        if !here || via == self.me {
            return;
        }
        let me = self.me.clone();
        if let Some(route) = self.published(&me) {
            let id = self.drains.fresh_id();
            self.send_marker(ctx, shard, me, id, &route);
        }
    }

    /// Sends the marker `id` for `shard` to `via` (through `route`) and
    /// holds this node's next messages for the shard until it is answered
    /// (or [`DRAIN_TIMEOUT`]).
    fn send_marker(
        &mut self,
        ctx: &mut Context<'_, Self>,
        shard: u32,
        via: String,
        id: u64,
        route: &ActorRef<Envelope<M>>,
    ) {
        let view = &self.views[shard as usize];
        tracing::debug!(me = %self.me, shard, via = %via, id, now = ?view.owner, "sharding: draining the old route of a moved shard");
        let (rev, origin) = (view.rev, self.me.clone());
        if via == self.me {
            route.tell(Envelope {
                shard,
                rev,
                hops: 1,
                body: Body::Flush {
                    origin,
                    id,
                    reach: None,
                },
            });
        } else {
            // An ask, answered by the old route's node on arrival: a node
            // that died is known at once by the server's "no responders".
            let reach = route.ask(
                |reach| Envelope {
                    shard,
                    rev,
                    hops: 1,
                    body: Body::Flush {
                        origin,
                        id,
                        reach: Some(reach),
                    },
                },
                DRAIN_TIMEOUT,
            );
            if let Some(region) = self.myself.clone() {
                reach.on_answer(move |answer| match answer {
                    // Taken, or no answer in time (the timer below covers it).
                    Ok(()) | Err(AskError::Timeout { .. }) => {}
                    Err(_) => region.tell(RegionMsg::DrainUnreachable { shard, id }),
                });
            }
        }
        self.counters.drains.fetch_add(1, Ordering::Relaxed);
        self.drains.started(shard, via, id);
        ctx.schedule_once(DRAIN_TIMEOUT, RegionMsg::DrainTimeout { shard, id });
    }

    /// The region of `node` by its published name, through the server
    /// (made once per node).
    fn published(&mut self, node: &str) -> Option<ActorRef<Envelope<M>>> {
        if let Some(region) = self.by_name.get(node) {
            return Some(region.clone());
        }
        let region = (self.name_ref)(node)?;
        self.by_name.insert(node.to_string(), region.clone());
        Some(region)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_drains_once_when_its_owner_changes_and_not_otherwise() {
        let mut d = Drains::new(4);
        // Nothing sent yet, or sent here: no drain.
        assert_eq!(d.must_drain(1, Some("b")), None);
        d.sent(1, None);
        assert_eq!(d.must_drain(1, Some("b")), None);
        // Sent to b; the owner is still b: no drain.
        d.sent(1, Some("b"));
        assert_eq!(d.must_drain(1, Some("b")), None);
        // The owner is c now: drain through b, once.
        let (via, id) = d.must_drain(1, Some("c")).unwrap();
        assert_eq!(via, "b");
        d.started(1, via, id);
        assert!(d.draining(1));
        assert_eq!(d.must_drain(1, None), None);
        // A stale answer does not end it; the right one does.
        assert_eq!(d.end(1, id + 1), None);
        assert_eq!(d.end(1, id).as_deref(), Some("b"));
        assert!(!d.draining(1));
    }
}

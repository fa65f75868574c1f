//! Keeping the region's lanes (`../lanes.rs`) true: which route a
//! shard's lane may take, and the region's handling of an envelope or a
//! change of view under the lane's lock, so that no sender takes a lane
//! the region is changing.

use troupe::{Actor, Context, Props};

use super::Region;
use crate::sharding::lanes::{Lane, Open, Route};
use crate::sharding::EntityContext;

impl<A, F, M> Region<A, F, M>
where
    A: Actor,
    A::Msg: From<M>,
    M: Send + 'static,
    F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
{
    /// The route `shard`'s lane may take now, if it is settled: the owner
    /// and the way to it known, nothing held, no move or drain under way.
    pub(super) fn settled(&mut self, shard: u32) -> Option<Open<M>> {
        if self.fenced
            || self.handing_off.contains_key(&shard)
            || self.stopping.contains(&shard)
            || self.held.contains_key(&shard)
            || self.drains.draining(shard)
        {
            return None;
        }
        let view = self.views.get(shard as usize)?;
        let owner = view.owner.as_deref()?;
        let route = if owner == self.me {
            Route::Here(self.local.get(&shard)?.clone())
        } else {
            let peer = self.peers.get(owner)?.clone();
            // The lane's sends are this node's sends to `owner`.
            self.drains.sent(shard, Some(owner));
            Route::There(peer)
        };
        Some(Open {
            route,
            rev: view.rev,
        })
    }

    /// Sets `lane` (locked) to what `shard`'s state allows now.
    pub(super) fn reopen(&mut self, shard: u32, lane: &mut Lane<M>) {
        lane.open = self.settled(shard);
    }

    /// Runs `f` with every lane locked, then sets each to its state.
    pub(super) fn with_all_lanes(
        &mut self,
        ctx: &mut Context<'_, Self>,
        f: impl FnOnce(&mut Self, &mut Context<'_, Self>),
    ) {
        let lanes = self.lanes.clone();
        let mut locked: Vec<_> = (0..self.views.len() as u32)
            .filter_map(|shard| lanes.lock(shard))
            .collect();
        f(self, ctx);
        for (shard, lane) in locked.iter_mut().enumerate() {
            self.reopen(shard as u32, lane);
        }
    }

    /// Runs `f` with `shard`'s lane locked, then sets it to its state.
    pub(super) fn with_lane(
        &mut self,
        ctx: &mut Context<'_, Self>,
        shard: u32,
        f: impl FnOnce(&mut Self, &mut Context<'_, Self>, Option<&mut Lane<M>>),
    ) {
        let lanes = self.lanes.clone();
        let mut lane = lanes.lock(shard);
        f(self, ctx, lane.as_deref_mut());
        if let Some(lane) = lane.as_deref_mut() {
            self.reopen(shard, lane);
        }
    }
}

//! A coordinator after a stall of its node's process: step down (hand
//! every shard over, never to itself, and give up the region key), then
//! rejoin (take the key again) as soon as the others cannot have declared
//! the node down. See the header of `coordinator.rs`.

use std::time::Duration;

use troupe_remote::RemoteMessage;

use super::Coordinator;
use crate::sharding::region::RegionMsg;

impl<M: RemoteMessage> Coordinator<M> {
    /// Whether this node must not take shards now because its process
    /// stalled: a stall past half the heartbeat timeout that was not
    /// handled yet (the others may have declared this node down and moved
    /// its shards meanwhile) makes the region stop its shards at once, and
    /// the next tick hands over what this node still owns. Checked before
    /// every decision that could give this node a shard.
    pub(super) fn check_stall(&mut self) -> bool {
        if self.plan.proxy {
            return false;
        }
        if self.stepping_down {
            return true;
        }
        // The last stall, not the longest: a later, shorter stall past
        // half the timeout needs a step-down of its own.
        let Some(stall) = self.node.last_stall() else {
            return false;
        };
        if self.handled_stall == Some(stall.ended)
            || stall.lasted < self.node.config().heartbeat_timeout / 2
        {
            return false;
        }
        self.handled_stall = Some(stall.ended);
        tracing::warn!(
            region = %self.plan.type_name,
            stall = ?stall.lasted,
            heartbeat_timeout = ?self.node.config().heartbeat_timeout,
            "sharding: this node's process stalled past half the heartbeat timeout, so the \
             others may have declared it down; it stops its shards, hands them to the other \
             nodes, and hosts shards again once the others cannot have counted it down"
        );
        self.hosting = false;
        self.stepping_down = true;
        self.region.tell(RegionMsg::Fenced(true));
        true
    }

    /// Hands every shard this node still owns to the other live region
    /// nodes (never to itself; released if there is none), gives up its
    /// region key, and lets the region route again; then rejoins at once
    /// if it may.
    pub(super) async fn step_down(&mut self) {
        self.stepping_down = false;
        let _ = self.load().await;
        let me = self.me().to_string();
        let mine: Vec<u32> = (0..self.plan.shards)
            .filter(|s| self.owners[*s as usize].0.as_deref() == Some(me.as_str()))
            .collect();
        for shard in mine {
            let target = self.least_loaded(|n| n == me);
            self.hand_off(shard, target).await;
        }
        let key = self.region_key(&me);
        if let Some(rev) = self.regions.get(&me).copied() {
            if self.leases.release(&key, rev).await.is_ok() {
                self.regions.remove(&me);
            }
        }
        let stall = self.node.last_stall().map_or(Duration::ZERO, |s| s.lasted);
        self.stepped_down = Some(stall);
        self.region.tell(RegionMsg::Fenced(false));
        if self.may_rejoin() {
            self.rejoin().await;
        } else {
            tracing::warn!(
                region = %self.plan.type_name,
                ?stall,
                "sharding: this node stalled long enough that the others may have declared \
                 it down for good, and it could not draw a new incarnation (see the node's \
                 log): it only routes until it is restarted"
            );
        }
    }

    /// Whether a node that stepped down may host again: the others cannot
    /// have declared it down. They do so after `heartbeat_timeout` without
    /// a heartbeat, and saw none for at most the stall plus about two
    /// heartbeat intervals (the one due before it and the first after it,
    /// and the stall may be measured up to a quarter of an interval
    /// short), so a stall shorter than the timeout by two and a half
    /// intervals was never taken for a death. Nor was any stall if no
    /// other node is up, and a new incarnation of this node is a new
    /// member to the others whatever they thought of the old one.
    pub(super) fn may_rejoin(&self) -> bool {
        let Some(stall) = self.stepped_down else {
            return false;
        };
        let config = self.node.config();
        let margin = config.heartbeat_interval * 5 / 2;
        stall + margin < config.heartbeat_timeout
            || self.node.members().len() == 1
            || self.node.incarnation() != self.registered_incarnation
    }

    /// Takes the region key again after a step-down: the node hosts
    /// shards from now on (rebalancing brings some).
    pub(super) async fn rejoin(&mut self) {
        self.hosting = true;
        match self.register().await {
            Ok(()) => {
                self.stepped_down = None;
                tracing::info!(region = %self.plan.type_name, "sharding: this node hosts shards again after its stall");
            }
            Err(e) => {
                self.hosting = false;
                tracing::warn!(region = %self.plan.type_name, error = %e, "sharding: cannot take the region key again; trying on the next tick");
            }
        }
    }
}

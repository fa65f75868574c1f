//! A coordinator's changes of shard owners: allocate a shard nobody owns,
//! move a gone node's shards, hand a shard over (rebalance, leave), and
//! register this node's region. Each is one compare-and-set on a lease.
//! See the header of `coordinator.rs`.

use tokio::sync::oneshot;
use troupe_remote::RemoteMessage;

use super::Coordinator;
use crate::lease::{Holder, LeaseChange, LeaseError};
use crate::sharding::region::RegionMsg;

impl<M: RemoteMessage> Coordinator<M> {
    pub(super) async fn allocate(&mut self, shard: u32) {
        if self.check_stall() {
            // Given an owner once this node has stepped down.
            self.pending.insert(shard);
            return;
        }
        let (owner, rev) = self.owners[shard as usize].clone();
        if owner.is_some() {
            // Known already (the region's view was behind): tell it again.
            self.pending.remove(&shard);
            self.region.tell(RegionMsg::Owner {
                shard,
                owner: owner.map(|node| Holder {
                    node,
                    revision: rev,
                }),
                rev,
            });
            return;
        }
        // No node runs a region of the type yet (this is a proxy, or the
        // others have not been heard yet): try again on the next tick.
        let Some(target) = self.least_loaded(|_| false) else {
            self.pending.insert(shard);
            return;
        };
        let key = self.shard_key(shard);
        match self.leases.create_for(&key, &target).await {
            Ok(Some(rev)) => {
                self.pending.remove(&shard);
                self.apply(
                    &key,
                    LeaseChange::Held(Holder {
                        node: target,
                        revision: rev,
                    }),
                );
            }
            // Someone else allocated it: the watch brings the owner.
            Ok(None) => {
                self.pending.remove(&shard);
            }
            Err(e) => {
                tracing::warn!(shard, error = %e, "sharding: cannot allocate a shard; trying again");
                self.pending.insert(shard);
            }
        }
    }

    /// Moves every shard owned by a node that is not live to a live one.
    ///
    /// The moves are planned first (each to the least loaded live node,
    /// counting the moves planned before it; ties by name, not this node
    /// first, so that every node with the same view plans the same moves
    /// and their compare-and-sets agree instead of splitting the shards by
    /// who was first), then made all at once: one after the other, a node
    /// whose 33 shards moved took 33 round trips to the server, 600-800 ms
    /// under load, while the entities of the last shards waited.
    pub(super) async fn reallocate_orphans(&mut self, orphaned: impl Fn(&str) -> bool) {
        if self.check_stall() {
            // Tried again on the next Down or tick, after the step-down.
            return;
        }
        let orphans: Vec<(u32, u64)> = self
            .owners
            .iter()
            .enumerate()
            .filter_map(|(s, (o, rev))| match o {
                Some(o) if o != self.me() && orphaned(o) => Some((s as u32, *rev)),
                _ => None,
            })
            .collect();
        let mut loads = self.loads(&orphaned);
        if orphans.is_empty() || loads.is_empty() {
            return;
        }
        let mut plan = Vec::with_capacity(orphans.len());
        for (shard, rev) in orphans {
            loads.sort();
            loads[0].0 += 1;
            plan.push((shard, rev, loads[0].1.clone()));
        }
        let leases = &self.leases;
        let moves = plan.into_iter().map(|(shard, rev, target)| {
            let key = self.shard_key(shard);
            async move {
                let moved = leases.move_to(&key, rev, &target).await;
                (shard, key, target, moved)
            }
        });
        for (shard, key, target, moved) in futures_util::future::join_all(moves).await {
            match moved {
                Ok(new) => {
                    tracing::info!(shard, to = %target, "sharding: moved a shard off a node that is gone");
                    self.apply(
                        &key,
                        LeaseChange::Held(Holder {
                            node: target,
                            revision: new,
                        }),
                    );
                }
                // Another node moved it first: the watch says where.
                Err(LeaseError::Moved { .. }) => {}
                Err(e) => tracing::warn!(shard, error = %e, "sharding: cannot move a shard"),
            }
        }
    }

    /// Hands `shard` (owned here) to `target`, or releases it (`None`).
    pub(super) async fn hand_off(&mut self, shard: u32, target: Option<String>) {
        let (owner, rev) = self.owners[shard as usize].clone();
        if owner.as_deref() != Some(self.me()) {
            return;
        }
        let (done, stopped) = oneshot::channel();
        tracing::debug!(me = %self.leases.me(), shard, to = ?target, "sharding: handing a shard over");
        self.region.tell(RegionMsg::HandOff { shard, done });
        // The region stops the shard (its entities first) and answers; if
        // the region is gone, so are its shards.
        let _ = stopped.await;
        let key = self.shard_key(shard);
        match target {
            Some(target) => match self.leases.move_to(&key, rev, &target).await {
                Ok(new) => {
                    tracing::info!(shard, to = %target, "sharding: handed a shard over");
                    self.apply(
                        &key,
                        LeaseChange::Held(Holder {
                            node: target,
                            revision: new,
                        }),
                    );
                }
                Err(e) => {
                    tracing::warn!(shard, error = %e, "sharding: handoff failed; the shard stays where the lease says")
                }
            },
            None => {
                if let Err(e) = self.leases.release(&key, rev).await {
                    tracing::warn!(shard, error = %e, "sharding: cannot release a shard");
                }
            }
        }
        self.region.tell(RegionMsg::HandOffEnded(shard));
    }

    /// One round of least-shards rebalancing, from this node's side.
    pub(super) async fn rebalance(&mut self) {
        if self.check_stall() || !self.hosting {
            return;
        }
        for _ in 0..self.plan.rebalance_limit {
            let loads = self.loads(|_| false);
            let mine = loads
                .iter()
                .find(|(_, n)| n == self.me())
                .map_or(0, |l| l.0);
            let Some((least, target)) = loads.into_iter().find(|(_, n)| n != self.me()) else {
                return;
            };
            if mine <= least + 1 {
                return;
            }
            let Some(shard) = self
                .owners
                .iter()
                .rposition(|(o, _)| o.as_deref() == Some(self.me()))
            else {
                return;
            };
            self.hand_off(shard as u32, Some(target)).await;
        }
    }

    pub(super) async fn leave(&mut self) {
        let mine: Vec<u32> = (0..self.plan.shards)
            .filter(|s| self.owners[*s as usize].0.as_deref() == Some(self.me()))
            .collect();
        for shard in mine {
            let me = self.me().to_string();
            let target = self.least_loaded(|n| n == me);
            self.hand_off(shard, target).await;
        }
        let key = self.region_key(self.me());
        if let Some(rev) = self.regions.get(self.me()).copied() {
            let _ = self.leases.release(&key, rev).await;
        }
        for (_, finder) in self.finders.drain() {
            finder.abort();
        }
        let name = Self::region_name(&self.plan.type_name, self.me());
        self.node.unpublish(&name).await;
    }

    /// Registers this node's region (taking over its previous process's
    /// key, and its shards, at new revisions).
    pub(super) async fn register(&mut self) -> Result<(), LeaseError> {
        if self.plan.proxy {
            return Ok(());
        }
        let key = self.region_key(self.me());
        let rev = match self.leases.acquire(&key).await? {
            Some(rev) => rev,
            None => match self.leases.holder(&key).await? {
                Some(h) => self.leases.take_over(&key, h.revision).await?,
                None => return Err(LeaseError::Unavailable(format!("{key} vanished"))),
            },
        };
        self.regions.insert(self.me().to_string(), rev);
        self.registered_incarnation = self.node.incarnation();
        let mine: Vec<(u32, u64)> = self
            .owners
            .iter()
            .enumerate()
            .filter(|(_, (o, _))| o.as_deref() == Some(self.me()))
            .map(|(s, (_, rev))| (s as u32, *rev))
            .collect();
        for (shard, rev) in mine {
            let key = self.shard_key(shard);
            if let Ok(new) = self.leases.take_over(&key, rev).await {
                let me = self.me().to_string();
                self.apply(
                    &key,
                    LeaseChange::Held(Holder {
                        node: me,
                        revision: new,
                    }),
                );
            }
        }
        Ok(())
    }
}

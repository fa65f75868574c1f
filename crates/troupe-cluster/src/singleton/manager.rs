//! The singleton's manager: one tokio task per node that competes for the
//! singleton's lease, runs the instance while it holds it, and tells the
//! node's proxy where the instance runs.
//!
//! Its loop, each turn:
//! - **acquire**: create the lease if it is free, and **hold**; find it
//!   held under this node's name (a create that landed without an answer,
//!   or this node's previous process), and take it over at a new revision
//!   (a fresh fencing token);
//! - else **follow** the holder: look its instance up (beside the loop: a
//!   lookup of a name nobody serves yet waits the node's lookup timeout,
//!   and the loop must not miss a Down meanwhile), name it to the proxy,
//!   and wait until the holder's node is declared down (or is not
//!   heard from within a heartbeat timeout: a holder left over from a
//!   cluster that stopped as a whole), the lease is released, or it moves;
//!   then take the lease over at the revision followed (a compare-and-set:
//!   of several followers one wins, the others follow it), or acquire it
//!   again if it was released;
//! - never hold or take over once this node incarnation has stalled past
//!   half its heartbeat timeout (`Node::longest_stall_this_incarnation`):
//!   the others may have declared it down for good, and could not reach an
//!   instance here. A stall that made the node a new incarnation (see
//!   `Node::incarnation`) does not count: the new one may hold again;
//! - **hold**: start the instance with the lease revision as its fencing
//!   token (and its front, `front.rs`, when its message type is wider
//!   than the protocol), name it to the proxy, publish it under the singleton's name
//!   (beside the loop too), and watch the lease. If it moves to another node (this node
//!   was declared down while paused or cut off), or the node has been
//!   disconnected from NATS for `self_fence_after`, stop the instance and
//!   start over; on `leave`, stop the instance, wait for its end, and
//!   release the lease so a follower takes over at once.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{oneshot, watch};
use troupe::{Actor, ActorRef, ActorSystem, Props, SpawnError};
use troupe_remote::{MemberEvent, Node, RemoteMessage};

use super::proxy::ProxyMsg;
use super::SingletonStatus;
use crate::lease::{Holder, LeaseChange, LeaseError, Leases};

/// How often a follower looks the holder's instance up until it answers,
/// and how often a holder checks its connection.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// How long a stopping instance is waited for before the lease is released
/// anyway.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// Looks the holder's instance up until it answers, and names it to the
/// proxy.
async fn find<M: RemoteMessage>(node: Arc<Node>, key: String, proxy: ActorRef<ProxyMsg<M>>) {
    loop {
        if let Ok(instance) = node.lookup::<M>(&key).await {
            proxy.tell(ProxyMsg::Target(Some(instance)));
            return;
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// Publishes the holder's instance beside the holding loop, taking the
/// name over (`Node::publish_taking_over`): the lease says this node
/// serves it now, and a former holder that is paused or cut off keeps its
/// subscription at the server, silent, for minutes. Tried again after an
/// error (a round trip through the server that timed out).
struct Publisher {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<bool>,
}

impl Publisher {
    fn start<M: RemoteMessage>(node: Arc<Node>, key: String, instance: ActorRef<M>) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            loop {
                if node.publish_taking_over(&key, &instance).await.is_ok() {
                    return true;
                }
                tokio::select! {
                    _ = &mut stopped => return false,
                    () = tokio::time::sleep(LOOK_EVERY) => {}
                }
            }
        });
        Publisher {
            stop: Some(stop),
            task,
        }
    }

    /// Stops trying and waits for an attempt in progress (aborting one
    /// could leave a subscription behind): whether the name is published.
    async fn finish(mut self) -> bool {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.unwrap_or(false)
    }
}

/// What ended a turn of holding or following.
enum Next {
    /// Start over: acquire, or follow whoever holds it now.
    Again,
    /// Take the lease over from the holder followed.
    TakeOver(Holder),
    /// The node leaves: the manager ends.
    Leave,
}

/// How the protocol `M` reaches an instance: the instance itself, or a
/// front that converts (`front.rs`).
pub(crate) type Entry<M, N> = fn(&ActorSystem, &ActorRef<N>) -> Result<ActorRef<M>, SpawnError>;

/// One node's manager of one singleton of protocol `M`.
pub(crate) struct Manager<A: Actor, M: Send + 'static, F> {
    pub(crate) node: Arc<Node>,
    pub(crate) system: ActorSystem,
    pub(crate) leases: Leases,
    /// The lease key, also the name the instance is published as.
    pub(crate) key: String,
    pub(crate) factory: F,
    pub(crate) entry: Entry<M, A::Msg>,
    pub(crate) proxy: ActorRef<ProxyMsg<M>>,
    pub(crate) status: watch::Sender<SingletonStatus>,
    pub(crate) leave: oneshot::Receiver<()>,
    pub(crate) self_fence_after: Duration,
}

impl<A, M, F> Manager<A, M, F>
where
    A: Actor,
    M: RemoteMessage,
    F: FnMut(u64) -> Props<A> + Send + 'static,
{
    /// Runs until `leave` fires (or its sender is dropped).
    pub(crate) async fn run(mut self) {
        let mut events = self.node.member_events();
        loop {
            if self.declared_down() {
                // Never hold again: follow whoever holds, or wait.
                let next = match self.leases.holder(&self.key).await {
                    Ok(Some(h)) if h.node != self.leases.me() => self.follow(h, &mut events).await,
                    Ok(_) => self.unavailable(LeaseError::Unavailable("this node stalled past the heartbeat timeout and may not hold the singleton".into())).await,
                    Err(e) => self.unavailable(e).await,
                };
                if let Next::Leave = next {
                    return;
                }
                continue;
            }
            let next = match self.leases.acquire(&self.key).await {
                Ok(Some(token)) => self.hold(token).await,
                Ok(None) => match self.leases.holder(&self.key).await {
                    // Released in between: try again.
                    Ok(None) => Next::Again,
                    // Ours from before (a create whose answer was lost, or
                    // this node's previous process): take it over for a
                    // fresh fencing token.
                    Ok(Some(h)) if h.node == self.leases.me() => Next::TakeOver(h),
                    Ok(Some(h)) => self.follow(h, &mut events).await,
                    Err(e) => self.unavailable(e).await,
                },
                Err(e) => self.unavailable(e).await,
            };
            let next = match next {
                // A node that stalled past the timeout never takes over.
                Next::TakeOver(_) if self.declared_down() => Next::Again,
                Next::TakeOver(from) => match self.leases.take_over(&self.key, from.revision).await
                {
                    Ok(token) => self.hold(token).await,
                    // Another follower won: follow it.
                    Err(LeaseError::Moved { .. }) => Next::Again,
                    Err(e) => self.unavailable(e).await,
                },
                other => other,
            };
            if let Next::Leave = next {
                return;
            }
        }
    }

    /// Whether this node incarnation stalled long enough (half the
    /// heartbeat timeout, to be safe) that the others may have declared it
    /// down: they would never reach an instance here, so it may not hold
    /// the lease again. A stall that made the node a new incarnation does
    /// not count: the others take the new one as a fresh member.
    fn declared_down(&self) -> bool {
        self.node
            .longest_stall_this_incarnation()
            .is_some_and(|s| s.lasted >= self.node.config().heartbeat_timeout / 2)
    }

    /// The bucket did not answer for a while: say so, wait a moment (or
    /// leave), and start over.
    async fn unavailable(&mut self, e: LeaseError) -> Next {
        tracing::warn!(singleton = %self.key, error = %e, "singleton: lease bucket unavailable");
        self.set(SingletonStatus::Vacant);
        tokio::select! {
            _ = &mut self.leave => Next::Leave,
            () = tokio::time::sleep(Duration::from_secs(1)) => Next::Again,
        }
    }

    fn set(&self, status: SingletonStatus) {
        self.status.send_if_modified(|s| {
            let changed = *s != status;
            *s = status;
            changed
        });
    }

    /// Follows `holder` until it is gone, the lease moves, or the node
    /// leaves.
    async fn follow(
        &mut self,
        holder: Holder,
        events: &mut tokio::sync::broadcast::Receiver<MemberEvent>,
    ) -> Next {
        self.set(SingletonStatus::Following {
            node: holder.node.clone(),
        });
        let mut changes = match self.leases.watch(&self.key).await {
            Ok(changes) => changes,
            Err(e) => return self.unavailable(e).await,
        };
        let since = tokio::time::Instant::now();
        let silent_after = self.node.config().heartbeat_timeout;
        // The holder's instance is looked up beside the loop: a lookup of
        // a name nobody serves yet waits the node's lookup timeout, and
        // the loop must not miss a Down or a lease change meanwhile.
        let finder = tokio::spawn(find(
            self.node.clone(),
            self.key.clone(),
            self.proxy.clone(),
        ));
        let mut look = tokio::time::interval(LOOK_EVERY);
        let next = loop {
            tokio::select! {
                _ = &mut self.leave => break Next::Leave,
                event = events.recv() => match event {
                    Ok(MemberEvent::Down { node, .. }) if node == holder.node => {
                        break Next::TakeOver(holder);
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    // The node stopped: nothing more to follow.
                    Err(_) => break Next::Leave,
                },
                change = changes.next() => match change {
                    Some(Ok(LeaseChange::Held(h))) if h == holder => {}
                    // Moved or released: start over from what it is now.
                    Some(Ok(_)) => break Next::Again,
                    // The watch ended (the bucket changed leader): watch again.
                    Some(Err(_)) | None => break Next::Again,
                },
                _ = look.tick() => {
                    // A holder this node has not heard from since it began
                    // to follow: a leftover of a cluster that stopped as a
                    // whole, which no Down event will ever announce.
                    if since.elapsed() >= silent_after
                        && !self.node.members().contains(&holder.node)
                    {
                        break Next::TakeOver(holder);
                    }
                }
            }
        };
        finder.abort();
        // Whatever the finder named last is gone or going: hold messages
        // until the next holder is known. (Had it named the old instance
        // just after this, that ref is watched, and its end holds them.)
        self.proxy.tell(ProxyMsg::Target(None));
        next
    }

    /// Runs the instance while this node holds the lease at `token`.
    async fn hold(&mut self, token: u64) -> Next {
        let started = self
            .system
            .spawn((self.factory)(token))
            .and_then(|instance| match (self.entry)(&self.system, &instance) {
                Ok(entry) => Ok((instance, entry)),
                Err(e) => {
                    self.system.stop(&instance);
                    Err(e)
                }
            });
        let (instance, entry) = match started {
            Ok(started) => started,
            Err(e) => {
                tracing::error!(singleton = %self.key, error = %e, "singleton: cannot start the instance");
                let _ = self.leases.release(&self.key, token).await;
                return self
                    .unavailable(LeaseError::Unavailable(e.to_string()))
                    .await;
            }
        };
        let instance = Running { instance, entry };
        self.set(SingletonStatus::Holding { token });
        self.proxy
            .tell(ProxyMsg::Target(Some(instance.entry.clone())));
        let publisher =
            Publisher::start(self.node.clone(), self.key.clone(), instance.entry.clone());
        let mut changes = match self.leases.watch(&self.key).await {
            Ok(changes) => changes,
            Err(e) => {
                self.end(&instance, publisher).await;
                return self.unavailable(e).await;
            }
        };
        let mut look = tokio::time::interval(LOOK_EVERY);
        let mut disconnected_since: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                _ = &mut self.leave => {
                    self.end(&instance, publisher).await;
                    let _ = self.leases.release(&self.key, token).await;
                    return Next::Leave;
                }
                change = changes.next() => match change {
                    Some(Ok(LeaseChange::Held(h))) if h.revision <= token || h.node == self.leases.me() => {}
                    Some(Ok(other)) => {
                        tracing::warn!(singleton = %self.key, now = ?other, "singleton: lease lost; stopping the instance");
                        self.end(&instance, publisher).await;
                        return Next::Again;
                    }
                    Some(Err(_)) | None => match self.leases.watch(&self.key).await {
                        Ok(again) => changes = again,
                        Err(e) => {
                            self.end(&instance, publisher).await;
                            return self.unavailable(e).await;
                        }
                    },
                },
                _ = look.tick() => {
                    let connected = matches!(
                        self.node.nats_client().connection_state(),
                        async_nats::connection::State::Connected
                    );
                    let now = tokio::time::Instant::now();
                    match (connected, disconnected_since) {
                        (true, _) => disconnected_since = None,
                        (false, None) => disconnected_since = Some(now),
                        (false, Some(since)) if now - since >= self.self_fence_after => {
                            // Cut off for so long that the others may have
                            // declared this node down and taken over:
                            // stop rather than risk two instances.
                            tracing::warn!(singleton = %self.key, "singleton: disconnected from NATS; stopping the instance");
                            self.end(&instance, publisher).await;
                            return Next::Again;
                        }
                        (false, Some(_)) => {}
                    }
                }
            }
        }
    }

    /// Stops the instance (and its front) and waits (a while) for its
    /// end, unpublishing it first so lookups stop finding it.
    async fn end(&mut self, running: &Running<M, A::Msg>, publisher: Publisher) {
        self.set(SingletonStatus::Vacant);
        self.proxy.tell(ProxyMsg::Target(None));
        if publisher.finish().await {
            self.node.unpublish(&self.key).await;
        }
        self.system.stop(&running.instance);
        if running.entry.id() != running.instance.id() {
            self.system.stop(&running.entry);
        }
        let deadline = tokio::time::Instant::now() + STOP_WITHIN;
        // The instance's end is not a future; look every few milliseconds
        // (this runs once per handover, not per message).
        while !(running.instance.is_terminated() && running.entry.is_terminated())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The instance this node runs, and the ref of protocol `M` that reaches
/// it (the instance itself, or its front).
struct Running<M: Send + 'static, N: Send + 'static> {
    instance: ActorRef<N>,
    entry: ActorRef<M>,
}

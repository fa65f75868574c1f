//! Routers: one address in front of several actors (routees) of the same
//! message type, with a routing logic that picks the routee per message.
//!
//! A [`Router`] is not an actor: `tell` picks a routee and tells it
//! directly, so routing costs no extra hop and no extra mailbox (as Akka
//! special-cases its router refs). It comes in two forms:
//!
//! * a **pool** ([`Router::pool`]) spawns its routees from one `Props` and owns
//!   them: [`Router::stop`] stops them all;
//! * a **group** ([`Router::group`]) routes to actors that exist already.
//!
//! Routing logics ([`Routing`]): round-robin, random, smallest mailbox (by the
//! routees' queue lengths, a snapshot), consistent hashing by a key of the
//! message (a hash ring with virtual nodes, so a routee change moves only its
//! share of the keys), and broadcast (every routee gets a clone).

use std::cell::Cell as StdCell;
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::actor::Actor;
use crate::actor_ref::{ActorRef, SendError};
use crate::props::Props;
use crate::system::{ActorSystem, SpawnError};

/// Points per routee on the consistent-hashing ring.
const VIRTUAL_NODES: usize = 64;

type KeyFn<M> = Arc<dyn Fn(&M) -> u64 + Send + Sync>;
type CloneFn<M> = Arc<dyn Fn(&M) -> M + Send + Sync>;

/// How a router picks the routee of a message.
pub enum Routing<M> {
    /// Each routee in turn.
    RoundRobin,
    /// A routee picked at random (a per-thread xorshift generator).
    Random,
    /// The routee with the fewest queued messages (ties: the first).
    SmallestMailbox,
    /// The routee that owns the message's key on a hash ring: messages with
    /// the same key always go to the same routee.
    ConsistentHashing(KeyFn<M>),
    /// Every routee gets a clone.
    Broadcast(CloneFn<M>),
}

impl<M> Routing<M> {
    /// Consistent hashing by `key(message)`.
    pub fn consistent_hashing<K: Hash>(key: impl Fn(&M) -> K + Send + Sync + 'static) -> Self
    where
        M: 'static,
    {
        Routing::ConsistentHashing(Arc::new(move |m| {
            let mut h = DefaultHasher::new();
            key(m).hash(&mut h);
            h.finish()
        }))
    }

    /// Broadcast: every routee gets a clone of each message.
    pub fn broadcast() -> Self
    where
        M: Clone + 'static,
    {
        Routing::Broadcast(Arc::new(M::clone))
    }
}

impl<M> fmt::Debug for Routing<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Routing::RoundRobin => "RoundRobin",
            Routing::Random => "Random",
            Routing::SmallestMailbox => "SmallestMailbox",
            Routing::ConsistentHashing(_) => "ConsistentHashing",
            Routing::Broadcast(_) => "Broadcast",
        })
    }
}

/// A router (see the module docs). Cheap to clone; clones share the
/// round-robin position.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, Props, Router, Routing};
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = u64;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, job: u64) {
///         let _ = job * 2;
///     }
/// }
///
/// let system = ActorSystem::builder().threads(2).build().unwrap();
/// let pool = Router::pool(&system, 4, Props::new(|| Worker), Routing::RoundRobin).unwrap();
/// for job in 0..100 {
///     pool.tell(job);
/// }
/// pool.stop();
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
pub struct Router<M: Send + 'static> {
    inner: Arc<Inner<M>>,
}

struct Inner<M: Send + 'static> {
    routees: Vec<ActorRef<M>>,
    routing: Routing<M>,
    /// The next round-robin index (any thread).
    next: AtomicUsize,
    /// Ring points `(hash, routee index)`, sorted (consistent hashing only).
    ring: Vec<(u64, usize)>,
    /// The system, for a pool to stop its routees.
    owner: Option<ActorSystem>,
}

impl<M: Send + 'static> Clone for Router<M> {
    fn clone(&self) -> Self {
        Router {
            inner: self.inner.clone(),
        }
    }
}

impl<M: Send + 'static> fmt::Debug for Router<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("routing", &self.inner.routing)
            .field("routees", &self.inner.routees)
            .finish()
    }
}

impl<M: Send + 'static> Router<M> {
    /// A group router over existing actors.
    ///
    /// # Panics
    ///
    /// If `routees` is empty.
    pub fn group(routees: Vec<ActorRef<M>>, routing: Routing<M>) -> Self {
        Self::build(routees, routing, None)
    }

    /// A pool router: spawns `size` top-level routees from `props` (named
    /// `<name>-<i>` if the props have a name) and owns them.
    pub fn pool<A>(
        system: &ActorSystem,
        size: usize,
        props: Props<A>,
        routing: Routing<M>,
    ) -> Result<Self, SpawnError>
    where
        A: Actor<Msg = M>,
    {
        let size = size.max(1);
        let mut routees = Vec::with_capacity(size);
        for i in 0..size {
            let mut p = props.clone();
            if let Some(name) = &props.name {
                p.name = Some(format!("{name}-{i}"));
            }
            match system.spawn(p) {
                Ok(r) => routees.push(r),
                Err(e) => {
                    for r in &routees {
                        system.stop(r);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Self::build(routees, routing, Some(system.clone())))
    }

    fn build(routees: Vec<ActorRef<M>>, routing: Routing<M>, owner: Option<ActorSystem>) -> Self {
        assert!(!routees.is_empty(), "a router needs at least one routee");
        let ring = match routing {
            Routing::ConsistentHashing(_) => ring_of(&routees),
            _ => Vec::new(),
        };
        Router {
            inner: Arc::new(Inner {
                routees,
                routing,
                next: AtomicUsize::new(0),
                ring,
                owner,
            }),
        }
    }

    /// Routes `msg` to one routee (every routee, for broadcast), with `tell`'s
    /// guarantees per routee.
    pub fn tell(&self, msg: M) {
        let inner = &*self.inner;
        match &inner.routing {
            Routing::Broadcast(clone) => {
                let (last, rest) = inner.routees.split_last().expect("non-empty");
                for r in rest {
                    r.tell(clone(&msg));
                }
                last.tell(msg);
            }
            Routing::ConsistentHashing(key) => {
                let i = ring_lookup(&inner.ring, key(&msg));
                inner.routees[i].tell(msg);
            }
            _ => inner.routees[self.pick()].tell(msg),
        }
    }

    /// Routes `msg` like [`tell`](Self::tell), but waits up to `timeout` for
    /// room if the chosen routee's bounded mailbox is full (broadcast: waits
    /// for each routee in turn).
    pub fn send_blocking(&self, msg: M, timeout: Duration) -> Result<(), SendError<M>> {
        let inner = &*self.inner;
        match &inner.routing {
            Routing::Broadcast(clone) => {
                let (last, rest) = inner.routees.split_last().expect("non-empty");
                for r in rest {
                    r.send_blocking(clone(&msg), timeout)?;
                }
                last.send_blocking(msg, timeout)
            }
            Routing::ConsistentHashing(key) => {
                let i = ring_lookup(&inner.ring, key(&msg));
                inner.routees[i].send_blocking(msg, timeout)
            }
            _ => inner.routees[self.pick()].send_blocking(msg, timeout),
        }
    }

    /// The routee the next message would go to (round-robin, random,
    /// smallest mailbox); for consistent hashing use [`routee_for`](Self::routee_for).
    fn pick(&self) -> usize {
        let inner = &*self.inner;
        let n = inner.routees.len();
        match inner.routing {
            Routing::RoundRobin => inner.next.fetch_add(1, Ordering::Relaxed) % n,
            Routing::Random => (next_random() % n as u64) as usize,
            Routing::SmallestMailbox => inner
                .routees
                .iter()
                .enumerate()
                .min_by_key(|(_, r)| r.queued())
                .map_or(0, |(i, _)| i),
            Routing::ConsistentHashing(_) | Routing::Broadcast(_) => 0,
        }
    }

    /// The routee the next message goes to under round-robin, random or
    /// smallest-mailbox routing (advancing the turn), for example to `ask` it;
    /// `None` under consistent hashing (which needs the message: see
    /// [`routee_for`](Self::routee_for)) and broadcast.
    pub fn next_routee(&self) -> Option<&ActorRef<M>> {
        match self.inner.routing {
            Routing::ConsistentHashing(_) | Routing::Broadcast(_) => None,
            _ => Some(&self.inner.routees[self.pick()]),
        }
    }

    /// The routee that consistent hashing assigns to `msg` (`None` for other
    /// logics).
    pub fn routee_for(&self, msg: &M) -> Option<&ActorRef<M>> {
        match &self.inner.routing {
            Routing::ConsistentHashing(key) => {
                Some(&self.inner.routees[ring_lookup(&self.inner.ring, key(msg))])
            }
            _ => None,
        }
    }

    /// The routees, in order.
    pub fn routees(&self) -> &[ActorRef<M>] {
        &self.inner.routees
    }

    /// Stops a pool's routees (their queued messages become dead letters);
    /// does nothing for a group, whose routees it does not own.
    pub fn stop(&self) {
        if let Some(system) = &self.inner.owner {
            for r in &self.inner.routees {
                system.stop(r);
            }
        }
    }
}

/// The hash ring: `VIRTUAL_NODES` points per routee, keyed by the routee's
/// identity, sorted by hash.
fn ring_of<M: Send + 'static>(routees: &[ActorRef<M>]) -> Vec<(u64, usize)> {
    let mut ring = Vec::with_capacity(routees.len() * VIRTUAL_NODES);
    for (i, r) in routees.iter().enumerate() {
        for v in 0..VIRTUAL_NODES {
            let mut h = DefaultHasher::new();
            (r.id(), v).hash(&mut h);
            ring.push((h.finish(), i));
        }
    }
    ring.sort_unstable();
    ring
}

/// The routee owning `hash`: the first ring point at or after it, wrapping.
fn ring_lookup(ring: &[(u64, usize)], hash: u64) -> usize {
    let at = ring.partition_point(|&(point, _)| point < hash);
    ring[at % ring.len()].1
}

thread_local! {
    static RNG: StdCell<u64> = const { StdCell::new(0) };
}

/// xorshift64* on a per-thread state, seeded from the thread's identity.
fn next_random() -> u64 {
    RNG.with(|state| {
        let mut x = state.get();
        if x == 0 {
            let mut h = DefaultHasher::new();
            std::thread::current().id().hash(&mut h);
            x = h.finish() | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_lookup_wraps_and_finds_the_next_point() {
        let ring = vec![(10, 0), (20, 1), (30, 2)];
        assert_eq!(ring_lookup(&ring, 5), 0);
        assert_eq!(ring_lookup(&ring, 10), 0);
        assert_eq!(ring_lookup(&ring, 11), 1);
        assert_eq!(ring_lookup(&ring, 30), 2);
        assert_eq!(ring_lookup(&ring, 31), 0);
    }

    #[test]
    fn random_numbers_vary() {
        let a: Vec<u64> = (0..8).map(|_| next_random()).collect();
        let mut b = a.clone();
        b.dedup();
        assert_eq!(a.len(), b.len());
    }
}

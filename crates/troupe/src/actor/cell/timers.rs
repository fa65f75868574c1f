//! Per-actor timers (`Context::timers`, `Context::schedule_once`,
//! `Context::schedule_repeatedly`) and the receive timeout
//! (`Context::set_receive_timeout`).
//!
//! # Design
//!
//! A timer is a scheduler entry that, when due, sends the actor a system
//! message carrying the user message, the timer's key and its *generation*.
//! The actor delivers it only if the key still maps to that generation, so a
//! timer that was cancelled or restarted (same key) after its message was
//! already on the way is never delivered: cancellation is exact, not a race.
//! Timers and the receive timeout are cancelled when the actor stops or
//! restarts, so a fresh instance never gets its predecessor's timer
//! messages (the system scheduler's `schedule_once` is addressed to the
//! actor's ref instead, which outlives a restart).
//!
//! # Keys
//!
//! A key is any `Hash + Eq + Send + Sync + 'static` value (a reservation
//! id, a `(&str, u64)`), so one actor can run a timer per entity. The
//! timers of all key types share one map, so keys are stored type-erased
//! as [`Key`]: equal only if of the same type and equal as that type, and
//! hashed by the key's own `Hash`. A key is looked up by reference
//! (`Borrow<dyn DynKey>`), so cancelling or asking `is_active` allocates
//! nothing. `&'static str` keys (the common case, and the only kind before
//! keys were generic) and the [`TimerId`]s of `Context::schedule_*` are
//! kept inline; other keys are boxed once per start, in an `Arc` that the
//! firings of a periodic timer share, so no firing allocates for its key.
//! Sharing is why keys must be `Sync` as well as `Send`.
//!
//! A context-level timer (`Context::schedule_once`) is a keyed timer whose
//! key is a fresh [`TimerId`]; it has every guarantee of a keyed one.
//!
//! The receive timeout records when the last user message was handled (only
//! for actors that set one). Its scheduler entry checks, when due, whether the
//! actor has been idle for the whole timeout: if so it delivers
//! `Signal::ReceiveTimeout`; either way it re-arms for the next possible
//! moment. So it fires no earlier than the timeout after the last message.

use std::any::Any;
use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{send_system, ActorCell, Cell, CellStatus, SystemMsg};
use crate::actor::Actor;
use crate::scheduler::Cancellable;

/// The handle of a timer started with
/// [`Context::schedule_once`](crate::Context::schedule_once) or
/// [`Context::schedule_repeatedly`](crate::Context::schedule_repeatedly):
/// a timer key no other timer of the actor has. Cancel the timer with
/// [`Timers::cancel`] (`ctx.timers().cancel(id)`), or ask
/// [`Timers::is_active`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerId(u64);

/// A timer key with its type erased: compared through `Any` (keys of
/// different types are never equal), hashed with the key's own `Hash`.
pub(crate) trait DynKey: Send + Sync + 'static {
    fn as_any(&self) -> &dyn Any;
    fn eq_dyn(&self, other: &dyn DynKey) -> bool;
    fn hash_dyn(&self, state: &mut dyn Hasher);
}

impl<K: Hash + Eq + Send + Sync + 'static> DynKey for K {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn eq_dyn(&self, other: &dyn DynKey) -> bool {
        other.as_any().downcast_ref::<K>() == Some(self)
    }

    fn hash_dyn(&self, mut state: &mut dyn Hasher) {
        self.hash(&mut state);
    }
}

impl PartialEq for dyn DynKey {
    fn eq(&self, other: &dyn DynKey) -> bool {
        self.eq_dyn(other)
    }
}

impl Eq for dyn DynKey {}

impl Hash for dyn DynKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hash_dyn(state);
    }
}

/// A stored timer key (see the module docs). Its `Hash` and `Eq` are those
/// of the `dyn DynKey` it borrows as, whichever variant holds it, as
/// `Borrow` requires of a map key.
#[derive(Clone)]
pub(crate) enum Key {
    /// A `&'static str`: inline.
    Static(&'static str),
    /// A `Context::schedule_*` timer: inline.
    Id(TimerId),
    /// Any other key, shared by the map and the messages in flight.
    Erased(Arc<dyn DynKey>),
}

impl From<TimerId> for Key {
    fn from(id: TimerId) -> Key {
        Key::Id(id)
    }
}

impl Key {
    fn new<K: Hash + Eq + Send + Sync + 'static>(key: K) -> Key {
        let any: &dyn Any = &key;
        if let Some(s) = any.downcast_ref::<&'static str>() {
            Key::Static(s)
        } else if let Some(id) = any.downcast_ref::<TimerId>() {
            Key::Id(*id)
        } else {
            Key::Erased(Arc::new(key))
        }
    }

    fn as_dyn(&self) -> &dyn DynKey {
        match self {
            Key::Static(s) => s,
            Key::Id(id) => id,
            Key::Erased(key) => &**key,
        }
    }
}

impl Borrow<dyn DynKey> for Key {
    fn borrow(&self) -> &dyn DynKey {
        self.as_dyn()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_dyn() == other.as_dyn()
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_dyn().hash(state);
    }
}

/// A running timer: its generation and the handle of its scheduler entry.
pub(super) struct TimerSlot {
    generation: u64,
    periodic: bool,
    handle: Cancellable,
}

/// A receive timeout in force.
pub(super) struct ReceiveTimeout {
    timeout: Duration,
    /// When the last user message was handled (or the timeout was set).
    last: Instant,
    generation: u64,
    handle: Cancellable,
}

/// The timers of one actor, from [`crate::Context::timers`].
///
/// A timer's key is any value that is `Hash + Eq + Send + Sync + 'static`:
/// a `&'static str` for a timer the actor has one of, or an id (`u64`, a
/// tuple such as `("expire", id)`) for a timer per entity. Starting a timer
/// replaces the running one with an equal key; keys of different types are
/// different keys, so mind integer literals: `cancel(7)` is an `i32` key
/// and does not cancel `start_single(7u64, ..)`.
///
/// Whatever the key, a cancelled or replaced timer's message is never
/// delivered, even one already queued when it was cancelled, and every
/// timer is cancelled when the actor stops or restarts.
///
/// ```
/// use std::time::Duration;
/// use troupe::{Actor, Context};
///
/// #[derive(Clone)]
/// enum Msg { Tick, Stop, Hold(u64), Confirm(u64), Expire(u64) }
///
/// struct Desk { beats: u32, expired: Vec<u64> }
/// impl Actor for Desk {
///     type Msg = Msg;
///     fn started(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.timers().start_periodic("beat", Duration::from_millis(10), Msg::Tick);
///     }
///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
///         match msg {
///             Msg::Tick => self.beats += 1,
///             Msg::Stop => ctx.timers().cancel("beat"),
///             // One expiry timer per reservation, keyed by its id.
///             Msg::Hold(id) => {
///                 ctx.timers().start_single(("expire", id), Duration::from_secs(60), Msg::Expire(id))
///             }
///             Msg::Confirm(id) => ctx.timers().cancel(("expire", id)),
///             Msg::Expire(id) => self.expired.push(id),
///         }
///     }
/// }
/// ```
pub struct Timers<'a, A: Actor> {
    pub(crate) cell: &'a Arc<ActorCell<A>>,
    pub(crate) status: &'a mut CellStatus,
}

impl<A: Actor> Timers<'_, A> {
    /// Delivers `msg` once after `delay`, replacing any timer with this key.
    pub fn start_single<K>(&mut self, key: K, delay: Duration, msg: A::Msg)
    where
        K: Hash + Eq + Send + Sync + 'static,
    {
        self.single(Key::new(key), delay, msg);
    }

    /// Delivers a clone of `msg` every `interval`, replacing any timer with
    /// this key.
    pub fn start_periodic<K>(&mut self, key: K, interval: Duration, msg: A::Msg)
    where
        K: Hash + Eq + Send + Sync + 'static,
        A::Msg: Clone + Sync,
    {
        self.periodic(Key::new(key), interval, interval, msg);
    }

    /// Cancels the timer with this key; a message it already sent is not
    /// delivered either.
    pub fn cancel<K>(&mut self, key: K)
    where
        K: Hash + Eq + Send + Sync + 'static,
    {
        self.cancel_key(&key);
    }

    /// Cancels every timer of this actor.
    pub fn cancel_all(&mut self) {
        cancel_all(self.status);
    }

    /// Whether a timer with this key is running (a single timer stops
    /// running once its message is delivered).
    pub fn is_active<K>(&self, key: K) -> bool
    where
        K: Hash + Eq + Send + Sync + 'static,
    {
        let key: &dyn DynKey = &key;
        self.status
            .links
            .as_ref()
            .is_some_and(|l| l.timers.contains_key(key))
    }

    /// A key no timer of this actor has had: the generation counter is
    /// never reset, not even by a restart.
    pub(crate) fn fresh_id(&mut self) -> TimerId {
        let links = self.status.links();
        links.next_timer_generation += 1;
        TimerId(links.next_timer_generation)
    }

    pub(crate) fn single(&mut self, key: Key, delay: Duration, msg: A::Msg) {
        let (generation, cell) = self.arm(&key);
        let mut msg = Some(msg);
        let fired = key.clone();
        let handle = self.cell.system.scheduler.run_at(
            self.cell.system.scheduler.now() + delay,
            move || {
                if let Some(msg) = msg.take() {
                    fire(&cell, fired, generation, Box::new(msg));
                }
            },
        );
        self.store(key, generation, false, handle);
    }

    /// A periodic timer, first due after `initial`, then every `interval`.
    pub(crate) fn periodic(&mut self, key: Key, initial: Duration, interval: Duration, msg: A::Msg)
    where
        A::Msg: Clone + Sync,
    {
        let (generation, cell) = self.arm(&key);
        let fired = key.clone();
        let handle = self.cell.system.scheduler.every(
            self.cell.system.scheduler.now() + initial,
            interval,
            Arc::new(move || {
                if cell.is_closed() {
                    return false;
                }
                // A clone of an inline key, or of the `Arc`: no allocation.
                fire(&cell, fired.clone(), generation, Box::new(msg.clone()));
                true
            }),
        );
        self.store(key, generation, true, handle);
    }

    fn cancel_key(&mut self, key: &dyn DynKey) {
        if let Some(links) = self.status.links.as_mut() {
            if let Some(slot) = links.timers.remove(key) {
                slot.handle.cancel();
            }
        }
    }

    /// Cancels a previous timer with this key and picks a new generation.
    fn arm(&mut self, key: &Key) -> (u64, Arc<dyn Cell>) {
        self.cancel_key(key.as_dyn());
        let links = self.status.links();
        links.next_timer_generation += 1;
        let cell: Arc<dyn Cell> = self.cell.clone();
        (links.next_timer_generation, cell)
    }

    fn store(&mut self, key: Key, generation: u64, periodic: bool, handle: Cancellable) {
        self.status.links().timers.insert(
            key,
            TimerSlot {
                generation,
                periodic,
                handle,
            },
        );
    }
}

fn fire(cell: &Arc<dyn Cell>, key: Key, generation: u64, msg: Box<dyn Any + Send>) {
    send_system(
        cell,
        SystemMsg::Timer {
            key,
            generation,
            msg,
        },
    );
}

/// Cancels every timer and the receive timeout (on stop and restart).
pub(super) fn cancel_all(status: &mut CellStatus) {
    status.has_receive_timeout = false;
    if let Some(links) = status.links.as_mut() {
        for (_, slot) in links.timers.drain() {
            slot.handle.cancel();
        }
        if let Some(rt) = links.receive_timeout.take() {
            rt.handle.cancel();
        }
    }
}

/// Whether a timer message is current; a single timer is done once it is.
pub(super) fn take_if_current(status: &mut CellStatus, key: &Key, generation: u64) -> bool {
    let Some(links) = status.links.as_mut() else {
        return false;
    };
    match links.timers.get(key) {
        Some(slot) if slot.generation == generation => {
            if !slot.periodic {
                links.timers.remove(key);
            }
            true
        }
        _ => false,
    }
}

impl<A: Actor> ActorCell<A> {
    /// `Context::set_receive_timeout`.
    pub(crate) fn set_receive_timeout(
        self: &Arc<Self>,
        status: &mut CellStatus,
        timeout: Option<Duration>,
    ) {
        let links = status.links();
        if let Some(old) = links.receive_timeout.take() {
            old.handle.cancel();
        }
        status.has_receive_timeout = false;
        let Some(timeout) = timeout else {
            return;
        };
        let links = status.links();
        links.next_timer_generation += 1;
        let generation = links.next_timer_generation;
        let now = self.system.scheduler.now();
        let handle = self.arm_receive_timeout(now + timeout, generation);
        links.receive_timeout = Some(ReceiveTimeout {
            timeout,
            last: now,
            generation,
            handle,
        });
        status.has_receive_timeout = true;
    }

    fn arm_receive_timeout(self: &Arc<Self>, at: Instant, generation: u64) -> Cancellable {
        let cell: Arc<dyn Cell> = self.clone();
        self.system.scheduler.run_at(at, move || {
            send_system(&cell, SystemMsg::ReceiveTimeout { generation });
        })
    }

    /// A user message was handled: the actor is not idle.
    #[inline]
    pub(super) fn touch_receive_timeout(&self, status: &mut CellStatus) {
        if status.has_receive_timeout {
            if let Some(rt) = status
                .links
                .as_mut()
                .and_then(|l| l.receive_timeout.as_mut())
            {
                rt.last = self.system.scheduler.now();
            }
        }
    }

    /// The receive-timeout check came due: true if the actor has been idle
    /// for the whole timeout (the caller delivers the signal). Re-arms.
    pub(super) fn receive_timeout_due(
        self: &Arc<Self>,
        status: &mut CellStatus,
        generation: u64,
    ) -> bool {
        let Some(rt) = status
            .links
            .as_mut()
            .and_then(|l| l.receive_timeout.as_mut())
        else {
            return false;
        };
        if rt.generation != generation {
            return false;
        }
        let now = self.system.scheduler.now();
        let idle_since = rt.last;
        let due = now.duration_since(idle_since) >= rt.timeout;
        let next = if due {
            now + rt.timeout
        } else {
            idle_since + rt.timeout
        };
        if due {
            rt.last = now;
        }
        let (timeout_generation, cell) = (rt.generation, self.clone());
        rt.handle = cell.arm_receive_timeout(next, timeout_generation);
        due
    }
}

#[cfg(test)]
mod tests {
    use std::collections::hash_map::DefaultHasher;

    use super::*;

    fn hash_of(key: &dyn DynKey) -> u64 {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn keys_are_equal_only_with_the_same_type_and_value() {
        let pair = Key::new(("expire", 1u64));
        assert!(matches!(pair, Key::Erased(_)));
        assert!(pair == Key::new(("expire", 1u64)));
        assert!(pair != Key::new(("expire", 2u64)));
        // Same value, other type: another key.
        assert!(pair != Key::new(("expire", 1u32)));
        assert!(Key::new(7u64) != Key::new(7i32));
        assert!(Key::new("tick") != Key::new(String::from("tick")));
    }

    #[test]
    fn inline_and_boxed_forms_of_a_key_agree() {
        // A `&'static str` is kept inline, but the same key boxed (as the
        // map never stores it, yet `Borrow` requires) is equal and hashes
        // alike, as does the key looked up by reference.
        let inline = Key::new("tick");
        assert!(matches!(inline, Key::Static("tick")));
        let boxed = Key::Erased(Arc::new("tick"));
        assert!(inline == boxed);
        let by_ref: &dyn DynKey = &"tick";
        assert_eq!(hash_of(inline.borrow()), hash_of(boxed.borrow()));
        assert_eq!(hash_of(inline.borrow()), hash_of(by_ref));
        assert!(matches!(Key::new(TimerId(3)), Key::Id(TimerId(3))));
    }

    #[test]
    fn a_map_finds_keys_by_reference() {
        let mut map = std::collections::HashMap::new();
        map.insert(Key::new(("expire", 1u64)), 1);
        map.insert(Key::new("beat"), 2);
        map.insert(Key::new(TimerId(9)), 3);
        let pair: &dyn DynKey = &("expire", 1u64);
        let beat: &dyn DynKey = &"beat";
        let id: &dyn DynKey = &TimerId(9);
        let other: &dyn DynKey = &("expire", 2u64);
        assert_eq!(map.get(pair), Some(&1));
        assert_eq!(map.get(beat), Some(&2));
        assert_eq!(map.get(id), Some(&3));
        assert_eq!(map.get(other), None);
    }
}

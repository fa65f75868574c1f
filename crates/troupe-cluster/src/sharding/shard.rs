//! A shard on the node that owns it: the parent of its entities. It starts
//! an entity on its first message, passivates (stops) entities idle for
//! `passivate_after`, and starts an entity again when a message arrives
//! for it after it stopped.
//!
//! An entity that is stopping (passivated, or found stopped) gets no more
//! messages: they wait in the shard until its `Terminated`, then go to a
//! fresh activation, in order. (An entity may also stop itself; a message
//! that reaches its mailbox between its decision and its end is lost, as
//! for any actor that stops: let the idle timer passivate it to lose
//! none.) So an entity never has two activations in
//! one shard, and the shard has one owner at a time (its lease), which is
//! what makes "never handled by two activations" hold cluster-wide.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorId, ActorRef, Context, Props, Signal, TrySendError};

use super::ids::IdCheck;
use super::remember::Remembered;
use super::{Counters, EntityContext};

/// How a shard refuses a message for an id it does not accept: counts
/// it, logs it and answers the asks in it (`ids::refuse` for the region's
/// message type: type name, counters, id, reason, message).
pub(crate) type Refuse<M> = fn(&str, &Counters, &str, &str, M);

/// What a shard handles.
pub(crate) enum ShardMsg<M> {
    /// A message for the entity with this id.
    Deliver(String, M),
    /// Look for idle entities.
    Tick,
    /// Start this entity if it is not running (a remembered one).
    Wake(String),
}

struct Entity<Msg: Send + 'static> {
    actor: ActorRef<Msg>,
    last: Instant,
    stopping: bool,
    /// Messages that arrived while it was stopping.
    waiting: VecDeque<Msg>,
}

impl<Msg: Send + 'static> Entity<Msg> {
    /// A fresh activation, just sent to (or woken).
    fn new(actor: ActorRef<Msg>) -> Self {
        Entity {
            actor,
            last: Instant::now(),
            stopping: false,
            waiting: VecDeque::new(),
        }
    }
}

/// The shard actor.
pub(crate) struct Shard<A: Actor, F, M> {
    pub(crate) type_name: Arc<str>,
    pub(crate) shard: u32,
    pub(crate) token: u64,
    pub(crate) factory: Arc<F>,
    pub(crate) passivate_after: Option<Duration>,
    pub(crate) counters: Arc<Counters>,
    remembered: Option<Remembered>,
    /// The ids it may start an entity for, and how it refuses the others.
    check: Option<(IdCheck, Refuse<M>)>,
    entities: HashMap<String, Entity<A::Msg>>,
    ids: HashMap<ActorId, String>,
    _msg: std::marker::PhantomData<fn(M)>,
}

impl<A: Actor, F, M> Shard<A, F, M> {
    /// Remembers the entities it starts, and forgets those that stop
    /// while it runs, in `remembered` (if the type remembers them).
    pub(crate) fn remembering(mut self, remembered: Option<Remembered>) -> Self {
        self.remembered = remembered;
        self
    }

    /// Starts no entity whose id `ids` refuses; `refuse` handles its
    /// message instead.
    pub(crate) fn checking(mut self, ids: IdCheck, refuse: Refuse<M>) -> Self {
        self.check = Some((ids, refuse));
        self
    }

    pub(crate) fn new(
        type_name: Arc<str>,
        shard: u32,
        token: u64,
        factory: Arc<F>,
        passivate_after: Option<Duration>,
        counters: Arc<Counters>,
    ) -> Self {
        Shard {
            type_name,
            shard,
            token,
            factory,
            passivate_after,
            counters,
            remembered: None,
            check: None,
            entities: HashMap::new(),
            ids: HashMap::new(),
            _msg: std::marker::PhantomData,
        }
    }
}

impl<A, F, M> Shard<A, F, M>
where
    A: Actor,
    A::Msg: From<M>,
    M: Send + 'static,
    F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
{
    /// Starts the entity `id`; `None` (counted, logged) if it cannot be.
    fn activate(&mut self, ctx: &mut Context<'_, Self>, id: &str) -> Option<ActorRef<A::Msg>> {
        let entity = EntityContext {
            type_name: self.type_name.clone(),
            id: id.to_string(),
            shard: self.shard,
            token: self.token,
        };
        match ctx.spawn((self.factory)(&entity)) {
            Ok(actor) => {
                ctx.watch(&actor);
                self.ids.insert(actor.id(), id.to_string());
                if let Some(remembered) = &self.remembered {
                    remembered.note(self.shard, id, true);
                }
                self.counters
                    .entities_started
                    .fetch_add(1, Ordering::Relaxed);
                Some(actor)
            }
            Err(e) => {
                tracing::error!(entity = id, shard = self.shard, error = %e, "sharding: cannot start an entity");
                None
            }
        }
    }

    fn deliver(&mut self, ctx: &mut Context<'_, Self>, id: String, msg: M) {
        if let Some(entity) = self.entities.get_mut(&id) {
            if entity.stopping {
                entity.waiting.push_back(msg.into());
                return;
            }
            entity.last = Instant::now();
            match entity.actor.try_tell(msg.into()) {
                Ok(()) => {}
                // It stopped on its own and its `Terminated` is on the
                // way: the message waits for the next activation.
                Err(TrySendError::Closed(msg)) => {
                    entity.stopping = true;
                    entity.waiting.push_back(msg);
                }
                // A bounded mailbox: its own overflow policy decides.
                Err(TrySendError::Full(msg)) => entity.actor.tell(msg),
            }
            return;
        }
        // The owner's own check, before anything starts (a sender may
        // check differently): no activation, so nothing in the journal.
        if let Some((ids, refuse)) = &self.check {
            if let Some(reason) = ids.refusal(&id) {
                return refuse(&self.type_name, &self.counters, &id, &reason, msg);
            }
        }
        match self.activate(ctx, &id) {
            Some(actor) => {
                actor.tell(msg.into());
                self.entities.insert(id, Entity::new(actor));
            }
            None => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The interval of the idle check: a tenth of the idle time, so an
    /// entity is passivated within 1.1x `passivate_after`.
    fn tick_every(&self) -> Option<Duration> {
        self.passivate_after
            .map(|after| (after / 10).max(Duration::from_millis(10)))
    }
}

impl<A, F, M> Actor for Shard<A, F, M>
where
    A: Actor,
    A::Msg: From<M>,
    M: Send + 'static,
    F: Fn(&EntityContext) -> Props<A> + Send + Sync + 'static,
{
    type Msg = ShardMsg<M>;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(every) = self.tick_every() {
            ctx.schedule_once(every, ShardMsg::Tick);
        }
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: ShardMsg<M>) {
        match msg {
            ShardMsg::Deliver(id, msg) => self.deliver(ctx, id, msg),
            ShardMsg::Wake(id) => {
                let refused = self.check.as_ref().and_then(|(ids, _)| ids.refusal(&id));
                if let Some(reason) = refused {
                    tracing::warn!(region = %self.type_name, shard = self.shard, "sharding: a remembered entity is not started: {reason}");
                } else if !self.entities.contains_key(&id) {
                    if let Some(actor) = self.activate(ctx, &id) {
                        self.entities.insert(id, Entity::new(actor));
                    }
                }
            }
            ShardMsg::Tick => {
                let (Some(after), Some(every)) = (self.passivate_after, self.tick_every()) else {
                    return;
                };
                let now = Instant::now();
                for entity in self.entities.values_mut() {
                    if !entity.stopping && now.duration_since(entity.last) >= after {
                        entity.stopping = true;
                        ctx.stop_child(&entity.actor);
                        self.counters.passivated.fetch_add(1, Ordering::Relaxed);
                    }
                }
                ctx.schedule_once(every, ShardMsg::Tick);
            }
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        // Its entities stopped first (children stop before their parent);
        // their `Terminated` does not reach a stopping shard.
        let ended = self.ids.len() as u64;
        self.ids.clear();
        self.counters
            .entities_stopped
            .fetch_add(ended, Ordering::Relaxed);
    }

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        let Signal::Terminated(actor, _) = signal else {
            return;
        };
        let Some(id) = self.ids.remove(&actor) else {
            return;
        };
        self.counters
            .entities_stopped
            .fetch_add(1, Ordering::Relaxed);
        let Some(entity) = self.entities.remove(&id) else {
            return;
        };
        if entity.waiting.is_empty() {
            return;
        }
        // Messages came while it stopped: a fresh activation gets them.
        match self.activate(ctx, &id) {
            Some(actor) => {
                for msg in entity.waiting {
                    actor.tell(msg);
                }
                self.entities.insert(id, Entity::new(actor));
            }
            None => {
                self.counters
                    .dropped
                    .fetch_add(entity.waiting.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

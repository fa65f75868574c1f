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
//! none.) An activation that failed (see `backoff.rs`) is followed by
//! the next one only after a backoff, the messages meanwhile held here;
//! after too many failures in a row they are refused. So an entity never
//! has two activations in
//! one shard, and the shard has one owner at a time (its lease), which is
//! what makes "never handled by two activations" hold cluster-wide.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorId, ActorRef, Context, Directive, Props, Signal, TrySendError};

use super::backoff::{Activation, Ended, Failing};
use super::ids::IdCheck;
use super::remember::Remembered;
use super::{Counters, EntityBackoff, EntityContext};

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
    /// The backoff of this failing entity (its generation) is over.
    Retry(String, u64),
}

/// A message waiting for an entity's next activation: as it came, or
/// already converted (one its stopping activation's mailbox refused),
/// which cannot be refused with a reason, only dropped and counted.
enum Held<M, E> {
    Msg(M),
    Converted(E),
}

impl<M, E: From<M>> Held<M, E> {
    fn into_entity(self) -> E {
        match self {
            Held::Msg(msg) => msg.into(),
            Held::Converted(msg) => msg,
        }
    }
}

struct Entity<M, E: Send + 'static> {
    actor: ActorRef<E>,
    /// When it was last seen busy: at its start, or at the first tick
    /// after a message (a flag per message is cheaper than a clock read).
    last: Instant,
    /// It had a message since the last tick.
    touched: bool,
    stopping: bool,
    /// The shard stopped it (passivation): its end is no failure, even
    /// during its recovery.
    stopped_by_shard: bool,
    /// Messages that arrived while it was stopping.
    waiting: VecDeque<Held<M, E>>,
    /// What it says of itself (a failure ends in a backoff).
    activation: Activation,
}

impl<M, E: Send + 'static> Entity<M, E> {
    /// A fresh activation, just sent to (or woken).
    fn new(actor: ActorRef<E>, activation: Activation) -> Self {
        Entity {
            actor,
            last: Instant::now(),
            touched: false,
            stopping: false,
            stopped_by_shard: false,
            waiting: VecDeque::new(),
            activation,
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
    /// How failed entities are restarted, and how their messages are
    /// refused once they have failed too often.
    backoff: EntityBackoff,
    refuse_failing: Option<Refuse<M>>,
    entities: HashMap<String, Entity<M, A::Msg>>,
    ids: HashMap<ActorId, String>,
    /// Entities whose last activation failed.
    failing: HashMap<String, Failing<Held<M, A::Msg>>>,
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

    /// Restarts a failed entity after `backoff`; `refuse` handles its
    /// messages once it has failed too often in a row.
    pub(crate) fn backing_off(mut self, backoff: EntityBackoff, refuse: Refuse<M>) -> Self {
        self.backoff = backoff;
        self.refuse_failing = Some(refuse);
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
            backoff: EntityBackoff::default(),
            refuse_failing: None,
            entities: HashMap::new(),
            ids: HashMap::new(),
            failing: HashMap::new(),
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
    fn activate(&mut self, ctx: &mut Context<'_, Self>, id: &str) -> Option<Entity<M, A::Msg>> {
        let activation = Activation::default();
        let entity = EntityContext {
            type_name: self.type_name.clone(),
            id: id.to_string(),
            shard: self.shard,
            token: self.token,
            activation: activation.clone(),
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
                Some(Entity::new(actor, activation))
            }
            Err(e) => {
                tracing::error!(entity = id, shard = self.shard, error = %e, "sharding: cannot start an entity");
                None
            }
        }
    }

    fn deliver(&mut self, ctx: &mut Context<'_, Self>, id: String, msg: M) {
        if let Some(entity) = self.entities.get_mut(&id) {
            // One that reported a failure is about to stop: a message
            // handed to it now would be lost with its mailbox.
            if entity.stopping || entity.activation.has_failed() {
                entity.waiting.push_back(Held::Msg(msg));
                return;
            }
            entity.touched = true;
            match entity.actor.try_tell(msg.into()) {
                Ok(()) => {}
                // It stopped on its own and its `Terminated` is on the
                // way: the message waits for the next activation.
                Err(TrySendError::Closed(msg)) => {
                    entity.stopping = true;
                    entity.waiting.push_back(Held::Converted(msg));
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
        // Its last activation failed: the message waits for the next
        // one's time, or is refused if it has failed too often.
        let mut msgs = VecDeque::new();
        if let Some(failing) = self.failing.get_mut(&id) {
            if failing.refusing {
                let why = self.gave_up(&id);
                return self.refuse(&id, &why, Held::Msg(msg));
            }
            if Instant::now() < failing.retry_at {
                if failing.held.len() < self.backoff.max_held {
                    failing.held.push_back(Held::Msg(msg));
                    return;
                }
                let why = format!(
                    "entity {id:?} of {}: its activation failed ({}) and it already holds \
                     {} messages (EntityBackoff::max_held) until its next attempt",
                    self.type_name, failing.reason, self.backoff.max_held
                );
                return self.refuse(&id, &why, Held::Msg(msg));
            }
            // Its time came before its timer: what it held goes first.
            msgs = std::mem::take(&mut failing.held);
        }
        msgs.push_back(Held::Msg(msg));
        self.start(ctx, id, msgs);
    }

    /// Starts an activation of `id` with `msgs`, in order.
    fn start(&mut self, ctx: &mut Context<'_, Self>, id: String, msgs: VecDeque<Held<M, A::Msg>>) {
        match self.activate(ctx, &id) {
            Some(entity) => {
                for msg in msgs {
                    entity.actor.tell(msg.into_entity());
                }
                self.entities.insert(id, entity);
            }
            None => {
                self.counters
                    .dropped
                    .fetch_add(msgs.len() as u64, Ordering::Relaxed);
            }
        }
    }

    /// Why the messages of `id`, which failed too often in a row, are
    /// refused.
    fn gave_up(&self, id: &str) -> String {
        let (failures, reason) = self
            .failing
            .get(id)
            .map_or((0, ""), |f| (f.failures, f.reason.as_str()));
        format!(
            "entity {id:?} of {}: its last {failures} activations failed, the last with: \
             {reason}; its messages are refused for {:?} after that \
             (ShardingSettings::entity_backoff)",
            self.type_name, self.backoff.max
        )
    }

    /// Refuses a held message with `why` (counted, logged, an ask in it
    /// answered); one already converted can only be dropped (counted).
    fn refuse(&self, id: &str, why: &str, msg: Held<M, A::Msg>) {
        match (msg, self.refuse_failing) {
            (Held::Msg(msg), Some(refuse)) => refuse(&self.type_name, &self.counters, id, why, msg),
            _ => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(region = %self.type_name, entity = id, "sharding: a message was dropped: {why}");
            }
        }
    }

    /// An activation of `id` failed for `reason`: the next one waits,
    /// and `waiting` with it, or they are refused if it has failed
    /// `max_failures` times in a row.
    fn failed(
        &mut self,
        ctx: &mut Context<'_, Self>,
        id: String,
        reason: String,
        recovered: bool,
        waiting: VecDeque<Held<M, A::Msg>>,
    ) {
        self.counters
            .failed_activations
            .fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let failing = self.failing.entry(id.clone()).or_insert_with(|| Failing {
            failures: 0,
            reason: String::new(),
            retry_at: now,
            refusing: false,
            held: VecDeque::new(),
            generation: 0,
        });
        // One that had recovered worked for a while: this is a new run.
        failing.failures = if recovered { 1 } else { failing.failures + 1 };
        failing.reason = reason;
        failing.generation += 1;
        failing.held.extend(waiting);
        let (failures, generation) = (failing.failures, failing.generation);
        if failures >= self.backoff.max_failures.max(1) {
            failing.refusing = true;
            failing.retry_at = now + self.backoff.max;
            let held = std::mem::take(&mut failing.held);
            let why = self.gave_up(&id);
            tracing::error!(
                region = %self.type_name, shard = self.shard, entity = %id, failures,
                refused = held.len(),
                "sharding: an entity's activations keep failing: its messages are refused for {:?}: {why}",
                self.backoff.max
            );
            for msg in held {
                self.refuse(&id, &why, msg);
            }
            ctx.schedule_once(self.backoff.max, ShardMsg::Retry(id, generation));
        } else {
            let delay = self.backoff.delay(failures);
            failing.refusing = false;
            failing.retry_at = now + delay;
            tracing::warn!(
                region = %self.type_name, shard = self.shard, entity = %id, failures,
                held = failing.held.len(),
                "sharding: an entity's activation failed, the next in {delay:?}: {}",
                failing.reason
            );
            ctx.schedule_once(delay, ShardMsg::Retry(id, generation));
        }
    }

    /// A failing entity's wait is over: the next activation gets what was
    /// held, or the next message starts it.
    fn retry(&mut self, ctx: &mut Context<'_, Self>, id: String, generation: u64) {
        if self.entities.contains_key(&id) {
            return;
        }
        let Some(failing) = self.failing.get_mut(&id) else {
            return;
        };
        if failing.generation != generation {
            return;
        }
        failing.refusing = false;
        let held = std::mem::take(&mut failing.held);
        if !held.is_empty() {
            self.start(ctx, id, held);
        }
    }

    /// Whether `id` must not be started now (a failing entity in its wait).
    fn waiting_to_retry(&self, id: &str) -> bool {
        self.failing
            .get(id)
            .is_some_and(|f| f.refusing || Instant::now() < f.retry_at)
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
                } else if self.waiting_to_retry(&id) {
                    tracing::debug!(region = %self.type_name, entity = %id, "sharding: a remembered entity waits for its backoff");
                } else if !self.entities.contains_key(&id) {
                    if let Some(entity) = self.activate(ctx, &id) {
                        self.entities.insert(id, entity);
                    }
                }
            }
            ShardMsg::Retry(id, generation) => self.retry(ctx, id, generation),
            ShardMsg::Tick => {
                let (Some(after), Some(every)) = (self.passivate_after, self.tick_every()) else {
                    return;
                };
                let now = Instant::now();
                for entity in self.entities.values_mut() {
                    if std::mem::take(&mut entity.touched) {
                        entity.last = now;
                        continue;
                    }
                    if !entity.stopping && now.duration_since(entity.last) >= after {
                        entity.stopping = true;
                        entity.stopped_by_shard = true;
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
        // What failing entities held is answered, not lost with the shard.
        for (id, failing) in std::mem::take(&mut self.failing) {
            let why = format!(
                "entity {id:?} of {}: its shard stopped on this node while the entity waited \
                 to start again after a failed activation ({})",
                self.type_name, failing.reason
            );
            for msg in failing.held {
                self.refuse(&id, &why, msg);
            }
        }
    }

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        let actor = match signal {
            Signal::Terminated(actor, _) => actor,
            // Stopped by its supervisor after a panic: a failed activation.
            Signal::ChildFailed {
                child,
                failure,
                directive: Directive::Stop,
            } => {
                if let Some(entity) = self.ids.get(&child).and_then(|id| self.entities.get(id)) {
                    entity.activation.failed(format!(
                        "it failed and its supervisor stopped it: {}",
                        failure.message
                    ));
                }
                return;
            }
            _ => return,
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
        match entity.activation.ended(entity.stopped_by_shard) {
            Ended::Failed { reason, recovered } => {
                self.failed(ctx, id, reason, recovered, entity.waiting)
            }
            Ended::Fine => {
                self.failing.remove(&id);
                // Messages came while it stopped: a fresh activation gets
                // them.
                if !entity.waiting.is_empty() {
                    self.start(ctx, id, entity.waiting);
                }
            }
        }
    }
}

//! The receptionist: find actors by role. An actor is registered under a
//! typed [`ServiceKey<M>`]; anyone can look up the current [`Listing`] of
//! a key or subscribe to it and receive every change. An actor that stops
//! leaves every listing it was in.
//!
//! # Design
//!
//! The receptionist is an actor of the system (spawned on first use), so
//! every registration, removal and lookup is a message, handled one at a
//! time, and stopped actors are noticed through ordinary death watch: it
//! watches every registered actor and every subscriber. Commands are
//! closures over the typed key, so one actor serves keys of every message
//! type. Because the whole API is messages and answers (`find` returns an
//! [`Ask`], changes arrive as messages), a transport can later make
//! listings cluster-wide by replicating registrations between the
//! receptionists of several nodes, without changing this API.
//!
//! A key is its name *and* its message type: `ServiceKey::<A>::new("x")`
//! and `ServiceKey::<B>::new("x")` are different services.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::actor::{Actor, Context, Signal};
use crate::actor_ref::{ActorId, ActorRef};
use crate::ask::{Ask, ReplyTo};
use crate::props::Props;
use crate::system::ActorSystem;

/// A typed name for a service: the actors registered under it handle `M`.
pub struct ServiceKey<M> {
    name: Arc<str>,
    _msg: PhantomData<fn() -> M>,
}

impl<M: Send + 'static> ServiceKey<M> {
    /// The key named `name` for actors that handle `M`.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        ServiceKey {
            name: name.into(),
            _msg: PhantomData,
        }
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn slot(&self) -> Slot {
        (self.name.clone(), TypeId::of::<M>())
    }
}

impl<M> Clone for ServiceKey<M> {
    fn clone(&self) -> Self {
        ServiceKey {
            name: self.name.clone(),
            _msg: PhantomData,
        }
    }
}

impl<M> PartialEq for ServiceKey<M> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl<M> Eq for ServiceKey<M> {}

impl<M> Hash for ServiceKey<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl<M> fmt::Debug for ServiceKey<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ServiceKey<{}>({:?})",
            std::any::type_name::<M>(),
            self.name
        )
    }
}

/// The actors registered under a key at one moment, in registration order.
pub struct Listing<M: Send + 'static> {
    key: ServiceKey<M>,
    refs: Vec<ActorRef<M>>,
}

impl<M: Send + 'static> Listing<M> {
    /// The key this is the listing of.
    pub fn key(&self) -> &ServiceKey<M> {
        &self.key
    }

    /// The registered actors.
    pub fn refs(&self) -> &[ActorRef<M>] {
        &self.refs
    }

    /// The registered actors, owned.
    pub fn into_refs(self) -> Vec<ActorRef<M>> {
        self.refs
    }

    /// Whether no actor is registered.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// How many actors are registered.
    pub fn len(&self) -> usize {
        self.refs.len()
    }
}

impl<M: Send + 'static> Clone for Listing<M> {
    fn clone(&self) -> Self {
        Listing {
            key: self.key.clone(),
            refs: self.refs.clone(),
        }
    }
}

impl<M: Send + 'static> fmt::Debug for Listing<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listing")
            .field("key", &self.key)
            .field(
                "refs",
                &self.refs.iter().map(|r| r.id()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A key's name and message type.
type Slot = (Arc<str>, TypeId);

/// One key's registrations and subscribers, its message type erased.
trait Service: Send {
    /// Forgets the actor `id` as a registration and as a subscriber;
    /// whether the listing changed.
    fn forget(&mut self, id: ActorId) -> bool;
    /// Tells every subscriber the current listing.
    fn notify(&self);
    fn as_any(&mut self) -> &mut dyn Any;
}

struct Typed<M: Send + 'static> {
    key: ServiceKey<M>,
    refs: Vec<ActorRef<M>>,
    subscribers: Vec<ActorRef<Listing<M>>>,
}

impl<M: Send + 'static> Typed<M> {
    fn listing(&self) -> Listing<M> {
        Listing {
            key: self.key.clone(),
            refs: self.refs.clone(),
        }
    }
}

impl<M: Send + 'static> Service for Typed<M> {
    fn forget(&mut self, id: ActorId) -> bool {
        self.subscribers.retain(|s| s.id() != id);
        let before = self.refs.len();
        self.refs.retain(|r| r.id() != id);
        self.refs.len() < before
    }

    fn notify(&self) {
        for subscriber in &self.subscribers {
            subscriber.tell(self.listing());
        }
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

/// The receptionist's state.
#[derive(Default)]
pub(crate) struct Registry {
    services: HashMap<Slot, Box<dyn Service>>,
    /// For each watched actor, the keys it is in (as either role).
    keys_of: HashMap<ActorId, HashSet<Slot>>,
}

impl Registry {
    fn service<M: Send + 'static>(&mut self, key: &ServiceKey<M>) -> &mut Typed<M> {
        self.services
            .entry(key.slot())
            .or_insert_with(|| {
                Box::new(Typed {
                    key: key.clone(),
                    refs: Vec::new(),
                    subscribers: Vec::new(),
                })
            })
            .as_any()
            .downcast_mut::<Typed<M>>()
            .expect("a slot holds the service of its own message type")
    }

    fn remember(&mut self, id: ActorId, slot: Slot) {
        self.keys_of.entry(id).or_default().insert(slot);
    }
}

pub(crate) type Command =
    Box<dyn FnOnce(&mut Registry, &mut Context<'_, ReceptionistActor>) + Send>;

/// The actor behind [`Receptionist`].
pub(crate) struct ReceptionistActor {
    registry: Registry,
}

impl ReceptionistActor {
    pub(crate) fn new() -> Self {
        ReceptionistActor {
            registry: Registry::default(),
        }
    }
}

impl Actor for ReceptionistActor {
    type Msg = Command;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, command: Command) {
        command(&mut self.registry, ctx);
    }

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            for slot in self.registry.keys_of.remove(&id).unwrap_or_default() {
                if let Some(service) = self.registry.services.get_mut(&slot) {
                    if service.forget(id) {
                        service.notify();
                    }
                }
            }
        }
    }
}

/// The system's receptionist, from
/// [`ActorSystem::receptionist`](crate::ActorSystem::receptionist). Cheap
/// to clone; usable from actors and from plain threads.
///
/// ```
/// use std::time::Duration;
/// use troupe::{Actor, ActorSystem, Context, Props};
/// use troupe::receptionist::ServiceKey;
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = u32;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _job: u32) {}
/// }
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let workers = ServiceKey::<u32>::new("workers");
/// let worker = system.spawn(Props::new(|| Worker)).unwrap();
/// system.receptionist().register(&workers, worker.clone());
/// let listing = system.receptionist().find(&workers, Duration::from_secs(5)).wait().unwrap();
/// assert_eq!(listing.refs()[0].id(), worker.id());
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
#[derive(Clone)]
pub struct Receptionist {
    /// `None` when the system was already shutting down at first use: then
    /// commands are dropped and `find` fails at once with `NoReply`, as
    /// they would against a stopped receptionist.
    pub(crate) actor: Option<ActorRef<Command>>,
    pub(crate) system: ActorSystem,
}

impl ActorSystem {
    /// The system's receptionist: register actors under typed keys, look
    /// them up, subscribe to listings (see [`crate::receptionist`]). Its
    /// actor is spawned on first use, as a top-level actor of the system.
    pub fn receptionist(&self) -> Receptionist {
        // The kernel keeps the ref in an erased slot: the receptionist is a
        // client of the system, which does not know its type.
        let mut slot = self
            .inner()
            .receptionist
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            if let Ok(actor) = self.spawn(Props::new(ReceptionistActor::new)) {
                *slot = Some(Box::new(actor));
            }
        }
        let actor = slot.as_ref().map(|actor| {
            actor
                .downcast_ref::<ActorRef<Command>>()
                .expect("the receptionist slot holds the receptionist's ref")
                .clone()
        });
        Receptionist {
            actor,
            system: self.clone(),
        }
    }
}

impl Receptionist {
    /// Lists `actor` under `key` until it stops or is deregistered.
    /// Registering it twice lists it once. Subscribers of the key are told
    /// the new listing.
    pub fn register<M: Send + 'static>(&self, key: &ServiceKey<M>, actor: ActorRef<M>) {
        let key = key.clone();
        self.tell(Box::new(move |registry, ctx| {
            let service = registry.service(&key);
            if service.refs.iter().any(|r| r.is_same_ref(&actor)) {
                return;
            }
            service.refs.push(actor.clone());
            service.notify();
            registry.remember(actor.id(), key.slot());
            ctx.watch(&actor);
        }));
    }

    /// Takes `actor` off the listing of `key` (it stays on other keys).
    pub fn deregister<M: Send + 'static>(&self, key: &ServiceKey<M>, actor: &ActorRef<M>) {
        let (key, actor) = (key.clone(), actor.clone());
        self.tell(Box::new(move |registry, _ctx| {
            let service = registry.service(&key);
            let before = service.refs.len();
            service.refs.retain(|r| !r.is_same_ref(&actor));
            if service.refs.len() < before {
                service.notify();
            }
        }));
    }

    /// The current listing of `key`, as an [`Ask`] (`.await` it, or
    /// `wait()` on a plain thread). It reflects every registration and
    /// stop the receptionist has handled before this request.
    pub fn find<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        timeout: Duration,
    ) -> Ask<Listing<M>> {
        let key = key.clone();
        let make = move |reply: ReplyTo<Listing<M>>| -> Command {
            Box::new(move |registry, _ctx| {
                reply.reply(registry.service(&key).listing());
            })
        };
        match &self.actor {
            Some(actor) => actor.ask(make, timeout),
            None => {
                // Dropping the unanswered reply handle fails the ask.
                let (reply, ask) = ReplyTo::pair(&self.system, ActorId(0), timeout);
                drop(reply);
                ask
            }
        }
    }

    /// Tells `subscriber` the current listing of `key` at once and again
    /// after every change, until the subscriber stops. Listings reach it
    /// in the order of the changes.
    pub fn subscribe<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        subscriber: ActorRef<Listing<M>>,
    ) {
        let key = key.clone();
        self.tell(Box::new(move |registry, ctx| {
            let service = registry.service(&key);
            subscriber.tell(service.listing());
            service.subscribers.push(subscriber.clone());
            registry.remember(subscriber.id(), key.slot());
            ctx.watch(&subscriber);
        }));
    }
}

impl Receptionist {
    fn tell(&self, command: Command) {
        if let Some(actor) = &self.actor {
            actor.tell(command);
        }
    }
}

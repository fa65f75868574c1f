//! The storage of the event stream's topics, and the runtime's own events.
//! The event stream (`system/event_stream.rs`) subscribes and publishes
//! through it; the kernel and the cell publish dead letters and lifecycle
//! events through the two functions the system's builder gives it, so
//! that they need not know the refs the subscribers are.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use super::DeadLetter;
use crate::ids::ActorId;
use crate::supervision::Failure;

/// A change in an actor's life, published on the event stream when anyone
/// subscribes to `ActorEvent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorEvent {
    /// The actor.
    pub actor: ActorId,
    /// Its name, if it was given one.
    pub name: Option<String>,
    /// What happened.
    pub kind: ActorEventKind,
}

/// What happened to an actor (see [`ActorEvent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActorEventKind {
    /// The actor was built and its `started` hook returned.
    Started,
    /// A fresh instance replaced a failed one; its `after_restart` returned.
    Restarted {
        /// The failure that caused the restart.
        failure: Failure,
    },
    /// The actor and its children stopped for good.
    Stopped,
}

/// Per event type, its subscriber list, erased (an `Arc<Vec<ActorRef<E>>>`).
pub(crate) struct Topics {
    pub(crate) topics: RwLock<HashMap<TypeId, Box<dyn Any + Send + Sync>>>,
    /// Whether `ActorEvent` or `DeadLetter` ever had a subscriber: the
    /// runtime builds those events only then.
    pub(crate) actor_events: AtomicBool,
    pub(crate) dead_letters: AtomicBool,
    /// Publishes a dead letter to its subscribers.
    publish_dead_letter: fn(&Topics, &dyn Fn() -> DeadLetter),
    /// Publishes a lifecycle event to its subscribers.
    publish_actor_event: fn(&Topics, ActorEvent),
}

impl Topics {
    pub(crate) fn new(
        publish_dead_letter: fn(&Topics, &dyn Fn() -> DeadLetter),
        publish_actor_event: fn(&Topics, ActorEvent),
    ) -> Self {
        Topics {
            topics: RwLock::default(),
            actor_events: AtomicBool::new(false),
            dead_letters: AtomicBool::new(false),
            publish_dead_letter,
            publish_actor_event,
        }
    }

    /// Publishes a dead letter if anyone ever subscribed to `DeadLetter`.
    pub(crate) fn dead_letter(&self, letter: &dyn Fn() -> DeadLetter) {
        if self.dead_letters.load(Ordering::Acquire) {
            (self.publish_dead_letter)(self, letter);
        }
    }

    /// Publishes an actor's lifecycle event if anyone ever subscribed to
    /// `ActorEvent`.
    pub(crate) fn actor_event(
        &self,
        actor: ActorId,
        name: Option<&str>,
        kind: impl FnOnce() -> ActorEventKind,
    ) {
        if self.actor_events.load(Ordering::Acquire) {
            (self.publish_actor_event)(
                self,
                ActorEvent {
                    actor,
                    name: name.map(str::to_string),
                    kind: kind(),
                },
            );
        }
    }
}

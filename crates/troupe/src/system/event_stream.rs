//! The system's event stream: publish/subscribe by message type, with
//! subscribers as ordinary actor refs. The runtime publishes its dead
//! letters ([`DeadLetter`]) and the actors' lifecycle ([`ActorEvent`]) here.
//!
//! # Design
//!
//! One topic per event type (`TypeId`), each an `Arc` of its subscriber
//! list, replaced as a whole when a subscriber comes or goes (copy on
//! write). A publish clones that `Arc` under a read lock and tells each
//! subscriber outside it, so a tell that itself publishes (a dead letter,
//! say) never waits on the lock. Subscribers that have stopped are skipped
//! and dropped from the topic by the publish or subscribe that finds them.
//!
//! The runtime's own events cost one atomic load per actor start, restart,
//! stop and dead letter while nobody subscribes to their type.

use std::any::TypeId;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::actor_ref::ActorRef;
use crate::kernel::{ActorEvent, DeadLetter, Kernel, Topics};

// The topics' storage (`Topics`, per event type an erased
// `Arc<Vec<ActorRef<E>>>`) lives in the kernel, which every cell shares;
// how they are read and written is here.

thread_local! {
    /// Set while this thread publishes a dead letter: a dead letter that the
    /// publish itself causes (a subscriber's full mailbox) is counted but not
    /// published again, so a full subscriber cannot make a loop.
    static PUBLISHING_DEAD_LETTER: Cell<bool> = const { Cell::new(false) };
}

impl Topics {
    fn subscribers<E: Clone + Send + 'static>(&self) -> Option<Arc<Vec<ActorRef<E>>>> {
        let topics = self.topics.read().unwrap_or_else(|e| e.into_inner());
        topics.get(&TypeId::of::<E>()).map(|t| {
            t.downcast_ref::<Arc<Vec<ActorRef<E>>>>()
                .expect("a topic holds refs of its own type")
                .clone()
        })
    }

    /// Replaces the subscriber list of `E` with `change(list)`.
    fn update<E: Clone + Send + 'static>(&self, change: impl FnOnce(&mut Vec<ActorRef<E>>)) {
        let mut topics = self.topics.write().unwrap_or_else(|e| e.into_inner());
        let topic = topics
            .entry(TypeId::of::<E>())
            .or_insert_with(|| Box::new(Arc::new(Vec::<ActorRef<E>>::new())));
        let list = topic
            .downcast_mut::<Arc<Vec<ActorRef<E>>>>()
            .expect("a topic holds refs of its own type");
        let mut fresh: Vec<ActorRef<E>> = list
            .iter()
            .filter(|r| !r.is_terminated())
            .cloned()
            .collect();
        change(&mut fresh);
        *list = Arc::new(fresh);
    }

    pub(crate) fn subscribe<E: Clone + Send + 'static>(&self, subscriber: ActorRef<E>) {
        self.update(|list: &mut Vec<ActorRef<E>>| {
            if !list.iter().any(|r| r.is_same_ref(&subscriber)) {
                list.push(subscriber);
            }
        });
        if TypeId::of::<E>() == TypeId::of::<ActorEvent>() {
            self.actor_events.store(true, Ordering::Release);
        }
        if TypeId::of::<E>() == TypeId::of::<DeadLetter>() {
            self.dead_letters.store(true, Ordering::Release);
        }
    }

    pub(crate) fn unsubscribe<E: Clone + Send + 'static>(&self, subscriber: &ActorRef<E>) -> bool {
        let mut found = false;
        self.update(|list: &mut Vec<ActorRef<E>>| {
            let before = list.len();
            list.retain(|r| !r.is_same_ref(subscriber));
            found = list.len() < before;
        });
        found
    }

    pub(crate) fn publish<E: Clone + Send + 'static>(&self, event: E) -> usize {
        let Some(subscribers) = self.subscribers::<E>() else {
            return 0;
        };
        let mut reached = 0;
        let mut stale = false;
        for subscriber in subscribers.iter() {
            if subscriber.is_terminated() {
                stale = true;
                continue;
            }
            subscriber.tell(event.clone());
            reached += 1;
        }
        if stale {
            self.update(|_: &mut Vec<ActorRef<E>>| {});
        }
        reached
    }
}

/// Publishes an actor's lifecycle event: the kernel calls it (through
/// `Topics::publish_actor_event`, which the system's builder sets to it)
/// only if anyone ever subscribed to `ActorEvent`.
pub(crate) fn publish_actor_event(topics: &Topics, event: ActorEvent) {
    topics.publish(event);
}

/// Publishes a dead letter if anyone ever subscribed, unless this thread
/// is already publishing one: the kernel's `dead_letter` calls it through
/// `Topics::publish_dead_letter`, which the system's builder sets to it.
pub(crate) fn publish_dead_letter(topics: &Topics, letter: &dyn Fn() -> DeadLetter) {
    if !topics.dead_letters.load(Ordering::Acquire) || PUBLISHING_DEAD_LETTER.get() {
        return;
    }
    PUBLISHING_DEAD_LETTER.set(true);
    topics.publish(letter());
    PUBLISHING_DEAD_LETTER.set(false);
}

/// The system's event stream, from [`ActorSystem::event_stream`](crate::ActorSystem::event_stream).
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use troupe::{Actor, ActorEvent, ActorEventKind, ActorSystem, Context, Props};
///
/// // A monitor that hears of every actor that stops.
/// struct Monitor { out: mpsc::Sender<ActorEvent> }
/// impl Actor for Monitor {
///     type Msg = ActorEvent;
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, event: ActorEvent) {
///         if event.kind == ActorEventKind::Stopped {
///             self.out.send(event).unwrap();
///         }
///     }
/// }
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = ();
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
/// }
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let (out, stopped) = mpsc::channel();
/// let monitor = system.spawn(Props::new(move || Monitor { out: out.clone() })).unwrap();
/// system.event_stream().subscribe(monitor);
/// let worker = system.spawn(Props::new(|| Worker).name("worker")).unwrap();
/// system.stop(&worker);
/// let event = stopped.recv_timeout(Duration::from_secs(5)).unwrap();
/// assert_eq!(event.name.as_deref(), Some("worker"));
/// system.shutdown();
/// system.await_termination().unwrap();
/// ```
pub struct EventStream {
    pub(crate) inner: Arc<Kernel>,
}

impl EventStream {
    /// Delivers every event of type `E` published from now on to
    /// `subscriber` (once, however often it subscribes). A subscriber that
    /// stops is dropped from the stream.
    pub fn subscribe<E: Clone + Send + 'static>(&self, subscriber: ActorRef<E>) {
        self.inner.events.subscribe(subscriber);
    }

    /// Stops delivering `E` to `subscriber`; false if it was not subscribed.
    pub fn unsubscribe<E: Clone + Send + 'static>(&self, subscriber: &ActorRef<E>) -> bool {
        self.inner.events.unsubscribe(subscriber)
    }

    /// Tells a copy of `event` to every live subscriber of `E`; returns how
    /// many it reached. Events from one thread reach each subscriber in the
    /// order they were published.
    pub fn publish<E: Clone + Send + 'static>(&self, event: E) -> usize {
        self.inner.events.publish(event)
    }
}

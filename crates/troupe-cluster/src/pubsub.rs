//! Distributed publish-subscribe: named topics that actors on any node
//! subscribe to, and that any node publishes to.
//!
//! A [`Topic<M>`] is a NATS subject, `troupe.<cluster>.topic.<tag>.<name>`
//! (so two message types never share a topic by accident). A message is
//! encoded once ([`Node::to_bytes`]: `ActorRef` fields travel, a `ReplyTo`
//! cannot) and published once; NATS delivers it to every node with a
//! subscriber, and each node hands a copy to its subscribers there. A
//! **group** subscription ([`Topic::subscribe_in_group`]) is a NATS queue
//! group: each message reaches one subscriber of the group in the whole
//! cluster (a work queue), beside every plain subscriber.
//!
//! Delivery is at most once, like every tell across nodes: a message
//! published while a subscriber's node is cut off from NATS is not kept
//! for it. Order is kept per publishing node and subscriber: messages one
//! node publishes reach each subscriber in the order they were published
//! (one connection, one writer task, one delivering task per subscription).
//! A subscriber that stops is dropped from its topic at the next message.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::sync::mpsc;
use troupe::ActorRef;
use troupe_remote::{Node, RemoteMessage};

use crate::token::escape;

/// How many published messages may wait for the connection before
/// `publish` refuses more ([`PubSubError::Full`]).
pub const PUBLISH_QUEUE: usize = 65_536;

/// Why a publish or a subscription failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PubSubError {
    /// The message could not be encoded (a `ReplyTo` field, or a field
    /// serde refuses); nothing was sent.
    Encoding(String),
    /// [`PUBLISH_QUEUE`] messages already wait for the connection (NATS
    /// is slow or unreachable); this one was not queued.
    Full,
    /// NATS refused the subscription.
    Nats(String),
    /// The topic's writer ended: the node shut down.
    Stopped,
}

impl std::fmt::Display for PubSubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PubSubError::Encoding(e) => write!(f, "cannot encode the message: {e}"),
            PubSubError::Full => write!(
                f,
                "{PUBLISH_QUEUE} published messages wait for NATS; not queued"
            ),
            PubSubError::Nats(e) => write!(f, "NATS: {e}"),
            PubSubError::Stopped => f.write_str("the topic's node has shut down"),
        }
    }
}

impl std::error::Error for PubSubError {}

/// What one topic handle did on this node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicStats {
    /// Messages this handle queued for publishing.
    pub published: u64,
    /// Copies handed to this node's subscribers.
    pub delivered: u64,
    /// Messages received that did not decode as `M` (logged).
    pub undecodable: u64,
}

/// A named topic of messages `M`; clones share the subscriptions.
///
/// ```no_run
/// use troupe_cluster::pubsub::Topic;
///
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct News(String);
/// impl troupe_remote::RemoteMessage for News {
///     const TAG: &'static str = "example.News";
/// }
///
/// # async fn run(node: std::sync::Arc<troupe_remote::Node>, reader: troupe::ActorRef<News>)
/// # -> Result<(), troupe_cluster::pubsub::PubSubError> {
/// let news = Topic::<News>::new(node.clone(), "news");
/// news.subscribe(&reader).await?;
/// // On this node or any other:
/// news.publish(&News("extra".into()))?;
/// # Ok(()) }
/// ```
pub struct Topic<M: RemoteMessage + Clone> {
    inner: Arc<Inner<M>>,
}

impl<M: RemoteMessage + Clone> Clone for Topic<M> {
    fn clone(&self) -> Self {
        Topic {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<M: Send + 'static> {
    node: Arc<Node>,
    subject: String,
    outgoing: mpsc::Sender<Vec<u8>>,
    writer: tokio::task::JoinHandle<()>,
    /// Subscriptions by group (`None`: every subscriber).
    groups: tokio::sync::Mutex<HashMap<Option<String>, Subscription<M>>>,
    published: AtomicU64,
    counts: Arc<Counts>,
}

/// Counted by the delivering tasks.
#[derive(Default)]
struct Counts {
    delivered: AtomicU64,
    undecodable: AtomicU64,
}

/// This node's subscribers behind one NATS subscription; `None` once the
/// subscription ended (its last subscriber stopped), so a new subscriber
/// makes a new one rather than join one nobody reads.
type Members<M> = Arc<Mutex<Option<Vec<ActorRef<M>>>>>;

/// One NATS subscription and this node's subscribers behind it.
struct Subscription<M: Send + 'static> {
    members: Members<M>,
    task: tokio::task::JoinHandle<()>,
}

impl<M: Send + 'static> Drop for Inner<M> {
    fn drop(&mut self) {
        self.writer.abort();
        if let Ok(groups) = self.groups.try_lock() {
            for subscription in groups.values() {
                subscription.task.abort();
            }
        }
    }
}

impl<M: RemoteMessage + Clone> Topic<M> {
    /// The topic `name` (any string) of `M`s, through `node`. Must be
    /// called inside a tokio runtime (it starts the topic's writer).
    pub fn new(node: Arc<Node>, name: &str) -> Topic<M> {
        let subject = format!(
            "troupe.{}.topic.{}.{}",
            node.config().cluster_name,
            escape(M::TAG),
            escape(name)
        );
        let (outgoing, queued) = mpsc::channel(PUBLISH_QUEUE);
        let writer = tokio::spawn(publish_all(node.nats_client(), subject.clone(), queued));
        Topic {
            inner: Arc::new(Inner {
                node,
                subject,
                outgoing,
                writer,
                groups: tokio::sync::Mutex::new(HashMap::new()),
                published: AtomicU64::new(0),
                counts: Arc::default(),
            }),
        }
    }

    /// Publishes `msg` to every subscriber in the cluster, and to one of
    /// each group. Returns once it is queued for the connection: from an
    /// actor's handler too (it does not block).
    pub fn publish(&self, msg: &M) -> Result<(), PubSubError> {
        let bytes = self
            .inner
            .node
            .to_bytes(msg)
            .map_err(|e| PubSubError::Encoding(e.to_string()))?;
        match self.inner.outgoing.try_send(bytes) {
            Ok(()) => {
                self.inner.published.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(PubSubError::Full),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(PubSubError::Stopped),
        }
    }

    /// Subscribes `actor`: it gets every message published from now on,
    /// from any node. When this returns, the NATS server has the
    /// subscription, so a message published after it reaches the actor.
    /// Subscribing an actor twice subscribes it once.
    pub async fn subscribe(&self, actor: &ActorRef<M>) -> Result<(), PubSubError> {
        self.join(None, actor).await
    }

    /// Subscribes `actor` to `group`: each message reaches one subscriber
    /// of the group in the cluster (chosen by NATS among the nodes, then
    /// in turn among the group's subscribers on that node).
    pub async fn subscribe_in_group(
        &self,
        group: &str,
        actor: &ActorRef<M>,
    ) -> Result<(), PubSubError> {
        self.join(Some(escape(group)), actor).await
    }

    /// Takes `actor` off the topic (every group included); a subscription
    /// left with no subscriber on this node ends at the server.
    pub async fn unsubscribe(&self, actor: &ActorRef<M>) {
        let mut groups = self.inner.groups.lock().await;
        groups.retain(|_, subscription| {
            let mut members = subscription
                .members
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(list) = members.as_mut() {
                list.retain(|m| m.id() != actor.id());
                if !list.is_empty() {
                    return true;
                }
            }
            *members = None;
            subscription.task.abort();
            false
        });
    }

    /// This node's live subscribers of the topic, groups included (waits
    /// for a subscribe or unsubscribe in progress).
    pub async fn subscribers(&self) -> usize {
        let groups = self.inner.groups.lock().await;
        groups
            .values()
            .map(|s| {
                let members = s.members.lock().unwrap_or_else(|e| e.into_inner());
                members
                    .iter()
                    .flatten()
                    .filter(|m| !m.is_terminated())
                    .count()
            })
            .sum()
    }

    /// What this handle and its clones did on this node.
    pub fn stats(&self) -> TopicStats {
        TopicStats {
            published: self.inner.published.load(Ordering::Relaxed),
            delivered: self.inner.counts.delivered.load(Ordering::Relaxed),
            undecodable: self.inner.counts.undecodable.load(Ordering::Relaxed),
        }
    }

    async fn join(&self, group: Option<String>, actor: &ActorRef<M>) -> Result<(), PubSubError> {
        let mut groups = self.inner.groups.lock().await;
        if let Some(subscription) = groups.get(&group) {
            let mut members = subscription
                .members
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(list) = members.as_mut() {
                if !list.iter().any(|m| m.id() == actor.id()) {
                    list.push(actor.clone());
                }
                return Ok(());
            }
            // Ended: subscribe afresh below.
        }
        let client = self.inner.node.nats_client();
        let subject = self.inner.subject.clone();
        let subscriber = match &group {
            None => client.subscribe(subject).await,
            Some(group) => client.queue_subscribe(subject, group.clone()).await,
        }
        .map_err(|e| PubSubError::Nats(e.to_string()))?;
        round_trip(&client).await?;
        let members = Arc::new(Mutex::new(Some(vec![actor.clone()])));
        let task = tokio::spawn(deliver(
            self.inner.node.clone(),
            subscriber,
            members.clone(),
            group.is_some(),
            self.inner.counts.clone(),
        ));
        groups.insert(group, Subscription { members, task });
        Ok(())
    }
}

/// A message to ourselves through the server, on `client`'s connection.
/// The server handles a connection's commands in order, so when it comes
/// back every subscription made before it is in place. (A flush is not
/// enough: it only writes the commands to the socket; a publish from
/// another connection could still reach the server before them.)
async fn round_trip(client: &async_nats::Client) -> Result<(), PubSubError> {
    let nats = |e: &dyn std::fmt::Display| PubSubError::Nats(e.to_string());
    let inbox = client.new_inbox();
    let mut echo = client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| nats(&e))?;
    client
        .publish(inbox, Vec::new().into())
        .await
        .map_err(|e| nats(&e))?;
    client.flush().await.map_err(|e| nats(&e))?;
    match tokio::time::timeout(ROUND_TRIP_WITHIN, echo.next()).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(PubSubError::Stopped),
        Err(_) => Err(PubSubError::Nats(format!(
            "the server did not confirm the subscription within {ROUND_TRIP_WITHIN:?}"
        ))),
    }
}

/// How long a subscription waits for the server to confirm it.
const ROUND_TRIP_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The topic's writer: publishes in the order `publish` queued.
async fn publish_all(
    client: async_nats::Client,
    subject: String,
    mut queued: mpsc::Receiver<Vec<u8>>,
) {
    let subject = async_nats::Subject::from(subject);
    while let Some(bytes) = queued.recv().await {
        if let Err(e) = client.publish(subject.clone(), bytes.into()).await {
            tracing::warn!(target: "troupe::pubsub", subject = %subject, error = %e,
                "a published message was not sent");
        }
    }
}

/// One subscription's delivering task: decodes each message once and
/// hands it to every live subscriber, or (a group) to the next one in turn.
async fn deliver<M: RemoteMessage + Clone>(
    node: Arc<Node>,
    mut subscriber: async_nats::Subscriber,
    members: Members<M>,
    one_each: bool,
    counts: Arc<Counts>,
) {
    let mut turn = 0usize;
    while let Some(message) = subscriber.next().await {
        let msg: M = match node.from_bytes(&message.payload) {
            Ok(msg) => msg,
            Err(e) => {
                counts.undecodable.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "troupe::pubsub", subject = %message.subject, error = %e,
                    "a message that is not this topic's type was dropped");
                continue;
            }
        };
        let mut guard = members.lock().unwrap_or_else(|e| e.into_inner());
        let Some(members) = guard.as_mut() else {
            return;
        };
        members.retain(|m| !m.is_terminated());
        if members.is_empty() {
            // Nobody here reads the subscription any more: end it (the
            // subscriber is dropped, which unsubscribes at the server), so
            // a group's messages go to its other nodes from now on.
            *guard = None;
            return;
        }
        if one_each {
            turn = (turn + 1) % members.len();
            members[turn].tell(msg);
            counts.delivered.fetch_add(1, Ordering::Relaxed);
        } else {
            for member in members.iter() {
                member.tell(msg.clone());
            }
            counts
                .delivered
                .fetch_add(members.len() as u64, Ordering::Relaxed);
        }
    }
}

//! The node: one NATS connection per actor system, its API (start,
//! publish, lookup, members, shutdown) and the state its tasks share. The
//! tasks are in `node/tasks.rs`, the sending side of looked-up refs in
//! `node/target.rs`, the connection options in `node/connect.rs`, the
//! frame limit learned from the server in `node/limits.rs`, refusals in
//! `node/refusal.rs`.
//!
//! # Subjects
//!
//! ```text
//! troupe.<cluster>.actor.<name>       tell frames for the actor published as <name>
//! troupe.<cluster>.lookup.<name>      lookups of <name> (request-reply, payload: tag)
//! troupe.<cluster>.reply.<node>       reply, no-reply and refused frames for <node>'s asks
//! troupe.<cluster>.noreply.<node>.…   the reply subject of <node>'s messages to actors:
//!                                     no responders, and refusals (`node/refusal.rs`)
//! troupe.<cluster>.ref.<node>.<token> tell frames for an actor <node> exported
//! troupe.<cluster>.system.<node>.<from>  control messages for <node> from <from>
//! troupe.<cluster>.members.beat.<node>  heartbeats, and .leave.<node> (`membership.rs`)
//! ```
//!
//! Every client allowed on these subjects can send a node anything; what
//! a node does about claims that would take a node or an actor away
//! (`node/confirm.rs`), and what any message can cost it (`bounds.rs`),
//! is bounded. Who should be allowed is docs/operations.md's "Who may
//! talk to a node".
//!
//! Every start of a node draws a random 64-bit **incarnation**. A ref from
//! `lookup` (or received in a message) names the node and incarnation
//! that served its actor, and every frame sent through it carries that
//! incarnation: a node restarted under the same name refuses the frame
//! (`WrongIncarnation`), so an old ref never reaches the new process, and
//! the sender learns of the restart from the refusal or the new
//! heartbeat (`node/watch.rs`, `liveness.rs`). A running node draws a new
//! incarnation when it resumes from a stall the others may have taken for
//! its death (`tasks::renew`): to them it is a restart, while its actors
//! keep running here. A ref from `select` names
//! only the published name: NATS routes its frames to whichever node
//! serves the name at the time. An actor sent inside a message is
//! exported under a random token (`node/refs.rs`). Only published and
//! exported actors have a subject; a frame whose header names another
//! actor than its subject's is refused (`UnknownName`). Death watch is in
//! `node/watch.rs`, the table of reachable local actors in
//! `node/locals.rs`.
//!
//! # Flow
//!
//! Sends (`tell`, `ask` on a remote ref) encode on the caller's thread and
//! `try_send` into one bounded channel (`outbound_buffer`); the writer task
//! hands each frame to the async-nats client in channel order. A full
//! channel is a dead letter, never a blocked sender; so is a frame over
//! the node's frame limit (`max_frame_size`, or the server's
//! `max_payload` if less), refused before it is queued: the node never
//! publishes what would make the server close its connection. Received
//! frames are decoded in the subscription's task and told to the local
//! actor.

mod confirm;
mod connect;
mod control;
mod heard;
mod limits;
mod locals;
pub(crate) mod refs;
pub(crate) mod refusal;
mod target;
mod tasks;
mod watch;

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_nats::connection::State;
use async_nats::{Client, Subject};
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use troupe::transport::{with_codec, Codec};
use troupe::{ActorId, ActorRef, ActorSystem};

use crate::address::{Address, Kind};
use crate::batching::{BatchCounters, BatchStats};
use crate::bounds::{Footprint, DOWN_PER_MEMBER};
use crate::config::{valid_token, RemoteConfig};
use crate::dead_letters::{DeadLetter, DeadLetterReason, DeadLetters};
use crate::error::RemoteError;
use crate::liveness::Registry;
use crate::membership::{MemberEvent, Membership};
use crate::reply_to::{Answer, Pending, ReplySink};
use crate::wire::{self, RemoteMessage};
use confirm::Claims;
use connect::connect_options;
use limits::FrameLimit;
use locals::Locals;
use refusal::Refusals;
use tasks::{answer_lookups, beat, listen_replies, serve, serve_exports, sweep, write};
use watch::Watching;

/// What the writer task takes.
enum Outgoing {
    /// A frame for `subject`. A frame carrying an ask's reply handle names
    /// it (`ask`): the message is published with a reply subject listing
    /// the asks it carries, where the server answers "no responders" when
    /// nobody serves `subject`, and those asks fail at once. A frame for
    /// an actor (`to_actor`: a tell, not an answer or a control message)
    /// gets a reply subject even without asks, where the receiving node
    /// can refuse it back (`node/refusal.rs`).
    Frame {
        subject: Subject,
        ask: Option<u64>,
        to_actor: bool,
        payload: Bytes,
    },
    /// Answered once every frame queued before it is with the client and
    /// the client has flushed.
    Flush(oneshot::Sender<()>),
}

/// State shared by the node handle, its tasks and every remote ref.
struct Shared {
    config: RemoteConfig,
    /// This node's incarnation now (random, never 0): drawn at start, and
    /// drawn afresh when the process resumes from a stall the other nodes
    /// may have taken for its death (see `tasks::beat`).
    incarnation: AtomicU64,
    system: ActorSystem,
    client: Client,
    dead_letters: Arc<DeadLetters>,
    pending: Arc<Pending>,
    /// `troupe.<cluster>.reply.<node>`.
    reply_subject: Arc<str>,
    /// `troupe.<cluster>.reply.`.
    reply_prefix: Arc<str>,
    /// `troupe.<cluster>.noreply.<node>.`: where the server says that a
    /// message found no responders, and a receiving node refuses frames
    /// back (`node/refusal.rs`).
    no_responders_prefix: Arc<str>,
    /// `troupe.<cluster>.noreply.<node>.t`: the reply subject of a message
    /// of tells only.
    tells_reply: Subject,
    /// The largest NATS message the node publishes (`node/limits.rs`).
    limit: Arc<FrameLimit>,
    /// The budget of refusals sent, and the throttles of their logs.
    refusals: Refusals,
    membership: Membership,
    /// The runtime the node's tasks run on (for work started from actor
    /// threads: watch requests, unpublishing a stopped actor).
    runtime: tokio::runtime::Handle,
    /// Local actors other nodes can reach, with their watching nodes.
    locals: Locals,
    /// Actors elsewhere watched from here.
    watching: Watching,
    /// What this node knows of the actors its refs point at.
    liveness: Registry,
    /// Published names: their subscription tasks.
    published: Mutex<HashMap<String, PublishedEntry>>,
    stopped: AtomicBool,
    /// The longest stall of this process the heartbeat task saw, and the
    /// last one.
    stall: Mutex<Stalls>,
    /// Frames per published message, counted by the writer.
    batches: BatchCounters,
    /// Claims about other nodes being confirmed (`node/confirm.rs`).
    claims: Claims,
}

/// A stall of this node's process: its heartbeat task ran this late (the
/// process was paused, swapped out or starved of CPU). See
/// [`Node::longest_stall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// When it was noticed (just after it ended).
    pub ended: std::time::Instant,
    /// How long it lasted, about.
    pub lasted: std::time::Duration,
}

/// The stalls the heartbeat task saw: the longest, the last, and the
/// longest since this node became its current incarnation.
#[derive(Default)]
struct Stalls {
    longest: Option<Stall>,
    last: Option<Stall>,
    this_incarnation: Option<Stall>,
}

impl Shared {
    /// Why a message or answer of `len` bytes cannot be sent: over
    /// `max_frame_size` (`Oversized`), else over the server's
    /// `max_payload` (`OverMaxPayload`); and the same in words, naming
    /// the limit and the fix, starting with `what`.
    fn too_large(&self, what: &str, len: usize) -> (DeadLetterReason, String) {
        let max_frame_size = self.limit.max_frame_size();
        if len > max_frame_size {
            let why = format!(
                "{what} is {len} bytes encoded, over RemoteConfig::max_frame_size of \
                 {max_frame_size} bytes: not sent"
            );
            return (DeadLetterReason::Oversized, why);
        }
        let max_payload = self.limit.server_max_payload();
        let why = format!(
            "{what} is {len} bytes encoded, over the NATS server's max_payload of {max_payload} \
             bytes: not sent (the server would close the connection over it; raise \
             max_payload in the server's configuration, or send less)"
        );
        (DeadLetterReason::OverMaxPayload, why)
    }

    /// Refuses a message or answer of `len` bytes for `subject` that is
    /// over the frame limit: counts it, logs it (at most once a second),
    /// and fails `asks` at once with the reason.
    fn refuse_too_large(&self, what: &str, subject: &str, len: usize, asks: &[u64]) {
        let (reason, why) = self.too_large(what, len);
        self.dead_letters.record(reason, subject);
        self.pending.fail(asks, Answer::Refused(&why));
        if let Some(left_out) = self.refusals.too_large.allow() {
            tracing::warn!(
                node = %self.config.node_name,
                subject,
                ?reason,
                lines_left_out = left_out,
                "troupe-remote: {why}"
            );
        }
    }

    /// This node's incarnation now (it changes only when the process
    /// resumes from a long stall: see `tasks::beat`).
    fn incarnation(&self) -> u64 {
        self.incarnation.load(Ordering::Acquire)
    }

    /// The incarnation of `node` as this node knows it now: its own for
    /// itself, else the one heard last, if it is up.
    fn heard_incarnation(&self, node: &str) -> Option<u64> {
        if node == self.config.node_name {
            Some(self.incarnation())
        } else {
            self.membership.incarnation(node)
        }
    }
}

/// The sending side, cloned into every remote ref and reply task.
#[derive(Clone)]
pub(crate) struct Outbound {
    tx: mpsc::Sender<Outgoing>,
    shared: Arc<Shared>,
}

impl Outbound {
    /// Runs `f` (an encode or a decode without reply handles, such as an
    /// answer) with this node's codec installed for the `ActorRef` fields
    /// it meets (troupe's `transport`; see `node/refs.rs`).
    pub(crate) fn scope<T>(&self, f: impl FnOnce() -> T) -> T {
        let codec = refs::NodeCodec {
            outbound: self.clone(),
            replies: None,
        };
        with_codec(Rc::new(codec), f)
    }

    /// [`scope`](Outbound::scope) for a message sent or received: `replies`
    /// (`reply_to`'s codec of the send or the receive) takes its
    /// `ReplyTo` fields.
    pub(crate) fn scope_with<T>(&self, replies: Rc<dyn Codec>, f: impl FnOnce() -> T) -> T {
        let codec = refs::NodeCodec {
            outbound: self.clone(),
            replies: Some(replies),
        };
        with_codec(Rc::new(codec), f)
    }

    /// Queues a frame for the writer task; a frame over the node's frame
    /// limit is `Oversized` or `OverMaxPayload` (see [`Shared::too_large`]).
    fn send(
        &self,
        subject: Subject,
        ask: Option<u64>,
        to_actor: bool,
        frame: Vec<u8>,
    ) -> Result<(), DeadLetterReason> {
        if frame.len() > self.shared.limit.get() {
            return Err(self.shared.too_large("", frame.len()).0);
        }
        let out = Outgoing::Frame {
            subject,
            ask,
            to_actor,
            payload: frame.into(),
        };
        match self.tx.try_send(out) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                if self.shared.client.connection_state() == State::Connected {
                    Err(DeadLetterReason::OutboundFull)
                } else {
                    Err(DeadLetterReason::Unreachable)
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(DeadLetterReason::NodeStopped),
        }
    }

    /// Queues a frame that is not for an actor (an answer, a control
    /// message), or records why it could not be.
    pub(crate) fn send_or_dead_letter(&self, subject: Subject, frame: Vec<u8>) {
        let len = frame.len();
        match self.send(subject.clone(), None, false, frame) {
            Ok(()) => {}
            Err(DeadLetterReason::Oversized | DeadLetterReason::OverMaxPayload) => {
                self.shared.refuse_too_large("a frame", &subject, len, &[]);
            }
            Err(reason) => self.dead_letter(reason, &subject),
        }
    }

    /// Queues a frame for an actor carrying the asks `asks` (registered
    /// while it was encoded), or records why it could not be and fails
    /// the asks at once.
    pub(crate) fn send_to_actor(
        &self,
        subject: &Subject,
        asks: &[u64],
        frame: Vec<u8>,
    ) -> Result<(), DeadLetterReason> {
        let len = frame.len();
        // The (first) ask in the frame learns at once if nobody serves it.
        match self.send(subject.clone(), asks.first().copied(), true, frame) {
            Ok(()) => Ok(()),
            Err(DeadLetterReason::Oversized | DeadLetterReason::OverMaxPayload) => {
                self.shared
                    .refuse_too_large("the message", subject, len, asks);
                Ok(())
            }
            Err(reason) => Err(reason),
        }
    }

    pub(crate) fn dead_letter(&self, reason: DeadLetterReason, subject: &str) {
        self.shared.dead_letters.record(reason, subject);
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::Acquire)
    }

    /// Ends the subscriptions of `name` if it is still the stopped actor
    /// `id`'s (called from its sentinel, on an actor thread).
    pub(crate) fn unpublish_later(&self, name: &str, id: ActorId) {
        let shared = self.shared.clone();
        let name = name.to_string();
        self.shared.runtime.spawn(async move {
            let entry = {
                let mut published = shared.published.lock().unwrap_or_else(|e| e.into_inner());
                match published.get(&name) {
                    Some(entry) if entry.actor == id => published.remove(&name),
                    _ => None,
                }
            };
            if let Some(entry) = entry {
                entry.end().await;
            }
        });
    }
}

impl ReplySink for Outbound {
    fn send_or_dead_letter(&self, subject: String, frame: Vec<u8>) {
        Outbound::send_or_dead_letter(self, subject.into(), frame);
    }

    fn send_answer(&self, subject: String, id: u64, frame: Vec<u8>) {
        let subject = Subject::from(subject);
        let len = frame.len();
        match self.send(subject.clone(), None, false, frame) {
            Ok(()) => {}
            Err(DeadLetterReason::Oversized | DeadLetterReason::OverMaxPayload) => {
                let (_, why) = self.shared.too_large("the answer", len);
                self.shared
                    .refuse_too_large("the answer", &subject, len, &[]);
                // The asker learns at once, in a frame that fits.
                let refused = wire::encode_refused(id, &why);
                if let Err(reason) = self.send(subject.clone(), None, false, refused) {
                    self.dead_letter(reason, &subject);
                }
            }
            Err(reason) => self.dead_letter(reason, &subject),
        }
    }

    fn dead_letter(&self, reason: DeadLetterReason, subject: &str) {
        Outbound::dead_letter(self, reason, subject);
    }

    fn encoding(&self, encode: &mut dyn FnMut()) {
        self.scope(encode);
    }
}

/// One published actor's tasks (serving frames, answering lookups) and
/// the signals that make them unsubscribe and end.
struct PublishedEntry {
    actor: ActorId,
    stop: [oneshot::Sender<()>; 2],
    tasks: [JoinHandle<()>; 2],
}

impl PublishedEntry {
    /// Unsubscribes both subscriptions and waits for the tasks to end:
    /// the frames first, then the lookups. The client sends a
    /// connection's commands in order and the server handles them in
    /// order, so once a lookup of the name finds nobody, the server has
    /// the frames' unsubscribe too: a message sent after that finds no
    /// responders (and an ask in it fails at once), never a subscription
    /// on its way out.
    async fn end(self) {
        let [stop_frames, stop_lookups] = self.stop;
        let [frames, lookups] = self.tasks;
        let _ = stop_frames.send(());
        let _ = frames.await;
        let _ = stop_lookups.send(());
        let _ = lookups.await;
    }

    /// Unsubscribes both subscriptions and ends the tasks without waiting
    /// for the server (a shutdown past its deadline).
    fn abort(self) {
        for stop in self.stop {
            let _ = stop.send(());
        }
        for task in self.tasks {
            task.abort();
        }
    }
}

/// An actor system joined to a NATS cluster. See the crate docs.
pub struct Node {
    outbound: Outbound,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The writer task and its stop signal.
    writer: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
    /// The control subject's task and its stop signal: it unsubscribes
    /// before the node says it leaves.
    control: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

impl Node {
    /// Connects `system` to NATS as node `config.node_name`. Call from a
    /// tokio runtime (multi-threaded): the node's tasks run on it.
    pub async fn start(system: &ActorSystem, config: RemoteConfig) -> Result<Node, RemoteError> {
        for token in [&config.node_name, &config.cluster_name] {
            if !valid_token(token) {
                return Err(RemoteError::InvalidName(token.clone()));
            }
        }
        let incarnation = fresh_incarnation()?;
        let dead_letters = Arc::new(DeadLetters::default());
        let limit = Arc::new(FrameLimit::new(config.max_frame_size));
        let client = connect_options(&config, dead_letters.clone(), limit.clone())
            .await?
            .connect(config.urls.clone())
            .await
            .map_err(|e| RemoteError::Connect(e.to_string()))?;
        limit.attach(&client, &config.node_name);
        let reply_prefix: Arc<str> = format!("troupe.{}.reply.", config.cluster_name).into();
        let reply_subject: Arc<str> = format!("{reply_prefix}{}", config.node_name).into();
        let no_responders_prefix: Arc<str> = format!(
            "troupe.{}.noreply.{}.",
            config.cluster_name, config.node_name
        )
        .into();
        let tells_reply = Subject::from(format!("{no_responders_prefix}{}", refusal::TELLS_ONLY));
        let no_responders = client
            .subscribe(format!("{no_responders_prefix}>"))
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        let replies = client
            .subscribe(reply_subject.to_string())
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        let members = client
            .subscribe(format!("troupe.{}.members.>", config.cluster_name))
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        let exports = client
            .subscribe(format!(
                "troupe.{}.ref.{}.*",
                config.cluster_name, config.node_name
            ))
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        let control = client
            .subscribe(control::control_subscription(
                &config.cluster_name,
                &config.node_name,
            ))
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        let shared = Arc::new(Shared {
            membership: Membership::new(
                &config.node_name,
                incarnation,
                config.heartbeat_interval,
                config.heartbeat_timeout,
            )
            .bounded(config.max_members),
            liveness: Registry::new(config.max_members.saturating_mul(DOWN_PER_MEMBER)),
            claims: Claims::default(),
            stall: Mutex::default(),
            batches: BatchCounters::default(),
            system: system.clone(),
            client,
            dead_letters,
            pending: Arc::default(),
            reply_subject,
            reply_prefix,
            no_responders_prefix,
            tells_reply,
            limit,
            refusals: Refusals::default(),
            config,
            incarnation: AtomicU64::new(incarnation),
            runtime: tokio::runtime::Handle::current(),
            locals: Locals::default(),
            watching: Watching::default(),
            published: Mutex::new(HashMap::new()),
            stopped: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel(shared.config.outbound_buffer.max(1));
        let (stop_writer, writer_stopped) = oneshot::channel();
        let writer = tokio::spawn(write(shared.clone(), rx, writer_stopped));
        let sweeper = tokio::spawn(sweep(shared.clone()));
        let listen_members = tokio::spawn(heard::listen_members(shared.clone(), members));
        let beat = tokio::spawn(beat(shared.clone()));
        let outbound = Outbound { tx, shared };
        let unserved = tokio::spawn(refusal::listen(outbound.clone(), no_responders));
        let listener = tokio::spawn(listen_replies(outbound.clone(), replies));
        let exports = tokio::spawn(serve_exports(outbound.clone(), exports));
        let (stop_control, control_stopped) = oneshot::channel();
        let control = tokio::spawn(watch::serve_control(
            outbound.clone(),
            control,
            control_stopped,
        ));
        Ok(Node {
            outbound,
            tasks: Mutex::new(vec![
                listener,
                unserved,
                sweeper,
                listen_members,
                beat,
                exports,
            ]),
            control: Mutex::new(Some((stop_control, control))),
            writer: Mutex::new(Some((stop_writer, writer))),
        })
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.shared().config.node_name
    }

    /// This node's incarnation: a random number drawn by [`Node::start`],
    /// never 0. Refs to this node's actors carry it, so that once this
    /// process is gone they never reach another process started under the
    /// same name.
    ///
    /// It is drawn afresh, without a restart, when the process resumes
    /// from a stall (SIGSTOP, a long pause) so long that the other nodes
    /// may have declared it down: `heartbeat_timeout` less two and a half
    /// heartbeat intervals or more. The other nodes then see what a restart
    /// looks like: the old incarnation down (if they had not declared it
    /// down yet) and the new one up. The refs they held to this node's
    /// actors are dead, and a new lookup reaches the same actors under the
    /// new incarnation. This node's actors keep running; watches made from
    /// here are registered again under the new incarnation. Whatever
    /// registered something under the old value (a region key, a lease, a
    /// receptionist entry) compares it with this one to know it must
    /// register again. See the remote section of `docs/semantics.md`.
    pub fn incarnation(&self) -> u64 {
        self.shared().incarnation()
    }

    /// The node's NATS connection, for what an application keeps next to
    /// its actors on the same cluster (a JetStream key-value bucket of
    /// leases, say) without a second connection. Publishing on troupe's own
    /// subjects (`troupe.<cluster>.>`) through it bypasses the node's
    /// checks and counters: use refs for that.
    pub fn nats_client(&self) -> async_nats::Client {
        self.shared().client.clone()
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.outbound.shared
    }

    /// Makes `actor` reachable from every node of the cluster as `name`.
    ///
    /// Refused if the name is invalid or already answers a lookup somewhere
    /// in the cluster (checked just before subscribing: two nodes that
    /// publish one name at the same instant can both succeed; then both
    /// receive its messages).
    pub async fn publish<M: RemoteMessage>(
        &self,
        name: &str,
        actor: &ActorRef<M>,
    ) -> Result<(), RemoteError> {
        self.check_publish(name)?;
        match self.probe(name, M::TAG).await {
            Err(RemoteError::NotFound(_)) => {}
            Ok(_) | Err(RemoteError::TagMismatch { .. }) => {
                return Err(RemoteError::NameTaken(name.to_string()))
            }
            Err(other) => return Err(other),
        }
        self.serve_name(name, actor).await
    }

    /// Makes `actor` reachable as `name` whether or not another node
    /// answers to it: for a caller whose own authority says this node is
    /// the one that serves the name now (it holds a lease, say, taken by
    /// compare-and-set). [`publish`](Node::publish) refuses a name some
    /// subscription still answers to, and a node that is cut off or paused
    /// keeps its subscription at the server, silent, until the server
    /// drops its connection (minutes): a successor that waits for the name
    /// to be free waits as long. Here the name is served at once. Until
    /// the other node unpublishes or goes, frames for the name reach both
    /// (each acts on its own authority: a former lease holder must refuse
    /// them, or end itself), and a lookup takes the first answer.
    ///
    /// Returns once the server has this node's subscription (a lookup
    /// from any node can find it). Refused only for an invalid name or a
    /// node that has shut down.
    pub async fn publish_taking_over<M: RemoteMessage>(
        &self,
        name: &str,
        actor: &ActorRef<M>,
    ) -> Result<(), RemoteError> {
        self.check_publish(name)?;
        self.serve_name(name, actor).await
    }

    /// Whether `name` can be published here at all.
    fn check_publish(&self, name: &str) -> Result<(), RemoteError> {
        if !valid_token(name) {
            return Err(RemoteError::InvalidName(name.to_string()));
        }
        if self.outbound.is_stopped() {
            return Err(RemoteError::Stopped);
        }
        Ok(())
    }

    /// Subscribes `name`'s frames and lookups for `actor`, and waits until
    /// the server has the subscriptions.
    async fn serve_name<M: RemoteMessage>(
        &self,
        name: &str,
        actor: &ActorRef<M>,
    ) -> Result<(), RemoteError> {
        let shared = self.shared();
        let cluster = &shared.config.cluster_name;
        let frames = shared
            .client
            .subscribe(format!("troupe.{cluster}.actor.{name}"))
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        let lookups = shared
            .client
            .subscribe(format!("troupe.{cluster}.lookup.{name}"))
            .await
            .map_err(|e| RemoteError::Nats(e.to_string()))?;
        shared.locals.publish(&self.outbound, name, actor);
        let local = shared
            .locals
            .get(&(Kind::Published, name.into()))
            .ok_or(RemoteError::Stopped)?;
        let (stop_serve, serve_stopped) = oneshot::channel();
        let (stop_answer, answer_stopped) = oneshot::channel();
        let serve = tokio::spawn(serve(
            self.outbound.clone(),
            name.to_string(),
            local,
            frames,
            serve_stopped,
        ));
        let answer = tokio::spawn(answer_lookups(
            shared.clone(),
            M::TAG,
            lookups,
            answer_stopped,
        ));
        let previous = shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                name.to_string(),
                PublishedEntry {
                    actor: actor.id(),
                    stop: [stop_serve, stop_answer],
                    tasks: [serve, answer],
                },
            );
        if let Some(previous) = previous {
            previous.end().await;
        }
        // A round trip through the server on our own connection: the server
        // handles a connection's commands in order, so once our own lookup
        // is answered (by our own task) both subscriptions are registered,
        // and a lookup from any node finds the name. Any answer will do (a
        // node that published the name at the same instant may answer
        // first); only no answer at all is an error.
        match self.probe(name, M::TAG).await {
            Ok(_) | Err(RemoteError::TagMismatch { .. }) => Ok(()),
            Err(other) => Err(other),
        }
    }

    /// Stops serving `name`: its subscriptions end, and when this returns
    /// the server knows it (a lookup from any node no longer finds it here).
    /// False if it was not published here. Refs to it elsewhere then send
    /// into the void: NATS drops a message nobody subscribes to
    /// (at-most-once); actors elsewhere watching it get `Terminated`, once
    /// the frames this node had already received for it were handed over:
    /// what that caused this node to send (a region forwarding them, say)
    /// goes out before the news that the name is gone.
    pub async fn unpublish(&self, name: &str) -> bool {
        let entry = self
            .shared()
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        let Some(entry) = entry else {
            self.shared().locals.unpublish(&self.outbound, name);
            return false;
        };
        entry.end().await;
        self.shared().locals.unpublish(&self.outbound, name);
        // A round trip on our own connection, behind the unsubscribes (see
        // `publish`); whatever it answers, the server has handled them.
        let _ = self.probe(name, "").await;
        true
    }

    /// Finds the actor published as `name` anywhere in the cluster (this
    /// node included) and returns an ordinary ref to it. Fails with
    /// `NotFound` if no node answers, `TagMismatch` if the actor's message
    /// type has another tag than `M`'s, `Timeout` after `lookup_timeout`.
    ///
    /// The ref is pinned to the node and incarnation that answered: if
    /// that process stops or is restarted, or the actor is unpublished,
    /// the ref is dead for good (`is_terminated()`, watchers get
    /// `Terminated`, sends are counted dead letters, asks fail with
    /// `Unreachable`) and a new `lookup` finds the actor's successor. For
    /// a ref that follows a name from node to node, see
    /// [`select`](Node::select).
    ///
    /// The answer counts as a heartbeat of the node that gave it: a node
    /// found before its first heartbeat reached this one is a member from
    /// then on (an `Up` event), and is declared down when it goes silent.
    pub async fn lookup<M: RemoteMessage>(&self, name: &str) -> Result<ActorRef<M>, RemoteError> {
        if !valid_token(name) {
            return Err(RemoteError::InvalidName(name.to_string()));
        }
        let (host, incarnation) = self.probe(name, M::TAG).await?;
        // The answer is a sign of life, as good as a heartbeat: a node
        // found before its first heartbeat reached this one is a member
        // from now on, so its silence declares it down (and kills this
        // ref) like any member's. Without this, a node that stopped
        // between answering and its first heartbeat here would never be
        // declared down, and whoever waits for that (a standby following
        // it) would wait for ever.
        let shared = self.shared();
        shared
            .membership
            .heard(&host, incarnation, |node, incarnation| {
                watch::node_down(shared, node, incarnation)
            });
        let address = Address {
            host: host.into(),
            incarnation,
            kind: Kind::Published,
            id: name.into(),
        };
        Ok(refs::remote_ref(&self.outbound, address))
    }

    /// A ref to whichever node serves `name` when each message arrives,
    /// like a NATS subject (Akka's actor selection): no lookup is made,
    /// the ref follows the name when it moves to another node or process
    /// (a standby taking over), and it never counts as terminated. The
    /// price: a message sent while nobody serves the name is lost
    /// uncounted (an ask through it fails with `Unreachable`), a message
    /// for another message type is an `UnknownTag` dead letter on the
    /// serving node, and `ctx.watch` on it never fires: watch a
    /// [`lookup`](Node::lookup) ref instead. Fails only for an invalid
    /// name.
    ///
    /// ```no_run
    /// # async fn run(node: troupe_remote::Node) -> Result<(), troupe_remote::RemoteError> {
    /// use troupe_remote::testing::echo::EchoMsg;
    ///
    /// let engine = node.select::<EchoMsg>("engine-0")?;
    /// engine.tell(EchoMsg::Say("to whoever serves engine-0 now".into()));
    /// # Ok(()) }
    /// ```
    pub fn select<M: RemoteMessage>(&self, name: &str) -> Result<ActorRef<M>, RemoteError> {
        if !valid_token(name) {
            return Err(RemoteError::InvalidName(name.to_string()));
        }
        let address = Address {
            host: self.name().into(),
            incarnation: 0,
            kind: Kind::Published,
            id: name.into(),
        };
        Ok(refs::remote_ref(&self.outbound, address))
    }

    /// Asks the cluster who serves `name`, with our tag; the answer is the
    /// node that serves it and its incarnation.
    async fn probe(&self, name: &str, tag: &str) -> Result<(String, u64), RemoteError> {
        let shared = self.shared();
        let subject = format!("troupe.{}.lookup.{name}", shared.config.cluster_name);
        let request = shared
            .client
            .request(subject, Bytes::copy_from_slice(tag.as_bytes()));
        let answer = match tokio::time::timeout(shared.config.lookup_timeout, request).await {
            Err(_) => return Err(RemoteError::Timeout(name.to_string())),
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
                return Err(RemoteError::NotFound(name.to_string()))
            }
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::TimedOut => {
                return Err(RemoteError::Timeout(name.to_string()))
            }
            Ok(Err(e)) => return Err(RemoteError::Nats(e.to_string())),
            Ok(Ok(answer)) => answer,
        };
        let malformed = || RemoteError::Nats(format!("malformed lookup answer for {name}"));
        match answer.payload.split_first() {
            Some((0, found)) => {
                let (incarnation, host) = found.split_first_chunk::<8>().ok_or_else(malformed)?;
                match std::str::from_utf8(host) {
                    Ok(host) if valid_token(host) => {
                        Ok((host.to_string(), u64::from_le_bytes(*incarnation)))
                    }
                    _ => Err(malformed()),
                }
            }
            Some((1, theirs)) => Err(RemoteError::TagMismatch {
                name: name.to_string(),
                ours: tag.to_string(),
                theirs: String::from_utf8_lossy(theirs).into_owned(),
            }),
            _ => Err(malformed()),
        }
    }

    /// `value` as bytes that any node of this cluster reads back with
    /// [`from_bytes`](Node::from_bytes): the encoding of messages (postcard),
    /// with every `ActorRef` field written as its address (a local actor is
    /// exported, as when it is sent in a message). For keeping refs outside
    /// a message: in a key-value store, a database row, a file read by the
    /// next run. A `ReplyTo` field cannot be written this way (it belongs
    /// to one ask) and fails with [`RemoteError::Encoding`].
    ///
    /// ```no_run
    /// # async fn run(node: troupe_remote::Node, echo: troupe::ActorRef<troupe_remote::testing::echo::EchoMsg>)
    /// # -> Result<(), troupe_remote::RemoteError> {
    /// use troupe::ActorRef;
    /// use troupe_remote::testing::echo::EchoMsg;
    ///
    /// let bytes = node.to_bytes(&echo)?;
    /// // Later, on this node or any other of the cluster:
    /// let again: ActorRef<EchoMsg> = node.from_bytes(&bytes)?;
    /// again.tell(EchoMsg::Say("found again".into()));
    /// # Ok(()) }
    /// ```
    pub fn to_bytes<T: serde::Serialize + ?Sized>(
        &self,
        value: &T,
    ) -> Result<Vec<u8>, RemoteError> {
        self.outbound
            .scope(|| postcard::to_allocvec(value))
            .map_err(|e| RemoteError::Encoding(e.to_string()))
    }

    /// Reads what [`to_bytes`](Node::to_bytes) wrote, on any node of the
    /// cluster: a ref to an actor of this node incarnation reads back as
    /// the local ref, any other as a remote ref pinned to the node
    /// incarnation that wrote it (dead for good if that one is gone). Bytes
    /// that are not exactly one `T`, or a ref of another message type, fail
    /// with [`RemoteError::Encoding`].
    pub fn from_bytes<T: serde::de::DeserializeOwned>(
        &self,
        bytes: &[u8],
    ) -> Result<T, RemoteError> {
        self.outbound
            .scope(|| match postcard::take_from_bytes::<T>(bytes) {
                Ok((value, [])) => Ok(value),
                Ok((_, rest)) => Err(RemoteError::Encoding(format!(
                    "{} bytes left over after the value",
                    rest.len()
                ))),
                Err(e) => Err(RemoteError::Encoding(e.to_string())),
            })
    }

    /// How many refused frames and unsent messages had `reason`.
    pub fn dead_letter_count(&self, reason: DeadLetterReason) -> u64 {
        self.shared().dead_letters.count(reason)
    }

    /// All dead letters of this node, every reason.
    pub fn dead_letters_total(&self) -> u64 {
        self.shared().dead_letters.total()
    }

    /// Calls `listener` for every dead letter of this node, on the thread
    /// that found it (a subscription task or a sender).
    pub fn on_dead_letter(&self, listener: impl Fn(&DeadLetter) + Send + Sync + 'static) {
        self.shared().dead_letters.subscribe(Arc::new(listener));
    }

    /// The largest frame this node sends now, in bytes (header included):
    /// `RemoteConfig::max_frame_size`, or the NATS server's `max_payload`
    /// if that is less. The server's is learned from it at connect and
    /// again after every reconnect. A message or answer that encodes
    /// larger is not sent: it is an `Oversized` or `OverMaxPayload` dead
    /// letter, and an ask it carries fails at once with
    /// `AskError::Refused`, naming the limit.
    pub fn frame_limit(&self) -> usize {
        self.shared().limit.get()
    }

    /// The configuration this node was started with (its heartbeat
    /// timeout, say, for a block that waits as long as membership does).
    pub fn config(&self) -> &RemoteConfig {
        &self.shared().config
    }

    /// The longest stall of this process so far, if any: a pause (SIGSTOP, a
    /// debugger, swapping, a starved VM) during which it sent no
    /// heartbeat. One that lasted longer than `heartbeat_timeout` means
    /// the other nodes have declared this node down, for good in that
    /// incarnation: they drop what it sends them through their old refs
    /// and never take that incarnation back as a member. A block that owns
    /// something on this node's behalf (a lease, shards) must step down
    /// then. The node comes back by itself under a new
    /// [`incarnation`](Node::incarnation), drawn as it resumes from any
    /// stall the others may have taken for its death. (Its own view of the
    /// others is not harmed: their heartbeats that wait unread during the
    /// stall do not count as their silence.)
    pub fn longest_stall(&self) -> Option<Stall> {
        self.shared()
            .stall
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .longest
    }

    /// The last stall of this process, if any (see
    /// [`longest_stall`](Node::longest_stall)): a block that acts on each
    /// stall compares its `ended` with the one it handled last, and so
    /// sees a later stall even when it is shorter than the longest.
    pub fn last_stall(&self) -> Option<Stall> {
        self.shared()
            .stall
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last
    }

    /// The longest stall of this process since it became its current
    /// [`incarnation`](Node::incarnation), if any. A stall that made it a
    /// new incarnation belongs to the old one: the others take the new
    /// one as a member that never stalled. A block that must not own
    /// something while the others may count this node down (a singleton's
    /// lease) asks this rather than
    /// [`longest_stall`](Node::longest_stall), which keeps counting a
    /// stall the node has since come back from.
    pub fn longest_stall_this_incarnation(&self) -> Option<Stall> {
        self.shared()
            .stall
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .this_incarnation
    }

    /// This node and every node it hears heartbeats of, sorted by name.
    pub fn members(&self) -> Vec<String> {
        self.shared().membership.members()
    }

    /// Up and down events of the other nodes, from now on. To wait for a
    /// node, subscribe first, then look at [`members`](Node::members), then
    /// wait for events. A receiver that falls more than 1,024 events behind
    /// gets `Lagged` and misses them.
    pub fn member_events(&self) -> tokio::sync::broadcast::Receiver<MemberEvent> {
        self.shared().membership.subscribe()
    }

    /// Local actors other nodes can reach: published names plus actors
    /// exported by being sent inside a message, until they stop.
    pub fn reachable_actors(&self) -> usize {
        self.shared().locals.len()
    }

    /// Actors elsewhere that actors here watch.
    pub fn watched_remote_actors(&self) -> usize {
        self.shared().watching.len()
    }

    /// The sizes of what this node keeps about other nodes: members, down
    /// incarnations, other nodes' watches of its actors, claims being
    /// confirmed. Each is bounded whatever other clients of the NATS
    /// account send (see docs/operations.md, "Who may talk to a node").
    pub fn footprint(&self) -> Footprint {
        let shared = self.shared();
        let (members, down_incarnations) = shared.membership.sizes();
        Footprint {
            members,
            down_incarnations,
            dead_incarnations: shared.liveness.dead_incarnations(),
            remote_watches: shared.locals.remote_watches(),
            confirming: shared.claims.len(),
            forgotten: shared.membership.forgotten() + shared.liveness.forgotten(),
        }
    }

    /// Asks sent from here whose reply handle is still registered.
    pub fn pending_replies(&self) -> usize {
        self.shared().pending.len()
    }

    /// How this node's frames went out so far: how many NATS messages
    /// carried how many frames (see
    /// [`RemoteConfig::batch_linger`](crate::RemoteConfig::batch_linger)).
    /// Take one before and one after a run and subtract with
    /// [`BatchStats::since`].
    pub fn batch_stats(&self) -> BatchStats {
        self.shared().batches.snapshot()
    }

    /// Leaves the cluster: stops serving every published name, lets queued
    /// frames reach the server, says it leaves, then closes the connection,
    /// all within `shutdown_timeout` (one deadline for the whole call, so
    /// a node whose server is gone is done in that time, not once per step
    /// and per published name). Asks still waiting for another node get
    /// `NoReply`; later sends through this node's refs are `NodeStopped`
    /// dead letters. A second call does nothing.
    pub async fn shutdown(&self) {
        if self.shared().stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.shared().clone();
        let deadline = tokio::time::Instant::now() + shared.config.shutdown_timeout;
        // We will not hear of any watched actor again.
        watch::fire_all(&shared);
        let names: Vec<String> = self
            .shared()
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        let unpublish_all = async {
            for name in names {
                self.unpublish(&name).await;
            }
        };
        if tokio::time::timeout_at(deadline, unpublish_all)
            .await
            .is_err()
        {
            // The server did not confirm in time (gone, or slow): the names
            // not reached yet stop serving without waiting for it.
            let left: Vec<PublishedEntry> = shared
                .published
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain()
                .map(|(_, entry)| entry)
                .collect();
            for entry in left {
                entry.abort();
            }
        }
        // Everything queued before the marker reaches the client and is
        // flushed, unless the deadline passes first (NATS unreachable).
        let flush = async {
            let (done, flushed) = oneshot::channel();
            if self.outbound.tx.send(Outgoing::Flush(done)).await.is_ok() {
                let _ = flushed.await;
            }
        };
        let _ = tokio::time::timeout_at(deadline, flush).await;
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, writer)) = writer {
            // The writer dead-letters what is left and closes the channel:
            // after this every send is refused as NodeStopped.
            let _ = stop.send(());
            let _ = writer.await;
        }
        let tasks: Vec<JoinHandle<()>> = self
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for task in tasks {
            task.abort();
            // Ended before the leave below: no heartbeat follows it.
            let _ = task.await;
        }
        // The control subscription ends before the leave: the other nodes
        // confirm a leave by finding nobody there (`node/confirm.rs`).
        let control = self
            .control
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((stop, control)) = control {
            let _ = stop.send(());
            let _ = tokio::time::timeout_at(deadline, control).await;
        }
        let leave = format!(
            "troupe.{}.members.leave.{}",
            shared.config.cluster_name, shared.config.node_name
        );
        let _ = tokio::time::timeout_at(deadline, async {
            let incarnation = Bytes::copy_from_slice(&shared.incarnation().to_le_bytes());
            let _ = shared.client.publish(leave, incarnation).await;
            let _ = shared.client.flush().await;
        })
        .await;
        shared.pending.clear();
        let _ = tokio::time::timeout_at(deadline, shared.client.drain()).await;
    }
}

/// A fresh incarnation: 64 random bits from the operating system, not 0
/// (0 in a frame means "any incarnation").
pub(crate) fn fresh_incarnation() -> Result<u64, RemoteError> {
    loop {
        let mut bytes = [0u8; 8];
        getrandom::getrandom(&mut bytes)
            .map_err(|e| RemoteError::Connect(format!("no randomness for an incarnation: {e}")))?;
        let incarnation = u64::from_le_bytes(bytes);
        if incarnation != 0 {
            return Ok(incarnation);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // A node dropped without `shutdown` still stops its tasks.
        for entry in self
            .shared()
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            entry.tasks.iter().for_each(JoinHandle::abort);
        }
        for task in self.tasks.get_mut().unwrap_or_else(|e| e.into_inner()) {
            task.abort();
        }
        if let Some((_, writer)) = self.writer.get_mut().unwrap_or_else(|e| e.into_inner()) {
            writer.abort();
        }
        if let Some((_, control)) = self.control.get_mut().unwrap_or_else(|e| e.into_inner()) {
            control.abort();
        }
    }
}

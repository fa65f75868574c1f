//! `ReplyTo` fields across nodes: a field of type `troupe::ReplyTo<R>` in a
//! [`RemoteMessage`](crate::RemoteMessage) travels as it is (troupe's
//! feature `serde`, which this crate turns on).
//!
//! On the wire a reply handle is `(reply subject, reply id)`:
//!
//! * **Sending** (on the asker's thread, inside a remote `tell`/`ask`): the
//!   handle is [`share`](troupe::ReplyTo::share)d into this node's table of
//!   pending replies under a fresh id, and the node's reply subject and that
//!   id are written. The original handle is dropped with the message; the
//!   shared one answers the ask when the reply frame arrives, or fails it:
//!   with `NoReply` when a no-reply frame arrives or when it has waited
//!   `reply_ttl`; with `Unreachable` when nobody serves the target (the
//!   server's "no responders"), when the target's node refuses the frame
//!   as addressed to a past incarnation of it, or when the target is known
//!   gone so nothing was sent; with `Refused` and the reason when the
//!   request or its answer cannot be carried (over the server's
//!   `max_payload` or `max_frame_size`), or the target's node refuses the
//!   frame for its tag or a payload it cannot decode. Each entry remembers the ref it was sent
//!   through (its `Liveness`), so such an answer also tells the node
//!   which actor is gone.
//! * **Receiving** (inside the node's subscription task): a fresh local
//!   reply handle is made with [`troupe::ReplyTo::pair`] and put in the
//!   message; its answer (`Ask::on_answer`, on the answering actor's
//!   thread) is queued as a reply frame (or a no-reply frame if the actor
//!   dropped the handle, or a refused frame if the answer cannot be
//!   encoded or is too large to send) for the asker's reply subject, which
//!   must belong to this cluster.
//!
//! `ReplyTo` serializes itself (troupe's feature `serde`) through the codec
//! a transport installs for one encode or decode (`troupe::transport`):
//! this module's codecs take the reply handles of one send (`Exporter`)
//! or one receive (`Importer`), behind the node's codec
//! (`Outbound::scope_with`). Outside them a `ReplyTo` fails to serialize
//! with a serde error (it cannot be written to a file or sent by any
//! other means). The
//! `serialize` and `deserialize` functions here are the same impls, kept
//! so that `#[serde(with = "troupe_remote::reply_to")]` still compiles; a
//! plain `ReplyTo<R>` field needs no attribute.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use troupe::transport::{Codec, ExportedReply, ImportedReply};
use troupe::{ActorId, ActorSystem, AskError, ReplyTo};

use crate::dead_letters::DeadLetterReason;
use crate::liveness::Liveness;
use crate::wire;

/// How a pending ask ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer<'a> {
    /// The answer's encoded bytes.
    Reply(&'a [u8]),
    /// The far actor dropped the request (`AskError::NoReply`).
    NoReply,
    /// The request did not reach the actor (`AskError::Unreachable`).
    Unreachable,
    /// The request or its answer cannot be carried, for this reason
    /// (`AskError::Refused`).
    Refused(&'a str),
}

impl Answer<'_> {
    /// How the asks in a message that was not sent end: `Unreachable`
    /// when the target or the network is known gone, `NoReply` when this
    /// node refused the message itself (too big, not encodable, its own
    /// buffer full).
    pub(crate) fn for_unsent(reason: DeadLetterReason) -> Answer<'static> {
        match reason {
            DeadLetterReason::Unreachable
            | DeadLetterReason::NodeStopped
            | DeadLetterReason::Terminated
            | DeadLetterReason::NodeDown => Answer::Unreachable,
            _ => Answer::NoReply,
        }
    }
}

type Complete = Box<dyn FnOnce(Answer<'_>) -> Result<(), DeadLetterReason> + Send>;

/// One ask waiting here: since when, how to end it, and the ref it was
/// sent through.
struct Entry {
    at: Instant,
    complete: Complete,
    owner: Arc<Liveness>,
}

/// Reply handles of this node's asks that travel elsewhere, by reply id.
#[derive(Default)]
pub(crate) struct Pending {
    next: AtomicU64,
    map: Mutex<HashMap<u64, Entry>>,
}

impl Pending {
    fn register(&self, complete: Complete, owner: Arc<Liveness>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = Entry {
            at: Instant::now(),
            complete,
            owner,
        };
        self.lock().insert(id, entry);
        id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends ask `id` with `answer`; an id not pending is `UnknownReply`.
    /// Returns the ref the ask went through.
    pub(crate) fn complete(
        &self,
        id: u64,
        answer: Answer<'_>,
    ) -> Result<Arc<Liveness>, DeadLetterReason> {
        let entry = self.lock().remove(&id);
        match entry {
            // Run outside the lock: replying wakes the asker.
            Some(entry) => (entry.complete)(answer).map(|()| entry.owner),
            None => Err(DeadLetterReason::UnknownReply),
        }
    }

    /// Ends the given asks with `answer` (a message that was not sent).
    pub(crate) fn fail(&self, ids: &[u64], answer: Answer<'_>) {
        if ids.is_empty() {
            return;
        }
        let removed: Vec<Entry> = {
            let mut map = self.lock();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for entry in removed {
            let _ = (entry.complete)(answer);
        }
    }

    /// Ends with `Unreachable` those of `ids` sent to an actor of node
    /// incarnation `incarnation` (refused by the node that now answers in
    /// its place); returns the refs they went through.
    pub(crate) fn refused(&self, ids: &[u64], incarnation: u64) -> Vec<Arc<Liveness>> {
        let removed: Vec<Entry> = {
            let mut map = self.lock();
            let mut removed = Vec::new();
            for id in ids {
                let sent_there = map
                    .get(id)
                    .is_some_and(|e| e.owner.address.incarnation == incarnation);
                if sent_there {
                    removed.extend(map.remove(id));
                }
            }
            removed
        };
        removed
            .into_iter()
            .map(|entry| {
                let _ = (entry.complete)(Answer::Unreachable);
                entry.owner
            })
            .collect()
    }

    /// Drops entries older than `ttl`; returns how many.
    pub(crate) fn expire(&self, ttl: Duration) -> usize {
        let now = Instant::now();
        let removed: Vec<_> = {
            let mut map = self.lock();
            let old: Vec<u64> = map
                .iter()
                .filter(|(_, e)| now.duration_since(e.at) >= ttl)
                .map(|(id, _)| *id)
                .collect();
            old.iter().filter_map(|id| map.remove(id)).collect()
        };
        removed.len()
    }

    /// Drops every entry (node shutdown).
    pub(crate) fn clear(&self) {
        let all: Vec<_> = self.lock().drain().collect();
        drop(all);
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The codec of one encode (a message sent through `owner`): each reply
/// handle in it is registered in `pending` and written as this node's reply
/// subject and its id.
pub(crate) struct Exporter {
    pending: Arc<Pending>,
    reply_subject: Arc<str>,
    /// The ref the message goes through.
    owner: Arc<Liveness>,
    registered: RefCell<Vec<u64>>,
}

impl Codec for Exporter {
    fn export_reply(
        &self,
        reply: ExportedReply,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        let complete: Complete = Box::new(move |answer: Answer<'_>| {
            match answer {
                Answer::Reply(bytes) => deliver(reply, bytes)?,
                Answer::NoReply => drop(reply),
                Answer::Unreachable => {
                    reply.unreachable();
                }
                Answer::Refused(reason) => {
                    reply.refuse(reason);
                }
            }
            Ok(())
        });
        let id = self.pending.register(complete, self.owner.clone());
        self.registered.borrow_mut().push(id);
        Ok(Box::new(ReplyWire(self.reply_subject.clone(), id)))
    }
}

/// A reply handle on the wire: `(reply subject, reply id)`, written from
/// the node's shared subject without copying it for every ask.
struct ReplyWire(Arc<str>, u64);

impl Serialize for ReplyWire {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (&*self.0, self.1).serialize(serializer)
    }
}

/// Decodes an answer's payload (all of it, as any payload) and gives it to
/// the asker. An answer that does not decode drops the handle: the asker
/// gets NoReply, and the frame is a dead letter.
fn deliver(reply: ExportedReply, payload: &[u8]) -> Result<(), DeadLetterReason> {
    let decoded = wire::decode_payload_with(payload, |input| reply.decode(input))?;
    decoded.reply();
    Ok(())
}

/// Where a decoded reply handle sends its answer: the node's outbound side.
/// A trait, so that this module does not import the node that imports it.
pub(crate) trait ReplySink: Send + Sync + 'static {
    /// Queues `frame` for `subject`, or records why it could not be.
    fn send_or_dead_letter(&self, subject: String, frame: Vec<u8>);
    /// Queues the answer `frame` to ask `id` for `subject`; if it is too
    /// large to send, records why and queues a refused frame instead, so
    /// that the ask fails at once.
    fn send_answer(&self, subject: String, id: u64, frame: Vec<u8>);
    /// Records a dead letter for `subject`.
    fn dead_letter(&self, reason: DeadLetterReason, subject: &str);
    /// Runs `encode` with the node available to `ActorRef` fields (an
    /// answer may carry refs).
    fn encoding(&self, encode: &mut dyn FnMut());
}

pub(crate) struct DecodeCtx {
    pub(crate) system: ActorSystem,
    pub(crate) target: ActorId,
    pub(crate) reply_prefix: Arc<str>,
    pub(crate) ttl: Duration,
    pub(crate) outbound: Arc<dyn ReplySink>,
}

/// The codec of one decode: each reply handle in the message becomes a
/// local handle whose answer is sent back as a reply frame.
pub(crate) struct Importer(pub(crate) DecodeCtx);

impl Codec for Importer {
    fn import_reply(
        &self,
        input: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<ImportedReply, erased_serde::Error> {
        let ctx = &self.0;
        let (subject, id): (String, u64) = erased_serde::deserialize(input)?;
        // Only reply to this cluster's node reply subjects: a frame must not
        // make the node publish wherever it says.
        let node = subject.strip_prefix(&*ctx.reply_prefix);
        if !node.is_some_and(crate::config::valid_token) {
            return Err(serde::de::Error::custom(
                "reply subject outside this cluster",
            ));
        }
        let outbound = ctx.outbound.clone();
        let answer = move |result: Result<&dyn erased_serde::Serialize, AskError>| {
            let frame = match result {
                Ok(value) => match encode_reply(&*outbound, id, value) {
                    Ok(frame) => return outbound.send_answer(subject, id, frame),
                    Err(e) => {
                        outbound.dead_letter(DeadLetterReason::EncodeFailed, &subject);
                        let reason = format!("the answer could not be encoded: {e}");
                        wire::encode_refused(id, &reason)
                    }
                },
                // The asker has given up by now (its timeout is at most the
                // reply TTL it keeps the handle for).
                Err(AskError::Timeout { .. }) => return,
                Err(_) => wire::encode_no_reply(id),
            };
            outbound.send_or_dead_letter(subject, frame);
        };
        Ok(ImportedReply {
            system: ctx.system.clone(),
            target: ctx.target,
            timeout: ctx.ttl,
            answer: Box::new(answer),
        })
    }
}

impl Exporter {
    /// The codec of an encode of a message sent through `owner` (the node
    /// installs it with `Outbound::scope_with`).
    pub(crate) fn new(
        pending: &Arc<Pending>,
        reply_subject: &Arc<str>,
        owner: &Arc<Liveness>,
    ) -> Exporter {
        Exporter {
            pending: pending.clone(),
            reply_subject: reply_subject.clone(),
            owner: owner.clone(),
            registered: RefCell::new(Vec::new()),
        }
    }

    /// The ids of the asks it registered.
    pub(crate) fn registered(&self) -> Vec<u64> {
        self.registered.take()
    }
}

/// Serializes a reply handle: `ReplyTo`'s own `Serialize` (troupe's feature
/// `serde`), kept for `#[serde(with = "troupe_remote::reply_to")]`.
pub fn serialize<R, S>(reply: &ReplyTo<R>, serializer: S) -> Result<S::Ok, S::Error>
where
    R: DeserializeOwned + Send + 'static,
    S: Serializer,
{
    reply.serialize(serializer)
}

/// Deserializes a reply handle: `ReplyTo`'s own `Deserialize`, kept for
/// `#[serde(with = "troupe_remote::reply_to")]`.
pub fn deserialize<'de, R, D>(deserializer: D) -> Result<ReplyTo<R>, D::Error>
where
    R: Serialize + Send + 'static,
    D: Deserializer<'de>,
{
    ReplyTo::deserialize(deserializer)
}

/// Encodes an answer with the node's context (refs inside it are exported).
fn encode_reply(
    sink: &dyn ReplySink,
    id: u64,
    value: &dyn erased_serde::Serialize,
) -> Result<Vec<u8>, postcard::Error> {
    let mut frame = None;
    sink.encoding(&mut || frame = Some(wire::encode_reply(id, value)));
    frame.unwrap_or(Err(postcard::Error::SerializeBufferFull))
}

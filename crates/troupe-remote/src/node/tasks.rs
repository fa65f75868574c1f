//! The node's tasks: the writer (outbound frames, in order), one server and
//! one lookup responder per published name, the server of exported refs,
//! the reply listener, the heartbeat, and the reply-table sweeper. (The
//! control subject's server is in `node/watch.rs`, the membership
//! listener in `node/heard.rs`; the listener of what comes back on a
//! message's reply subject, and the receiving side of refusals, in
//! `node/refusal.rs`.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::locals::LocalActor;
use super::refusal::{self, RefusedFrame, WHOLE_MESSAGE};
use super::{watch, Outbound, Outgoing, Shared, Stall};
use crate::address::Kind;
use crate::batching::Linger;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to::{Answer, ReplySink};
use crate::wire::{self, Frame};

/// The largest batch the writer packs (less if the node's frame limit is
/// less: see `node/limits.rs`).
/// Half of the 64 KiB the nats-server reads a connection in at most: a
/// message near that size spans reads. Measured with 64 KiB batches: 40,000
/// round trips of 16 KiB took 1.7 s of server CPU, against 1.1-1.3 s when
/// each frame went alone (as it does at 32 KiB); and the 1 KiB stream ran
/// at 263,000 messages/s with 64 KiB batches, at 435,000 with 32 KiB.
const MAX_BATCH_BYTES: usize = 32 * 1024;

/// The most asks one batch carries (their ids make its reply subject).
const MAX_BATCH_ASKS: usize = 128;

/// The writer task: frames go to the client in channel order, until
/// `stop`; then every frame still queued (and one the client had not yet
/// taken) is a `NodeStopped` dead letter, so none is lost silently.
///
/// Batching: when the writer takes a frame, the frames queued behind it
/// for the same subject go with it in one batch message, up to
/// [`MAX_BATCH_BYTES`] and [`MAX_BATCH_ASKS`] asks. If the queue runs dry
/// first, the writer may linger for company, yielding to the runtime's
/// other tasks, until `batch_linger` has passed since it found the queue
/// empty; when it may is [`Linger`]'s rule (dense traffic, and no linger
/// that found nobody just before). Each published message is counted in
/// the node's batch statistics.
///
/// A message for an actor is published with a reply subject (see
/// `node/refusal.rs`): `troupe.<cluster>.noreply.<node>.<id>-<frame>…`
/// listing the asks it carries and the frames they are in, so that the
/// server's "no responders" answer names every ask to fail and a
/// receiving node's refusal the asks of the frames it refused; or
/// `….noreply.<node>.t` for tells only.
///
/// Limits: before each message the writer checks whether the client has
/// reconnected since the frame limit was learned, and learns it again if
/// so (`node/limits.rs`); a frame over the limit (queued before a
/// reconnect lowered it) is refused, counted, and its ask failed at once;
/// no batch is packed past the limit.
pub(super) async fn write(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Outgoing>,
    mut stop: oneshot::Receiver<()>,
) {
    let stopped = |subject: &str, frames: usize| {
        for _ in 0..frames {
            shared
                .dead_letters
                .record(DeadLetterReason::NodeStopped, subject);
        }
    };
    let connects = shared.client.statistics();
    // A frame taken from the channel that did not fit the last batch.
    let mut held: Option<Outgoing> = None;
    let mut linger = Linger::new(shared.config.batch_linger);
    loop {
        let out = match held.take() {
            Some(out) => out,
            // `stop` is polled until it fires, then never again (we leave).
            None => tokio::select! {
                biased;
                _ = &mut stop => break,
                out = rx.recv() => match out {
                    Some(out) => out,
                    None => return,
                },
            },
        };
        // Nothing is handed to the client while it is not connected: the
        // channel fills and sends fail fast as `Unreachable`, counted,
        // instead of piling up in the client's own buffer.
        if !until_connected(&shared, &mut stop).await {
            held = Some(out);
            break;
        }
        if connects.connects.load(std::sync::atomic::Ordering::Relaxed) != shared.limit.learned_at()
        {
            shared.limit.refresh(&shared.config.node_name).await;
        }
        let frame_limit = shared.limit.get();
        match out {
            Outgoing::Frame {
                subject,
                ask,
                payload,
                ..
            } if payload.len() > frame_limit => {
                // Queued before a reconnect lowered the limit.
                shared.refuse_too_large("a message", &subject, payload.len(), ask.as_slice());
            }
            Outgoing::Frame {
                subject,
                ask,
                to_actor,
                payload,
            } => {
                let mut asks: Vec<(u64, usize)> = ask.map(|id| (id, 0)).into_iter().collect();
                let wait = linger.wait(Instant::now());
                let limit = MAX_BATCH_BYTES.min(frame_limit);
                let packed = pack(
                    &mut rx, &subject, payload, limit, wait, &mut asks, &mut held,
                )
                .await;
                linger.sent(Instant::now(), packed.found_nobody);
                let (payload, frames) = (packed.payload, packed.frames);
                let reply = if !asks.is_empty() {
                    Some(refusal::asks_subject(&shared.no_responders_prefix, &asks))
                } else if to_actor {
                    Some(shared.tells_reply.clone())
                } else {
                    None
                };
                let publish = async {
                    match reply {
                        Some(reply) => {
                            shared
                                .client
                                .publish_with_reply(subject.clone(), reply, payload)
                                .await
                        }
                        None => shared.client.publish(subject.clone(), payload).await,
                    }
                };
                // A publish waits while the client reconnects.
                tokio::select! {
                    biased;
                    _ = &mut stop => {
                        stopped(&subject, frames);
                        break;
                    }
                    published = publish => {
                        // The client refuses only when closed (the frame
                        // limit keeps every message within the server's
                        // max_payload).
                        match published {
                            Ok(()) => shared.batches.record(frames),
                            Err(_) => stopped(&subject, frames),
                        }
                    }
                }
            }
            Outgoing::Flush(done) => {
                tokio::select! {
                    biased;
                    _ = &mut stop => break,
                    _ = shared.client.flush() => {}
                }
                let _ = done.send(());
            }
        }
    }
    rx.close();
    let rest = held
        .into_iter()
        .chain(std::iter::from_fn(|| rx.try_recv().ok()));
    for out in rest {
        if let Outgoing::Frame { subject, .. } = out {
            stopped(&subject, 1);
        }
    }
}

/// Waits until the client is connected (checking every 5 ms); false if
/// `stop` fired first.
async fn until_connected(shared: &Shared, stop: &mut oneshot::Receiver<()>) -> bool {
    while shared.client.connection_state() != async_nats::connection::State::Connected {
        tokio::select! {
            biased;
            _ = &mut *stop => return false,
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
    }
    true
}

/// A message packed by [`pack`].
struct Packed {
    payload: Bytes,
    frames: usize,
    /// The writer lingered and no frame came while it did.
    found_nobody: bool,
}

/// Packs `first` with the frames queued behind it for `subject` (see
/// [`write()`]), waiting up to `linger` for more once the queue is empty
/// (spinning: it yields to the runtime's other tasks until then), and
/// adds the asks they carry to `asks`, with the frame each is in. The
/// first frame that cannot join (another subject, or it would take the
/// batch past `limit` bytes) is left in `held`.
async fn pack(
    rx: &mut mpsc::Receiver<Outgoing>,
    subject: &str,
    first: Bytes,
    limit: usize,
    linger: Duration,
    asks: &mut Vec<(u64, usize)>,
    held: &mut Option<Outgoing>,
) -> Packed {
    let mut batch: Option<wire::BatchWriter> = None;
    // When the queue was first found empty, and whether a frame came after.
    let mut dry: Option<Instant> = None;
    let mut came = false;
    loop {
        let next = match rx.try_recv() {
            Ok(next) => {
                came |= dry.is_some();
                next
            }
            Err(mpsc::error::TryRecvError::Empty) if !linger.is_zero() => {
                if dry.get_or_insert_with(Instant::now).elapsed() >= linger {
                    break;
                }
                // Lets the tasks on this runtime that may send run first; a
                // sender on another thread (an actor) gets the time.
                tokio::task::yield_now().await;
                continue;
            }
            Err(_) => break,
        };
        let fits = match &next {
            Outgoing::Frame {
                subject: next_subject,
                ask,
                payload,
                ..
            } if next_subject.as_str() == subject
                && (ask.is_none() || asks.len() < MAX_BATCH_ASKS) =>
            {
                let batch = batch.get_or_insert_with(|| {
                    // Room for the frames queued now, if they are like
                    // the first (at most the limit).
                    let like_first = (first.len() + 4).saturating_mul(2 + rx.len());
                    let mut batch = wire::BatchWriter::with_capacity(like_first.min(limit));
                    batch.push(&first);
                    batch
                });
                batch.len_with(payload) <= limit
            }
            _ => false,
        };
        match (fits, next) {
            (true, Outgoing::Frame { payload, ask, .. }) => {
                if let Some(batch) = batch.as_mut() {
                    batch.push(&payload);
                    asks.extend(ask.map(|id| (id, batch.frames() - 1)));
                }
            }
            (_, next) => {
                *held = Some(next);
                break;
            }
        }
    }
    let found_nobody = dry.is_some() && !came;
    match batch {
        Some(batch) if batch.frames() > 1 => Packed {
            frames: batch.frames(),
            payload: batch.finish().into(),
            found_nobody,
        },
        _ => Packed {
            payload: first,
            frames: 1,
            found_nobody,
        },
    }
}

/// Serves one published actor: decode, check, tell; until `stop`.
pub(super) async fn serve(
    outbound: Outbound,
    name: String,
    actor: Arc<dyn LocalActor>,
    mut frames: async_nats::Subscriber,
    mut stop: oneshot::Receiver<()>,
) {
    // One handle for the reply tasks of every frame this actor receives.
    let sink: Arc<dyn ReplySink> = Arc::new(outbound.clone());
    let find = |target: &str| (target == name).then(|| actor.clone());
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => break,
            msg = frames.next() => match msg {
                Some(msg) => deliver_all(&outbound, &msg, find, &sink).await,
                None => return,
            },
        }
    }
    // Drained, not just unsubscribed: what the client already holds for
    // the subscription is still handled (a stopped actor makes it an
    // ordinary dead letter, and an ask in it fails with NoReply), and what
    // the server routes after it has the unsubscribe finds no responders.
    // Not closed by this: async-nats (0.47) forgets the subscription at
    // its next turn after sending the unsubscribe, without waiting for the
    // server's answer to the ping behind it, and drops a message that
    // arrives for a subscription it forgot. So a message the server routed
    // here in between (sent while the unsubscribe was on its way) is lost
    // without a trace on either node; an ask in it waits for its timeout
    // (docs/semantics.md, "Ask across nodes"). Bounded by
    // `shutdown_timeout`, in case the server is gone.
    if frames.drain().await.is_ok() {
        let drained = async {
            while let Some(msg) = frames.next().await {
                deliver_all(&outbound, &msg, find, &sink).await;
            }
        };
        let _ = tokio::time::timeout(outbound.shared.config.shutdown_timeout, drained).await;
    }
}

/// Serves this node's exported actors (`troupe.<cluster>.ref.<node>.*`):
/// the frame's target is the token, which must also end its subject.
pub(super) async fn serve_exports(outbound: Outbound, mut frames: async_nats::Subscriber) {
    let sink: Arc<dyn ReplySink> = Arc::new(outbound.clone());
    let locals = &outbound.shared.locals;
    while let Some(msg) = frames.next().await {
        // The subject's last token is the token every frame must name.
        let token = msg.subject.rsplit('.').next().unwrap_or_default();
        let find = |target: &str| {
            if target != token {
                return None;
            }
            locals.get(&(Kind::Exported, target.into()))
        };
        deliver_all(&outbound, &msg, find, &sink).await;
    }
}

/// Tells every frame of `msg` to the actor `find` gives for its target; a
/// refused frame is a dead letter with its reason. A frame refused for
/// what it carries (a tag the actor does not take, a payload it cannot
/// decode) or a message over this node's `max_frame_size` is also logged
/// and refused back to the sending node, as are frames addressed to
/// another incarnation of this node if `msg` carries asks (see
/// `node/refusal.rs`).
async fn deliver_all(
    outbound: &Outbound,
    msg: &async_nats::Message,
    find: impl Fn(&str) -> Option<Arc<dyn LocalActor>>,
    sink: &Arc<dyn ReplySink>,
) {
    let shared = &outbound.shared;
    let max = shared.config.max_frame_size;
    if msg.payload.len() > max {
        let refused = RefusedFrame {
            index: WHOLE_MESSAGE,
            reason: DeadLetterReason::Oversized,
            detail: format!(
                "the message is {} bytes, over the receiving node's max_frame_size of {max} \
                 bytes (RemoteConfig::max_frame_size should be the same on every node)",
                msg.payload.len()
            ),
        };
        return refusal::refuse_back(outbound, msg, &[], &[refused]).await;
    }
    let mut incarnations: Vec<u64> = Vec::new();
    let mut refused: Vec<RefusedFrame> = Vec::new();
    for (index, frame) in wire::frames(&msg.payload, max).enumerate() {
        let delivered =
            tell_frame(frame, shared.incarnation(), &find).and_then(|(actor, payload)| {
                actor
                    .deliver(outbound, sink, payload)
                    .map_err(|(reason, detail)| {
                        if reason == DeadLetterReason::MailboxFull {
                            return Refused::Back(reason, detail);
                        }
                        let detail = format!(
                            "cannot decode the message as the receiving actor's type (tag {:?}): \
                         {detail}; do both nodes run the same version of that type?",
                            actor.tag()
                        );
                        Refused::Back(reason, detail)
                    })
            });
        match delivered {
            Ok(()) => {}
            Err(Refused::Reason(reason)) => outbound.dead_letter(reason, &msg.subject),
            Err(Refused::Back(reason, detail)) => refused.push(RefusedFrame {
                index: index as u64,
                reason,
                detail,
            }),
            Err(Refused::Incarnation(theirs)) => {
                outbound.dead_letter(DeadLetterReason::WrongIncarnation, &msg.subject);
                if !incarnations.contains(&theirs) {
                    incarnations.push(theirs);
                }
            }
        }
    }
    if !incarnations.is_empty() || !refused.is_empty() {
        refusal::refuse_back(outbound, msg, &incarnations, &refused).await;
    }
}

/// Why a tell frame was not delivered.
enum Refused {
    /// Counted here only (a frame no node of the cluster makes).
    Reason(DeadLetterReason),
    /// Counted, logged and refused back to the sender: what the frame
    /// carries does not suit the actor.
    Back(DeadLetterReason, String),
    /// Addressed to this incarnation of another start of this node.
    Incarnation(u64),
}

impl From<DeadLetterReason> for Refused {
    fn from(reason: DeadLetterReason) -> Refused {
        Refused::Reason(reason)
    }
}

/// Takes a tell frame for node incarnation `mine` and finds its target
/// with `find`; checks the incarnation and the tag.
fn tell_frame<'a>(
    frame: Result<Frame<'a>, DeadLetterReason>,
    mine: u64,
    find: impl FnOnce(&str) -> Option<Arc<dyn LocalActor>>,
) -> Result<(Arc<dyn LocalActor>, &'a [u8]), Refused> {
    let Frame::Tell {
        incarnation,
        name: target,
        tag,
        payload,
    } = frame?
    else {
        return Err(DeadLetterReason::Malformed.into());
    };
    if incarnation != 0 && incarnation != mine {
        return Err(Refused::Incarnation(incarnation));
    }
    let actor = find(target).ok_or(DeadLetterReason::UnknownName)?;
    if tag != actor.tag() {
        let detail = format!(
            "tag mismatch: the receiving actor takes messages tagged {:?}, the frame is \
             tagged {tag:?} (a ref, selection or proxy region of another message type)",
            actor.tag()
        );
        return Err(Refused::Back(DeadLetterReason::UnknownTag, detail));
    }
    Ok((actor, payload))
}

/// Answers lookups of one published name: `[0] ++ this node's
/// incarnation (u64 LE) ++ its name` if
/// the asker's tag is the actor's, `[1] ++ our tag` otherwise.
pub(super) async fn answer_lookups(
    shared: Arc<Shared>,
    tag: &'static str,
    mut lookups: async_nats::Subscriber,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        let request = tokio::select! {
            biased;
            _ = &mut stop => break,
            request = lookups.next() => match request {
                Some(request) => request,
                None => return,
            },
        };
        let Some(reply) = request.reply else {
            // A lookup is a request: without a reply subject it is junk.
            shared
                .dead_letters
                .record(DeadLetterReason::Malformed, &request.subject);
            continue;
        };
        let answer = if request.payload == tag.as_bytes() {
            let mut found = vec![0];
            found.extend_from_slice(&shared.incarnation().to_le_bytes());
            found.extend_from_slice(shared.config.node_name.as_bytes());
            found.into()
        } else {
            let mut theirs = vec![1];
            theirs.extend_from_slice(tag.as_bytes());
            theirs.into()
        };
        let _ = shared.client.publish(reply, answer).await;
    }
    let _ = lookups.unsubscribe().await;
}

/// Routes reply frames to the pending asks.
pub(super) async fn listen_replies(outbound: Outbound, mut replies: async_nats::Subscriber) {
    let shared = &outbound.shared;
    while let Some(msg) = replies.next().await {
        for frame in wire::frames(&msg.payload, shared.config.max_frame_size) {
            let result = match frame {
                // An answer may carry refs: decoded with the node at hand.
                Ok(Frame::Reply { id, payload }) => outbound
                    .scope(|| shared.pending.complete(id, Answer::Reply(payload)))
                    .map(drop),
                Ok(Frame::NoReply { id }) => shared.pending.complete(id, Answer::NoReply).map(drop),
                Ok(Frame::Refused { id, reason }) => shared
                    .pending
                    .complete(id, Answer::Refused(reason))
                    .map(drop),
                Ok(Frame::Tell { .. }) => Err(DeadLetterReason::UnknownName),
                Err(reason) => Err(reason),
            };
            if let Err(reason) = result {
                shared.dead_letters.record(reason, &msg.subject);
            }
        }
    }
}

/// Sends this node's heartbeat every `heartbeat_interval`, and declares
/// silent nodes down, checking four times per interval.
///
/// A tick that comes far later than asked is a stall of this process
/// (paused, swapped out, starved): the others' heartbeats wait unread in
/// the connection meanwhile, so the stall is not their silence. One so
/// long that the others may have declared this node down (see
/// [`may_be_declared_down`]) makes it a new incarnation at once (see
/// [`renew`]).
pub(super) async fn beat(shared: Arc<Shared>) {
    let subject = format!(
        "troupe.{}.members.beat.{}",
        shared.config.cluster_name, shared.config.node_name
    );
    let check = (shared.config.heartbeat_interval / 4).max(Duration::from_millis(10));
    let mut ticks = tokio::time::interval(check);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    let mut last = tokio::time::Instant::now();
    loop {
        ticks.tick().await;
        let now = tokio::time::Instant::now();
        let gap = now - last;
        last = now;
        // A heartbeat at once after a renewal: the others learn of the new
        // incarnation (and that the old one is gone) without waiting.
        let mut renewed = false;
        if gap > check * 2 {
            let stall = gap - check;
            shared.membership.forgive(stall);
            let past_timeout = may_be_declared_down(
                stall,
                shared.config.heartbeat_interval,
                shared.config.heartbeat_timeout,
            );
            // Renewed before the stall is recorded: whoever sees the
            // stall (sharding, singletons) sees the new incarnation too.
            renewed = past_timeout && renew(&shared, stall);
            let seen = Stall {
                ended: std::time::Instant::now(),
                lasted: stall,
            };
            let mut stalls = shared.stall.lock().unwrap_or_else(|e| e.into_inner());
            // The longest is what matters to a block that only asks
            // whether the others may ever have counted this node down.
            if stalls.longest.is_none_or(|s| s.lasted < stall) {
                stalls.longest = Some(seen);
            }
            stalls.last = Some(seen);
            // A stall that made this node a new incarnation belongs to the
            // old one: the new one starts with none.
            if renewed {
                stalls.this_incarnation = None;
            } else if stalls.this_incarnation.is_none_or(|s| s.lasted < stall) {
                stalls.this_incarnation = Some(seen);
            }
            drop(stalls);
            if stall >= shared.config.heartbeat_timeout / 2 && !renewed {
                tracing::warn!(node = %shared.config.node_name, ?stall, "troupe-remote: this process stalled past half the heartbeat timeout, short of what the other nodes may take for its death");
            } else if !renewed {
                tracing::debug!(node = %shared.config.node_name, ?stall, "troupe-remote: this process ran late");
            }
        }
        if renewed || n.is_multiple_of(4) {
            let payload = Bytes::copy_from_slice(&shared.incarnation().to_le_bytes());
            let _ = shared.client.publish(subject.clone(), payload).await;
        }
        n += 1;
        shared
            .membership
            .expire(shared.config.heartbeat_timeout, |node, incarnation| {
                watch::node_down(&shared, node, incarnation)
            });
    }
}

/// Whether the other nodes may have declared this node down during a
/// stall of `stall`: they do after `timeout` without a heartbeat, and saw
/// none for at most the stall plus about two intervals (the one due
/// before it and the first after it), and the stall may be measured up to
/// a quarter of an interval short. (Sharding's rejoin check uses the same
/// margin.)
fn may_be_declared_down(stall: Duration, interval: Duration, timeout: Duration) -> bool {
    stall + interval * 5 / 2 >= timeout
}

/// Makes this node a new incarnation after a stall the others may have
/// taken for its death (they never take the old one back): frames for the
/// old one are refused from now on (`WrongIncarnation`, and the sender
/// learns the old one is gone), heartbeats and lookup answers carry the
/// new one, and the watches made from here are registered again under it
/// (the others forgot them with the old one). This node's actors keep
/// running. False if no randomness was at hand (the node stays the old
/// incarnation, logged).
fn renew(shared: &Arc<Shared>, stall: Duration) -> bool {
    let fresh = match super::fresh_incarnation() {
        Ok(fresh) => fresh,
        Err(e) => {
            tracing::error!(node = %shared.config.node_name, ?stall, error = %e, "troupe-remote: this process stalled past what the other nodes may take for its death, and cannot draw a new incarnation: restart it to make it a member again");
            return false;
        }
    };
    let old = shared
        .incarnation
        .swap(fresh, std::sync::atomic::Ordering::AcqRel);
    shared.membership.renew(fresh);
    watch::rewatch(shared);
    tracing::warn!(
        node = %shared.config.node_name,
        ?stall,
        heartbeat_timeout = ?shared.config.heartbeat_timeout,
        old,
        new = fresh,
        "troupe-remote: this process stalled long enough that the other nodes may have declared \
         it down; it comes back as a new incarnation (refs to its actors held elsewhere are dead, \
         new lookups reach them)"
    );
    true
}

/// Drops reply handles older than `reply_ttl`, a few times per TTL.
pub(super) async fn sweep(shared: Arc<Shared>) {
    let period = (shared.config.reply_ttl / 4).max(Duration::from_millis(100));
    let mut ticks = tokio::time::interval(period);
    loop {
        ticks.tick().await;
        shared.pending.expire(shared.config.reply_ttl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_incarnation_only_after_a_stall_the_others_may_have_counted_a_death() {
        let ms = Duration::from_millis;
        // Beats every 100 ms, declared down after 1 s of silence: the
        // others missed at most the stall plus 2.5 intervals of heartbeats.
        assert!(!may_be_declared_down(ms(749), ms(100), ms(1000)));
        assert!(may_be_declared_down(ms(750), ms(100), ms(1000)));
        assert!(may_be_declared_down(ms(2000), ms(100), ms(1000)));
        // The defaults (500 ms, 3 s): from a 1.75 s stall on.
        assert!(!may_be_declared_down(ms(1700), ms(500), ms(3000)));
        assert!(may_be_declared_down(ms(1750), ms(500), ms(3000)));
    }
}

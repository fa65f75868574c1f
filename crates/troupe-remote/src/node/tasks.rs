//! The node's tasks: the writer (outbound frames, in order), one server and
//! one lookup responder per published name, the server of exported refs,
//! the reply listener, the membership listener, the heartbeat, and the
//! reply-table sweeper. (The control subject's server is in
//! `node/watch.rs`.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Subject;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::locals::LocalActor;
use super::{watch, Outbound, Outgoing, Shared, Stall};
use crate::address::Kind;
use crate::batching::Linger;
use crate::config::valid_token;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to::{Answer, ReplySink};
use crate::wire::{self, Frame};

/// The largest batch the writer packs (less if `max_frame_size` is less).
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
/// the node's batch statistics. A message carrying asks is published with
/// the reply subject `troupe.<cluster>.noreply.<node>.<id>.<id>…`, so that
/// the server's "no responders" answer names every ask to fail.
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
    let limit = MAX_BATCH_BYTES.min(shared.config.max_frame_size);
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
        match out {
            Outgoing::Frame {
                subject,
                ask,
                payload,
            } => {
                let mut asks: Vec<u64> = ask.into_iter().collect();
                let wait = linger.wait(Instant::now());
                let packed = pack(
                    &mut rx, &subject, payload, limit, wait, &mut asks, &mut held,
                )
                .await;
                linger.sent(Instant::now(), packed.found_nobody);
                let (payload, frames) = (packed.payload, packed.frames);
                let reply = (!asks.is_empty()).then(|| {
                    let ids: Vec<String> = asks.iter().map(u64::to_string).collect();
                    Subject::from(format!("{}{}", shared.no_responders_prefix, ids.join(".")))
                });
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
                        // The client refuses only when closed or when the
                        // frame exceeds the server's max_payload.
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
/// adds the asks they carry to `asks`. The first frame that cannot join
/// is left in `held`.
async fn pack(
    rx: &mut mpsc::Receiver<Outgoing>,
    subject: &str,
    first: Bytes,
    limit: usize,
    linger: Duration,
    asks: &mut Vec<u64>,
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
                }
                asks.extend(ask);
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
    // Drained, not just unsubscribed: the subscription ends only once the
    // server has confirmed the unsubscribe, so what it routed here before
    // is still handled (a stopped actor makes it an ordinary dead letter,
    // and an ask in it fails with NoReply) and what it routes after finds
    // no responders. Bounded by `shutdown_timeout`, in case the server is
    // gone.
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
/// refused frame is a dead letter with its reason. Frames addressed to
/// another incarnation of this node are `WrongIncarnation` dead letters,
/// and if `msg` carries asks the sender is told at once (see
/// [`refusal`]).
async fn deliver_all(
    outbound: &Outbound,
    msg: &async_nats::Message,
    find: impl Fn(&str) -> Option<Arc<dyn LocalActor>>,
    sink: &Arc<dyn ReplySink>,
) {
    let shared = &outbound.shared;
    let mut refused: Vec<u64> = Vec::new();
    for frame in wire::frames(&msg.payload, shared.config.max_frame_size) {
        let delivered = tell_frame(frame, shared.incarnation, &find)
            .and_then(|(actor, payload)| Ok(actor.deliver(outbound, sink, payload)?));
        match delivered {
            Ok(()) => {}
            Err(Refused::Reason(reason)) => outbound.dead_letter(reason, &msg.subject),
            Err(Refused::Incarnation(theirs)) => {
                outbound.dead_letter(DeadLetterReason::WrongIncarnation, &msg.subject);
                if !refused.contains(&theirs) {
                    refused.push(theirs);
                }
            }
        }
    }
    if let Some(reply) = &msg.reply {
        for incarnation in refused {
            let answer = refusal(incarnation, &shared.config.node_name);
            let _ = shared.client.publish(reply.clone(), answer).await;
        }
    }
}

/// Why a tell frame was not delivered.
enum Refused {
    Reason(DeadLetterReason),
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
        return Err(DeadLetterReason::UnknownTag.into());
    }
    Ok((actor, payload))
}

/// The first byte of a refusal on a no-responders subject (a server's
/// status message there has an empty payload).
const REFUSAL: u8 = b'R';

/// What a node answers on the asks' subject of a message whose frames
/// named its past incarnation `theirs`: `R`, that incarnation (u64 LE),
/// and this node's name.
fn refusal(theirs: u64, node: &str) -> Bytes {
    let mut out = Vec::with_capacity(9 + node.len());
    out.push(REFUSAL);
    out.extend_from_slice(&theirs.to_le_bytes());
    out.extend_from_slice(node.as_bytes());
    out.into()
}

/// Reads a [`refusal`]: the refused incarnation and the refusing node.
fn read_refusal(payload: &[u8]) -> Option<(u64, &str)> {
    let (&REFUSAL, rest) = payload.split_first()? else {
        return None;
    };
    let (incarnation, node) = rest.split_first_chunk::<8>()?;
    let node = std::str::from_utf8(node).ok().filter(|n| valid_token(n))?;
    Some((u64::from_le_bytes(*incarnation), node))
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
        let Some(reply) = request.reply else { continue };
        let answer = if request.payload == tag.as_bytes() {
            let mut found = vec![0];
            found.extend_from_slice(&shared.incarnation.to_le_bytes());
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
                Ok(Frame::Tell { .. }) => Err(DeadLetterReason::UnknownName),
                Err(reason) => Err(reason),
            };
            if let Err(reason) = result {
                shared.dead_letters.record(reason, &msg.subject);
            }
        }
    }
}

/// Fails at once, with `Unreachable`, the asks whose message found no
/// responders (the server's 503 status on
/// `troupe.<cluster>.noreply.<node>.<id>.<id>…`), and checks whether their
/// actors are gone (`watch::confirm`); or those a node refused as sent to
/// its past incarnation, whose node then is known restarted.
pub(super) async fn listen_no_responders(outbound: Outbound, mut statuses: async_nats::Subscriber) {
    let shared = &outbound.shared;
    while let Some(msg) = statuses.next().await {
        let ids: Option<Vec<u64>> = msg
            .subject
            .strip_prefix(&*shared.no_responders_prefix)
            .map(|ids| {
                ids.split('.')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .ok()
            })
            .unwrap_or(None);
        let refusal = read_refusal(&msg.payload);
        match (msg.status, ids, refusal) {
            (Some(async_nats::StatusCode::NO_RESPONDERS), Some(ids), _) => {
                for id in ids {
                    // Already answered or expired: nothing to fail.
                    if let Ok(owner) = shared.pending.complete(id, Answer::Unreachable) {
                        watch::confirm(&outbound, owner);
                    }
                }
            }
            (None, Some(ids), Some((incarnation, node))) => {
                for owner in shared.pending.refused(&ids, incarnation) {
                    if &*owner.address.host == node {
                        // Its node answers as another incarnation: the one
                        // this ref names was restarted away.
                        watch::node_down(shared, node, incarnation);
                    } else {
                        // The name is served by another node now.
                        watch::confirm(&outbound, owner);
                    }
                }
            }
            _ => shared
                .dead_letters
                .record(DeadLetterReason::Malformed, &msg.subject),
        }
    }
}

/// Hears heartbeats and leaves: `troupe.<cluster>.members.{beat,leave}.<node>`,
/// each carrying the node's incarnation (u64 LE; another payload is
/// ignored).
pub(super) async fn listen_members(shared: Arc<Shared>, mut members: async_nats::Subscriber) {
    while let Some(msg) = members.next().await {
        let mut tokens = msg.subject.rsplitn(2, '.');
        let (Some(node), Some(rest)) = (tokens.next(), tokens.next()) else {
            continue;
        };
        let Ok(incarnation) = <[u8; 8]>::try_from(msg.payload.as_ref()) else {
            continue;
        };
        let incarnation = u64::from_le_bytes(incarnation);
        if !valid_token(node) {
            continue;
        }
        let down = |node: &str, incarnation: u64| watch::node_down(&shared, node, incarnation);
        if rest.ends_with(".members.beat") {
            shared.membership.heard(node, incarnation, down);
        } else if rest.ends_with(".members.leave") {
            shared.membership.left(node, incarnation, down);
        }
    }
}

/// Sends this node's heartbeat every `heartbeat_interval`, and declares
/// silent nodes down, checking four times per interval.
pub(super) async fn beat(shared: Arc<Shared>) {
    let subject = format!(
        "troupe.{}.members.beat.{}",
        shared.config.cluster_name, shared.config.node_name
    );
    let payload = Bytes::copy_from_slice(&shared.incarnation.to_le_bytes());
    let check = (shared.config.heartbeat_interval / 4).max(Duration::from_millis(10));
    let mut ticks = tokio::time::interval(check);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    let mut last = tokio::time::Instant::now();
    loop {
        ticks.tick().await;
        // This process stalled (paused, swapped out, starved) if a tick
        // came far later than asked: the others' heartbeats wait unread
        // in the connection meanwhile, so the stall is not their silence.
        let now = tokio::time::Instant::now();
        let gap = now - last;
        last = now;
        if gap > check * 2 {
            let stall = gap - check;
            shared.membership.forgive(stall);
            // The longest is what matters: once a stall has passed the
            // others' timeout, this incarnation is down to them for good.
            let mut longest = shared.stall.lock().unwrap_or_else(|e| e.into_inner());
            if longest.is_none_or(|s| s.lasted < stall) {
                *longest = Some(Stall {
                    ended: std::time::Instant::now(),
                    lasted: stall,
                });
            }
            drop(longest);
            if stall >= shared.config.heartbeat_timeout / 2 {
                tracing::warn!(node = %shared.config.node_name, ?stall, "troupe-remote: this process stalled; if the stall passed the heartbeat timeout, the other nodes have declared it down for good");
            } else {
                tracing::debug!(node = %shared.config.node_name, ?stall, "troupe-remote: this process ran late");
            }
        }
        if n.is_multiple_of(4) {
            let _ = shared
                .client
                .publish(subject.clone(), payload.clone())
                .await;
        }
        n += 1;
        shared
            .membership
            .expire(shared.config.heartbeat_timeout, |node, incarnation| {
                watch::node_down(&shared, node, incarnation)
            });
    }
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
    fn a_refusal_reads_back_and_anything_else_is_not_one() {
        let bytes = refusal(u64::MAX - 3, "node-a");
        assert_eq!(read_refusal(&bytes), Some((u64::MAX - 3, "node-a")));
        assert_eq!(read_refusal(&[]), None);
        assert_eq!(read_refusal(&bytes[..8]), None);
        let mut bad = bytes.to_vec();
        bad[0] = b'X';
        assert_eq!(read_refusal(&bad), None);
        let mut dotted = bytes.to_vec();
        dotted.extend_from_slice(b".>");
        assert_eq!(read_refusal(&dotted), None);
    }
}

//! The node's tasks: the writer (outbound frames, in order), one server and
//! one lookup responder per published name, the reply listener, the
//! membership listener, the heartbeat, and the reply-table sweeper.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use troupe::ActorRef;

use super::{Outbound, Outgoing, Shared};
use crate::config::valid_token;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to::{self, DecodeCtx, ReplySink};
use crate::wire::{self, Frame, RemoteMessage};

/// The writer task: frames go to the client in channel order, until
/// `stop`; then every frame still queued (and one the client had not yet
/// taken) is a `NodeStopped` dead letter, so none is lost silently.
pub(super) async fn write(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Outgoing>,
    mut stop: oneshot::Receiver<()>,
) {
    let stopped = |subject: &str| {
        shared
            .dead_letters
            .record(DeadLetterReason::NodeStopped, subject)
    };
    loop {
        // `stop` is polled until it fires, then never again (we leave).
        let out = tokio::select! {
            biased;
            _ = &mut stop => break,
            out = rx.recv() => match out {
                Some(out) => out,
                None => return,
            },
        };
        match out {
            Outgoing::Frame(subject, payload) => {
                // A publish waits while the client reconnects.
                tokio::select! {
                    biased;
                    _ = &mut stop => {
                        stopped(&subject);
                        break;
                    }
                    published = shared.client.publish(subject.clone(), payload) => {
                        // The client refuses only when closed or when the
                        // frame exceeds the server's max_payload.
                        if published.is_err() {
                            stopped(&subject);
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
    while let Ok(out) = rx.try_recv() {
        if let Outgoing::Frame(subject, _) = out {
            stopped(&subject);
        }
    }
}

/// Serves one published actor: decode, check, tell; until `stop`.
pub(super) async fn serve<M: RemoteMessage>(
    outbound: Outbound,
    name: String,
    actor: ActorRef<M>,
    mut frames: async_nats::Subscriber,
    mut stop: oneshot::Receiver<()>,
) {
    // One handle for the reply tasks of every frame this actor receives.
    let sink: Arc<dyn ReplySink> = Arc::new(outbound.clone());
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => break,
            msg = frames.next() => {
                let Some(msg) = msg else { return };
                if let Err(reason) = deliver(&outbound, &sink, &name, &actor, &msg.payload) {
                    outbound.dead_letter(reason, &msg.subject);
                }
            }
        }
    }
    let _ = frames.unsubscribe().await;
}

fn deliver<M: RemoteMessage>(
    outbound: &Outbound,
    sink: &Arc<dyn ReplySink>,
    name: &str,
    actor: &ActorRef<M>,
    bytes: &[u8],
) -> Result<(), DeadLetterReason> {
    let shared = &outbound.shared;
    let Frame::Tell {
        name: target,
        tag,
        payload,
    } = wire::decode_frame(bytes, shared.config.max_frame_size)?
    else {
        return Err(DeadLetterReason::Malformed);
    };
    if target != name {
        return Err(DeadLetterReason::UnknownName);
    }
    if tag != M::TAG {
        return Err(DeadLetterReason::UnknownTag);
    }
    let ctx = DecodeCtx {
        system: shared.system.clone(),
        target: actor.id(),
        reply_prefix: shared.reply_prefix.clone(),
        ttl: shared.config.reply_ttl,
        outbound: sink.clone(),
    };
    let msg = reply_to::decoding(ctx, || wire::decode_payload::<M>(payload))?;
    actor.tell(msg);
    Ok(())
}

/// Answers lookups of one published name: `[0]` if the asker's tag is the
/// actor's, `[1] ++ our tag` otherwise.
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
            Bytes::from_static(&[0])
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
pub(super) async fn listen_replies(shared: Arc<Shared>, mut replies: async_nats::Subscriber) {
    while let Some(msg) = replies.next().await {
        let result = match wire::decode_frame(&msg.payload, shared.config.max_frame_size) {
            Ok(Frame::Reply { id, payload }) => shared.pending.complete(id, Some(payload)),
            Ok(Frame::NoReply { id }) => shared.pending.complete(id, None),
            Ok(Frame::Tell { .. }) => Err(DeadLetterReason::UnknownName),
            Err(reason) => Err(reason),
        };
        if let Err(reason) = result {
            shared.dead_letters.record(reason, &msg.subject);
        }
    }
}

/// Hears heartbeats and leaves: `troupe.<cluster>.members.{beat,leave}.<node>`.
pub(super) async fn listen_members(shared: Arc<Shared>, mut members: async_nats::Subscriber) {
    while let Some(msg) = members.next().await {
        let mut tokens = msg.subject.rsplitn(2, '.');
        let (Some(node), Some(rest)) = (tokens.next(), tokens.next()) else {
            continue;
        };
        if !valid_token(node) {
            continue;
        }
        if rest.ends_with(".members.beat") {
            shared.membership.heard(node);
        } else if rest.ends_with(".members.leave") {
            shared.membership.left(node);
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
    let check = (shared.config.heartbeat_interval / 4).max(Duration::from_millis(10));
    let mut ticks = tokio::time::interval(check);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    loop {
        ticks.tick().await;
        if n.is_multiple_of(4) {
            let _ = shared.client.publish(subject.clone(), Bytes::new()).await;
        }
        n += 1;
        shared.membership.expire(shared.config.heartbeat_timeout);
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

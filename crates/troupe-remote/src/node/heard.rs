//! What a node hears about other nodes, and acts on once confirmed:
//! heartbeats and leaves (`troupe.<cluster>.members.{beat,leave}.<node>`),
//! and refusals that name one of a node's incarnations as gone. A
//! heartbeat of the incarnation up keeps it up at once; one of a node or
//! incarnation not up (a new node, a restart), a leave, and a refusal
//! are claims, asked about first on the node's own control subject
//! (`node/confirm.rs`).

use std::sync::Arc;

use futures_util::StreamExt;

use super::confirm::{ask_alive, begin, Alive, Claim};
use super::{watch, Shared};
use crate::config::valid_token;
use crate::dead_letters::DeadLetterReason;
use crate::membership::Beat;

/// Hears heartbeats and leaves: `troupe.<cluster>.members.{beat,leave}.<node>`,
/// each carrying the node's incarnation (u64 LE). Anything else there is
/// a `Malformed` dead letter. A heartbeat keeps the incarnation up alive;
/// one of a node or incarnation not up, and a leave, are claims confirmed
/// with the node first (`node/confirm.rs`).
pub(super) async fn listen_members(shared: Arc<Shared>, mut members: async_nats::Subscriber) {
    let prefix = format!("troupe.{}.members.", shared.config.cluster_name);
    while let Some(msg) = members.next().await {
        let parsed = msg
            .subject
            .strip_prefix(&*prefix)
            .and_then(|rest| rest.split_once('.'))
            .filter(|(_, node)| valid_token(node))
            .zip(<[u8; 8]>::try_from(msg.payload.as_ref()).ok());
        let Some(((kind, node), incarnation)) = parsed else {
            shared
                .dead_letters
                .record(DeadLetterReason::Malformed, &msg.subject);
            continue;
        };
        let incarnation = u64::from_le_bytes(incarnation);
        let down = |node: &str, incarnation: u64| watch::node_down(&shared, node, incarnation);
        match kind {
            "beat" => match shared.membership.classify(node, incarnation) {
                Beat::Mine | Beat::Up => {
                    shared.membership.heard(node, incarnation, down);
                }
                // A late heartbeat of an incarnation gone.
                Beat::Down => {}
                Beat::New | Beat::Restart => heartbeat(&shared, node, incarnation, &msg.subject),
                Beat::NoRoom => shared
                    .dead_letters
                    .record(DeadLetterReason::OverCapacity, &msg.subject),
            },
            "leave" => {
                // A leave of another incarnation than the one up (a late
                // one, after a restart) changes nothing.
                if shared.membership.incarnation(node) == Some(incarnation) {
                    leave(&shared, node, incarnation, &msg.subject);
                }
            }
            _ => shared
                .dead_letters
                .record(DeadLetterReason::Malformed, &msg.subject),
        }
    }
}

/// A heartbeat of `node`'s incarnation `incarnation`, which is not the one
/// up (a new node, or a restart), arrived on `subject`: takes it up once
/// the node confirms it (see the module docs).
fn heartbeat(shared: &Arc<Shared>, node: &str, incarnation: u64, subject: &str) {
    let claim = Claim::Alive(node.to_string(), incarnation);
    let Some(confirming) = begin(shared, claim, subject) else {
        return;
    };
    let (node, subject) = (node.to_string(), subject.to_string());
    shared.runtime.spawn(async move {
        let shared = &confirming.shared;
        match ask_alive(shared, &node, incarnation).await {
            Alive::Yes => {
                shared.membership.heard(&node, incarnation, |node, incarnation| {
                    watch::node_down(shared, node, incarnation)
                });
                if shared.membership.incarnation(&node) != Some(incarnation)
                    && !shared.membership.is_down(&node, incarnation)
                {
                    // Confirmed, but there was no room for one more.
                    shared
                        .dead_letters
                        .record(DeadLetterReason::OverCapacity, &subject);
                }
            }
            answer => {
                tracing::debug!(%node, incarnation, ?answer, "troupe-remote: a heartbeat its node did not confirm");
                shared
                    .dead_letters
                    .record(DeadLetterReason::Unconfirmed, &subject);
            }
        }
    });
}

/// `node`'s incarnation `incarnation`, the one up, says on `subject` that
/// it leaves: declared down once the node confirms it (see the module
/// docs).
fn leave(shared: &Arc<Shared>, node: &str, incarnation: u64, subject: &str) {
    let claim = Claim::Leave(node.to_string(), incarnation);
    let Some(confirming) = begin(shared, claim, subject) else {
        return;
    };
    let (node, subject) = (node.to_string(), subject.to_string());
    shared.runtime.spawn(async move {
        let shared = &confirming.shared;
        match ask_alive(shared, &node, incarnation).await {
            Alive::Nobody | Alive::No => {
                shared.membership.left(&node, incarnation, |node, incarnation| {
                    watch::node_down(shared, node, incarnation)
                });
            }
            answer => {
                tracing::warn!(%node, incarnation, ?answer, "troupe-remote: a leave its node did not confirm (a forged one, or the node did not answer): ignored");
                shared
                    .dead_letters
                    .record(DeadLetterReason::Unconfirmed, &subject);
            }
        }
    });
}

/// A refusal arrived on `subject`, from a process under `node`'s name that
/// is not its incarnation `incarnation`: that incarnation is declared down
/// once the node confirms it is not there (see the module docs).
pub(super) fn gone(shared: &Arc<Shared>, node: &str, incarnation: u64, subject: &str) {
    let claim = Claim::Gone(node.to_string(), incarnation);
    let Some(confirming) = begin(shared, claim, subject) else {
        return;
    };
    let (node, subject) = (node.to_string(), subject.to_string());
    shared.runtime.spawn(async move {
        let shared = &confirming.shared;
        match ask_alive(shared, &node, incarnation).await {
            Alive::No => watch::node_down(shared, &node, incarnation),
            answer => {
                tracing::debug!(%node, incarnation, ?answer, "troupe-remote: a refusal its node did not confirm");
                shared
                    .dead_letters
                    .record(DeadLetterReason::Unconfirmed, &subject);
            }
        }
    });
}

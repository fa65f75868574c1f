//! Confirming what a message claims about another node before acting on
//! it.
//!
//! Any client that may publish on a cluster's subjects can publish a
//! leave, a heartbeat or a `Terminated` under any node's name, and every
//! heartbeat shows a node's incarnation. So a claim that would take
//! something away for good is checked with the node it is about, by a
//! request on that node's own control subject
//! (`troupe.<cluster>.system.<node>.<asker>`):
//!
//! - **a leave** of the incarnation up: the node is asked whether that
//!   incarnation is alive. Nobody subscribed there (a leaving node ends its
//!   control subscription before it says it leaves), or an answer "not
//!   me", confirms it; "alive" refutes it. No answer in time confirms
//!   nothing: the silence of its heartbeats decides then.
//! - **a heartbeat of a node not up** (a new node, or another incarnation
//!   of one up: a restart): the node is asked whether that incarnation is
//!   alive; only "alive" takes it up (and the restarted one down). A
//!   heartbeat published under a name nobody serves finds nobody.
//! - **a refusal as another incarnation** (a node refusing a frame sent
//!   to its past incarnation, `node/refusal.rs`): the node is asked
//!   whether that incarnation is alive; only "not me" makes it down.
//! - **a `Terminated`** of an actor this node holds a ref to or watches:
//!   its node is asked whether the actor is still there (`Probe`, as
//!   `watch::confirm` does after no responders), and only "not here", or
//!   the node going down meanwhile, makes the actor gone.
//!
//! This module keeps the claims being confirmed and asks whether an
//! incarnation is alive; the membership claims are made and acted on in
//! `node/heard.rs`, a `Terminated` in `node/watch.rs`.
//!
//! A claim refuted (or unanswered) is an `Unconfirmed` dead letter. One
//! claim is checked once at a time (the same claim arriving again
//! meanwhile joins it), and at most [`MAX_CONFIRMING`] claims at once: one
//! more is an `OverCapacity` dead letter. So a client that only publishes
//! cannot take a live node or actor away; one that may also subscribe on
//! the nodes' control subjects can answer in their place, which only the
//! NATS permissions in docs/operations.md prevent.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::control::{alive_request, control_subject};
use super::Shared;
use crate::address::Address;
use crate::bounds::MAX_CONFIRMING;
use crate::dead_letters::DeadLetterReason;

/// A claim under confirmation.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) enum Claim {
    /// Node `.0` incarnation `.1` leaves.
    Leave(String, u64),
    /// Node `.0` incarnation `.1` is alive (its heartbeat).
    Alive(String, u64),
    /// Node `.0` incarnation `.1` is gone (a refusal).
    Gone(String, u64),
    /// The actor at the address is gone.
    Terminated(Address),
}

/// The claims being confirmed now.
#[derive(Default)]
pub(crate) struct Claims {
    set: Mutex<HashSet<Claim>>,
}

impl Claims {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Claim>> {
        self.set.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many claims are being confirmed.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// A claim being confirmed: forgotten when dropped.
pub(super) struct Confirming {
    pub(super) shared: Arc<Shared>,
    claim: Claim,
}

impl Drop for Confirming {
    fn drop(&mut self) {
        self.shared.claims.lock().remove(&self.claim);
    }
}

/// Starts confirming `claim`, unless it is being confirmed already (then
/// `None`: it joins that one) or too many are (then `None` too, and an
/// `OverCapacity` dead letter on `subject`).
pub(super) fn begin(shared: &Arc<Shared>, claim: Claim, subject: &str) -> Option<Confirming> {
    {
        let mut set = shared.claims.lock();
        if set.contains(&claim) {
            return None;
        }
        if set.len() >= MAX_CONFIRMING {
            drop(set);
            shared
                .dead_letters
                .record(DeadLetterReason::OverCapacity, subject);
            return None;
        }
        set.insert(claim.clone());
    }
    Some(Confirming {
        shared: shared.clone(),
        claim,
    })
}

/// What a node answered when asked whether one of its incarnations is
/// alive.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Alive {
    /// That incarnation answered.
    Yes,
    /// A process under the node's name answered that it is not that
    /// incarnation (or is leaving).
    No,
    /// Nobody subscribes on the node's control subject.
    Nobody,
    /// No answer in time, or an answer that is none of the above.
    Unknown,
}

/// Asks `node` whether its incarnation `incarnation` is alive.
pub(super) async fn ask_alive(shared: &Shared, node: &str, incarnation: u64) -> Alive {
    let Some(payload) = alive_request(incarnation) else {
        return Alive::Unknown;
    };
    let subject = control_subject(&shared.config.cluster_name, node, &shared.config.node_name);
    let asked = shared.client.request(subject, Bytes::from(payload));
    match tokio::time::timeout(shared.config.lookup_timeout, asked).await {
        Ok(Ok(answer)) => match answer.payload.as_ref() {
            [0] => Alive::Yes,
            [1] => Alive::No,
            _ => Alive::Unknown,
        },
        Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => Alive::Nobody,
        _ => Alive::Unknown,
    }
}

//! Death watch across nodes.
//!
//! ```text
//! troupe.<cluster>.system.<node>.<from>   control messages for <node> from node <from> (postcard `Control`)
//! ```
//!
//! **Who speaks.** A control message's subject ends with the name of the
//! node that sends it, and a node speaks only for itself: a `Watch` or
//! `Unwatch` for another node than the sender, or a `Terminated` of
//! another node's actor, is a `WrongSender` dead letter. The NATS
//! permissions in docs/operations.md let each node publish only under its
//! own name; without them the name is a claim, and what a claim would
//! take away is confirmed with the node it is about (`node/confirm.rs`):
//! a `Terminated` makes an actor gone only once its node says it is not
//! there. A `Watch` is kept only from a node incarnation that is a member
//! here (one not heard yet is answered "ask again", and its watcher asks
//! again): so the watches kept are at most one per member and actor, and
//! go when the member goes.
//!
//! **Watching** (this node's actors watching refs served elsewhere): the
//! first watcher of an address sends `Watch` to the serving node as a NATS
//! request. The answer says whether the actor is still there; a node this
//! node does not hear (or hears as another incarnation) has none of its
//! actors. Either way the watchers are fired at once if the actor is
//! gone. Later the serving node sends `Terminated` when the actor stops or its name is unpublished; when the serving node
//! is declared down (or leaves), every watcher of its actors is fired here
//! without any message. When the last watcher of an address unwatches,
//! `Unwatch` tells the serving node to forget us.
//!
//! **Watched** (this node's actors watched from elsewhere): the watching
//! nodes are kept with each actor in `node/locals.rs`; the actor's sentinel
//! sends them `Terminated`.
//!
//! Every control message names incarnations: `Watch` and `Probe` the
//! incarnation of the watched actor's node (another incarnation answers
//! "gone"), `Watch` and `Unwatch` the watcher's (a restarted watcher's
//! watches are forgotten without touching the new one's), `Terminated`
//! the stopped actor's, `Alive` the incarnation asked about (see
//! `node/confirm.rs`). Whatever fires a watcher here also marks the
//! address gone in `liveness.rs`, so every ref to it stops sending.
//!
//! **Confirming** (`confirm`): an ask through a ref that found no
//! responders fails at once with `Unreachable`, and the node asks the
//! actor's node whether the actor is still there (`Probe`); "not here",
//! or the node declared down meanwhile, marks the address gone and fires
//! its watchers. The check rather than the no-responders answer itself
//! decides, because a name is briefly unserved while its node reconnects
//! to another NATS server.
//!
//! Firing a watcher more than once is harmless: the watching actor's cell
//! delivers `Terminated` once per watch (see `troupe::Watcher`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use troupe::{ActorId, Watcher};

use super::control::{control_subject, Control, ASK_AGAIN, HERE, NOT_HERE};
use super::{confirm, Outbound, Shared};
use crate::address::{Address, Kind};
use crate::config::valid_token;
use crate::dead_letters::DeadLetterReason;
use crate::liveness::Liveness;

/// This node's actors watching actors elsewhere, by address.
#[derive(Default)]
pub(crate) struct Watching {
    map: Mutex<HashMap<Address, Vec<Watcher>>>,
}

impl Watching {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Address, Vec<Watcher>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fires and forgets every watcher of `address` (callers mark it gone
    /// first: see [`gone`]).
    fn fire(&self, address: &Address) {
        let watchers = self.lock().remove(address);
        for watcher in watchers.into_iter().flatten() {
            watcher.terminated();
        }
    }

    /// Fires and forgets every watcher of the addresses `pick` selects.
    fn fire_where(&self, pick: impl Fn(&Address) -> bool) {
        let fired: Vec<Watcher> = {
            let mut map = self.lock();
            let gone: Vec<Address> = map.keys().filter(|a| pick(a)).cloned().collect();
            gone.iter()
                .filter_map(|a| map.remove(a))
                .flatten()
                .collect()
        };
        for watcher in fired {
            watcher.terminated();
        }
    }

    pub(super) fn is_watched(&self, address: &Address) -> bool {
        self.lock().contains_key(address)
    }

    /// How many addresses are watched from here.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// An actor here watches the ref with `liveness` (on its own thread: no
/// blocking). A ref made by `Node::select` names no incarnation and is not
/// watched: the watcher is dropped and `Terminated` never comes.
pub(crate) fn watch(outbound: &Outbound, liveness: &Liveness, watcher: Watcher) {
    let shared = &outbound.shared;
    let address = &liveness.address;
    if address.incarnation == 0 {
        return;
    }
    if outbound.is_stopped() || liveness.gone().is_some() {
        // A stopped node will never hear of the actor again; a gone actor
        // will not come back.
        watcher.terminated();
        return;
    }
    let first = {
        let mut map = shared.watching.lock();
        let watchers = map.entry(address.clone()).or_default();
        watchers.push(watcher);
        watchers.len() == 1
    };
    if first {
        shared
            .runtime
            .spawn(register(shared.clone(), address.clone()));
    }
}

/// This node is a new incarnation (`tasks::renew`): the other nodes forget
/// the watches of the old one when they count it down, so every address
/// watched from here is registered again under the new one (a watch
/// registered twice is one watch).
pub(crate) fn rewatch(shared: &Arc<Shared>) {
    let addresses: Vec<Address> = shared.watching.lock().keys().cloned().collect();
    for address in addresses {
        shared.runtime.spawn(register(shared.clone(), address));
    }
}

/// Tells `address`'s node that we watch it; fires at once if it is gone.
async fn register(shared: Arc<Shared>, address: Address) {
    let shared = &*shared;
    let request = Control::Watch {
        incarnation: address.incarnation,
        kind: address.kind,
        id: address.id.to_string(),
        from: shared.config.node_name.clone(),
        from_incarnation: shared.incarnation(),
    };
    // Until answered, or until nobody watches any more (fired or unwatched).
    let here = ask_host(shared, &address, &request, || {
        shared.watching.is_watched(&address)
    })
    .await;
    if here == Some(false) {
        gone(shared, &address);
    }
}

/// Asks `address`'s node `request` (a `Watch` or a `Probe`) while `go_on`
/// holds: `Some(true)` if the actor is there, `Some(false)` if its node
/// says it is not or this node no longer hears that incarnation of its
/// node, `None` if the question was given up.
///
/// "No responders" alone decides nothing: a node reconnecting to another
/// NATS server has no subscriptions for a moment. It is asked again until
/// it answers or membership declares it down (within the heartbeat
/// timeout).
async fn ask_host(
    shared: &Shared,
    address: &Address,
    request: &Control,
    go_on: impl Fn() -> bool,
) -> Option<bool> {
    let subject = control_subject(
        &shared.config.cluster_name,
        &address.host,
        &shared.config.node_name,
    );
    let payload = Bytes::from(postcard::to_stdvec(request).ok()?);
    let pause = (shared.config.heartbeat_interval / 4).max(Duration::from_millis(10));
    let began = Instant::now();
    while go_on() {
        match shared.heard_incarnation(&address.host) {
            Some(heard) if heard != address.incarnation => return Some(false),
            // Never heard (or expired, hence already marked down): given
            // a heartbeat timeout to be heard before it counts as gone.
            None if began.elapsed() >= shared.config.heartbeat_timeout => return Some(false),
            _ => {}
        }
        let asked = shared.client.request(subject.clone(), payload.clone());
        match tokio::time::timeout(shared.config.lookup_timeout, asked).await {
            // Not a member there yet (its heartbeat is on its way): again.
            Ok(Ok(answer)) if answer.payload.as_ref() == [ASK_AGAIN] => {
                tokio::time::sleep(pause).await;
            }
            Ok(Ok(answer)) => return Some(answer.payload.as_ref() == [HERE]),
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
                tokio::time::sleep(pause).await;
            }
            // No answer in time: asked again, unless membership has
            // declared the node down meanwhile (checked above).
            _ => {}
        }
    }
    None
}

/// An ask through `liveness`'s ref found nobody serving it: asks the
/// actor's node whether the actor is still there, and if not marks it gone
/// and fires its watchers (see the module docs). One check at a time per
/// address.
pub(crate) fn confirm(outbound: &Outbound, liveness: Arc<Liveness>) {
    if liveness.address.incarnation == 0
        || liveness.gone().is_some()
        || !liveness.start_confirming()
    {
        return;
    }
    let outbound = outbound.clone();
    outbound.shared.runtime.clone().spawn(async move {
        let shared = &outbound.shared;
        let address = &liveness.address;
        let request = Control::Probe {
            incarnation: address.incarnation,
            kind: address.kind,
            id: address.id.to_string(),
        };
        let here = ask_host(shared, address, &request, || !outbound.is_stopped()).await;
        if here == Some(false) {
            gone(shared, address);
        }
        liveness.done_confirming();
    });
}

/// Asks `address`'s node whether its actor is still there, while a ref
/// or a watch here names it and the node runs (see `ask_host`).
pub(super) async fn still_there(outbound: &Outbound, address: &Address) -> Option<bool> {
    let shared = &outbound.shared;
    let request = Control::Probe {
        incarnation: address.incarnation,
        kind: address.kind,
        id: address.id.to_string(),
    };
    ask_host(shared, address, &request, || {
        !outbound.is_stopped() && is_known(shared, address)
    })
    .await
}

/// Whether a ref or a watch here names `address` (alive as far as this
/// node knows).
pub(super) fn is_known(shared: &Shared, address: &Address) -> bool {
    shared.watching.is_watched(address) || shared.liveness.is_alive(address)
}

/// The actor at `address` is gone: every ref to it is dead, and its
/// watchers here are fired.
pub(super) fn gone(shared: &Shared, address: &Address) {
    shared.liveness.actor_gone(address);
    shared.watching.fire(address);
}

/// The actor `watcher` no longer watches `address`.
pub(crate) fn unwatch(outbound: &Outbound, address: &Address, watcher: ActorId) {
    let shared = &outbound.shared;
    let last = {
        let mut map = shared.watching.lock();
        match map.get_mut(address) {
            Some(watchers) => {
                watchers.retain(|w| w.id() != watcher);
                let empty = watchers.is_empty();
                if empty {
                    map.remove(address);
                }
                empty
            }
            None => false,
        }
    };
    if last {
        let control = Control::Unwatch {
            kind: address.kind,
            id: address.id.to_string(),
            from: shared.config.node_name.clone(),
            from_incarnation: shared.incarnation(),
        };
        send(outbound, &address.host, &control);
    }
}

/// Tells each of `nodes` (watching node incarnations) that our actor
/// `(kind, id)` is gone.
pub(crate) fn tell_gone(outbound: &Outbound, kind: Kind, id: &str, nodes: HashSet<(String, u64)>) {
    let control = Control::Terminated {
        host: outbound.shared.config.node_name.clone(),
        incarnation: outbound.shared.incarnation(),
        kind,
        id: id.to_string(),
    };
    for (node, _) in nodes {
        send(outbound, &node, &control);
    }
}

fn send(outbound: &Outbound, node: &str, control: &Control) {
    let subject = control_subject(
        &outbound.shared.config.cluster_name,
        node,
        &outbound.shared.config.node_name,
    );
    match postcard::to_stdvec(control) {
        Ok(frame) => outbound.send_or_dead_letter(subject.into(), frame),
        Err(_) => outbound.dead_letter(DeadLetterReason::EncodeFailed, &subject),
    }
}

/// `node`'s incarnation `incarnation` was declared down, left, or was
/// replaced by a restart: its actors are gone for every ref and watcher
/// here, and it watches nothing of ours any more.
pub(crate) fn node_down(shared: &Shared, node: &str, incarnation: u64) {
    shared.liveness.node_gone(node, incarnation);
    shared
        .watching
        .fire_where(|a| &*a.host == node && a.incarnation == incarnation);
    shared.locals.forget_node(node, incarnation);
}

/// This node stops: it will not hear of any watched actor again.
pub(crate) fn fire_all(shared: &Shared) {
    shared.watching.fire_where(|_| true);
}

/// Serves this node's control subject until `stop`; then unsubscribes
/// (before the node says it leaves: a leave is confirmed by nobody
/// answering here, see `node/confirm.rs`).
pub(super) async fn serve_control(
    outbound: Outbound,
    mut messages: async_nats::Subscriber,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        let msg = tokio::select! {
            biased;
            _ = &mut stop => break,
            msg = messages.next() => match msg {
                Some(msg) => msg,
                None => return,
            },
        };
        control(&outbound, msg).await;
    }
    let _ = messages.unsubscribe().await;
}

/// Handles one control message (see the module docs).
async fn control(outbound: &Outbound, msg: async_nats::Message) {
    let shared = &outbound.shared;
    let refuse = |reason| outbound.dead_letter(reason, &msg.subject);
    // The sender is the subject's last token.
    let sender = msg.subject.rsplit('.').next().unwrap_or_default();
    let Ok(control) = postcard::from_bytes::<Control>(&msg.payload) else {
        return refuse(DeadLetterReason::Malformed);
    };
    let mine = |incarnation: u64| incarnation == shared.incarnation();
    let answer: u8 = match control {
        Control::Watch {
            incarnation,
            kind,
            id,
            from,
            from_incarnation,
        } => {
            if !valid_token(&id) || !valid_token(&from) {
                return refuse(DeadLetterReason::Malformed);
            }
            if from != sender {
                return refuse(DeadLetterReason::WrongSender);
            }
            if shared.heard_incarnation(&from) != Some(from_incarnation) {
                // Not a member here: nothing is kept for it. A watcher
                // asks, so it is told to ask again; a watch nobody asks
                // for an answer to is no watcher's.
                if msg.reply.is_none() {
                    return refuse(DeadLetterReason::Unconfirmed);
                }
                ASK_AGAIN
            } else if mine(incarnation)
                && shared
                    .locals
                    .add_watcher(&(kind, id.into()), (from, from_incarnation))
            {
                HERE
            } else {
                NOT_HERE
            }
        }
        Control::Probe {
            incarnation,
            kind,
            id,
        } => {
            if mine(incarnation) && shared.locals.get(&(kind, id.into())).is_some() {
                HERE
            } else {
                NOT_HERE
            }
        }
        Control::Alive { incarnation } => {
            if mine(incarnation) && !outbound.is_stopped() {
                HERE
            } else {
                NOT_HERE
            }
        }
        Control::Unwatch {
            kind,
            id,
            from,
            from_incarnation,
        } => {
            if from != sender {
                return refuse(DeadLetterReason::WrongSender);
            }
            shared
                .locals
                .remove_watcher(&(kind, id.into()), &(from, from_incarnation));
            return;
        }
        Control::Terminated {
            host,
            incarnation,
            kind,
            id,
        } => {
            if host != sender {
                return refuse(DeadLetterReason::WrongSender);
            }
            let address = Address {
                host: host.into(),
                incarnation,
                kind,
                id: id.into(),
            };
            confirm_terminated(outbound, address, &msg.subject);
            return;
        }
    };
    if let Some(reply) = msg.reply {
        let _ = shared
            .client
            .publish(reply, Bytes::copy_from_slice(&[answer]))
            .await;
    }
}

/// A `Terminated` of the actor at `address` arrived on `subject` from its
/// node: the actor is gone once its node confirms it (`node/confirm.rs`).
/// Nothing is done for an address no ref or watch here names.
fn confirm_terminated(outbound: &Outbound, address: Address, subject: &str) {
    let shared = &outbound.shared;
    if !is_known(shared, &address) {
        return;
    }
    let claim = confirm::Claim::Terminated(address.clone());
    let Some(confirming) = confirm::begin(shared, claim, subject) else {
        return;
    };
    let outbound = outbound.clone();
    let subject = subject.to_string();
    shared.runtime.spawn(async move {
        let _confirming = confirming;
        match still_there(&outbound, &address).await {
            Some(false) => gone(&outbound.shared, &address),
            Some(true) => {
                tracing::warn!(host = %address.host, actor = %address.id, "troupe-remote: a Terminated its node did not confirm (a forged one): ignored");
                outbound
                    .shared
                    .dead_letters
                    .record(DeadLetterReason::Unconfirmed, &subject);
            }
            // Given up: nothing here names the address any more.
            None => {}
        }
    });
}

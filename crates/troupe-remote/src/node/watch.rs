//! Death watch across nodes.
//!
//! ```text
//! troupe.<cluster>.system.<node>   control messages for <node> (postcard `Control`)
//! ```
//!
//! **Watching** (this node's actors watching refs served elsewhere): the
//! first watcher of an address sends `Watch` to the serving node as a NATS
//! request. The answer says whether the actor is still there; "no
//! responders" means its node is gone. Either way the watchers are fired
//! at once if the actor is gone. Later the serving node sends `Terminated`
//! when the actor stops or its name is unpublished; when the serving node
//! is declared down (or leaves), every watcher of its actors is fired here
//! without any message. When the last watcher of an address unwatches,
//! `Unwatch` tells the serving node to forget us.
//!
//! **Watched** (this node's actors watched from elsewhere): the watching
//! nodes are kept with each actor in `node/locals.rs`; the actor's sentinel
//! sends them `Terminated`.
//!
//! Firing a watcher more than once is harmless: the watching actor's cell
//! delivers `Terminated` once per watch (see `troupe::Watcher`).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use troupe::{ActorId, Watcher};

use super::locals::Key;
use super::refs::{Address, Kind};
use super::{Outbound, Shared};
use crate::config::valid_token;
use crate::dead_letters::DeadLetterReason;

/// What nodes tell each other about watches.
#[derive(Serialize, Deserialize)]
enum Control {
    /// Node `from` watches the actor `(kind, id)` of the receiving node.
    /// Sent as a request: the answer is `[0]` if the actor is there, `[1]`
    /// if not.
    Watch {
        kind: Kind,
        id: String,
        from: String,
    },
    /// Node `from` no longer watches `(kind, id)`.
    Unwatch {
        kind: Kind,
        id: String,
        from: String,
    },
    /// The actor `(kind, id)` of node `host` is gone.
    Terminated {
        host: String,
        kind: Kind,
        id: String,
    },
}

/// The subject of `node`'s control messages.
pub(super) fn control_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.system.{node}")
}

/// This node's actors watching actors elsewhere, by address.
#[derive(Default)]
pub(crate) struct Watching {
    map: Mutex<HashMap<Address, Vec<Watcher>>>,
}

impl Watching {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Address, Vec<Watcher>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fires and forgets every watcher of `address`.
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

    fn is_watched(&self, address: &Address) -> bool {
        self.lock().contains_key(address)
    }

    /// How many addresses are watched from here.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// An actor here watches `address` (on its own thread: no blocking).
pub(crate) fn watch(outbound: &Outbound, address: &Address, watcher: Watcher) {
    let shared = &outbound.shared;
    if outbound.is_stopped() {
        // A stopped node will never hear of the actor again.
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
            .spawn(register(outbound.clone(), address.clone()));
    }
}

/// Tells `address`'s node that we watch it; fires at once if it is gone.
async fn register(outbound: Outbound, address: Address) {
    let shared = &outbound.shared;
    let subject = control_subject(&shared.config.cluster_name, &address.host);
    let request = Control::Watch {
        kind: address.kind,
        id: address.id.to_string(),
        from: shared.config.node_name.clone(),
    };
    let Ok(payload) = postcard::to_stdvec(&request) else {
        return shared.watching.fire(&address);
    };
    let payload = Bytes::from(payload);
    // Until answered, or until nobody watches any more (fired or unwatched).
    while shared.watching.is_watched(&address) {
        let asked = shared.client.request(subject.clone(), payload.clone());
        match tokio::time::timeout(shared.config.lookup_timeout, asked).await {
            Ok(Ok(answer)) => {
                if answer.payload.as_ref() != [0] {
                    shared.watching.fire(&address);
                }
                return;
            }
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
                return shared.watching.fire(&address);
            }
            // No answer in time: a node we do not hear either is gone; one
            // we hear is asked again (its loss will fire the watchers).
            _ if !shared.membership.is_up(&address.host) => {
                return shared.watching.fire(&address);
            }
            _ => {}
        }
    }
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
        };
        send(outbound, &address.host, &control);
    }
}

/// Tells each of `nodes` that our actor `key` is gone.
pub(crate) fn tell_gone(outbound: &Outbound, key: &Key, nodes: HashSet<String>) {
    let control = Control::Terminated {
        host: outbound.shared.config.node_name.clone(),
        kind: key.0,
        id: key.1.to_string(),
    };
    for node in nodes {
        send(outbound, &node, &control);
    }
}

fn send(outbound: &Outbound, node: &str, control: &Control) {
    let subject = control_subject(&outbound.shared.config.cluster_name, node);
    match postcard::to_stdvec(control) {
        Ok(frame) => outbound.send_or_dead_letter(subject.into(), frame),
        Err(_) => outbound.dead_letter(DeadLetterReason::EncodeFailed, &subject),
    }
}

/// `node` was declared down or left: its actors are gone for our
/// watchers, and it watches nothing of ours any more.
pub(crate) fn node_down(shared: &Shared, node: &str) {
    shared.watching.fire_where(|a| &*a.host == node);
    shared.locals.forget_node(node);
}

/// This node stops: it will not hear of any watched actor again.
pub(crate) fn fire_all(shared: &Shared) {
    shared.watching.fire_where(|_| true);
}

/// Serves this node's control subject until it is unsubscribed.
pub(super) async fn serve_control(outbound: Outbound, mut messages: async_nats::Subscriber) {
    let shared = &outbound.shared;
    while let Some(msg) = messages.next().await {
        let Ok(control) = postcard::from_bytes::<Control>(&msg.payload) else {
            outbound.dead_letter(DeadLetterReason::Malformed, &msg.subject);
            continue;
        };
        match control {
            Control::Watch { kind, id, from } => {
                if !valid_token(&id) || !valid_token(&from) {
                    outbound.dead_letter(DeadLetterReason::Malformed, &msg.subject);
                    continue;
                }
                let here = shared.locals.add_watcher(&(kind, id.into()), &from);
                if let Some(reply) = msg.reply {
                    let answer = if here { [0] } else { [1] };
                    let _ = shared
                        .client
                        .publish(reply, Bytes::copy_from_slice(&answer))
                        .await;
                }
            }
            Control::Unwatch { kind, id, from } => {
                shared.locals.remove_watcher(&(kind, id.into()), &from);
            }
            Control::Terminated { host, kind, id } => {
                let address = Address {
                    host: host.into(),
                    kind,
                    id: id.into(),
                };
                shared.watching.fire(&address);
            }
        }
    }
}

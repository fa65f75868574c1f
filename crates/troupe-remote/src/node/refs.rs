//! Actor refs on the wire: the [`Address`] of a remote ref, and the serde
//! functions behind `#[serde(with = "troupe_remote::actor_ref")]`.
//!
//! On the wire a ref is `(host node, kind, id, tag)`:
//!
//! * a ref that came from this cluster (a lookup, or a ref received in a
//!   message) is written as the address it already has, so it can be passed
//!   on through any number of nodes;
//! * a local ref is **exported**: the node gives its actor a random 128-bit
//!   token once (see `node/locals.rs`) and writes
//!   `(this node, Exported, token)`. Frames for it go to
//!   `troupe.<cluster>.ref.<node>.<token>`; an actor that was never sent
//!   anywhere has no subject, and a token cannot be guessed.
//!
//! Reading a ref back on the node that exported it yields the original
//! local ref; elsewhere, a remote ref to the same actor. The tag is the
//! message type's [`RemoteMessage::TAG`]: a ref of another message type does
//! not decode.
//!
//! Like `reply_to`, both directions need the node, which installs itself
//! in a thread-local for one encode or decode ([`scope`]).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use troupe::ActorRef;

use super::target::RemoteTarget;
use super::Outbound;
use crate::config::valid_token;
use crate::wire::RemoteMessage;

/// Whether a ref names a published actor or an exported one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Kind {
    /// Published under a cluster-wide name (`Node::publish`).
    Published,
    /// Sent inside a message; reachable by its token only.
    Exported,
}

/// Where a remote ref's frames go, and which node serves its actor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Address {
    /// The node that serves the actor (for death watch and node loss).
    pub(crate) host: Arc<str>,
    pub(crate) kind: Kind,
    /// The published name, or the export token.
    pub(crate) id: Arc<str>,
}

impl Address {
    /// The subject frames for this actor are published on.
    pub(crate) fn subject(&self, cluster: &str) -> String {
        match self.kind {
            Kind::Published => format!("troupe.{cluster}.actor.{}", self.id),
            Kind::Exported => format!("troupe.{cluster}.ref.{}.{}", self.host, self.id),
        }
    }
}

thread_local! {
    static NODE: RefCell<Option<Outbound>> = const { RefCell::new(None) };
}

/// Runs `f` (an encode or a decode) with `outbound`'s node available to
/// ref fields.
pub(crate) fn scope<T>(outbound: &Outbound, f: impl FnOnce() -> T) -> T {
    let previous = NODE.with(|c| c.replace(Some(outbound.clone())));
    let value = f();
    NODE.with(|c| c.replace(previous));
    value
}

fn current() -> Option<Outbound> {
    NODE.with(|c| c.borrow().clone())
}

/// Serializes an actor ref (see the module docs).
pub fn serialize<M, S>(actor: &ActorRef<M>, serializer: S) -> Result<S::Ok, S::Error>
where
    M: RemoteMessage,
    S: Serializer,
{
    let Some(outbound) = current() else {
        return Err(S::Error::custom(
            "an ActorRef can only be serialized by a troupe-remote send",
        ));
    };
    let address = match actor.external_target::<RemoteTarget<M>>() {
        Some(target) => target.address.clone(),
        // A local ref; an external ref of another transport has no
        // meaning on another node.
        None if !actor.is_external() => {
            let token = outbound
                .shared
                .locals
                .export(&outbound, actor)
                .map_err(S::Error::custom)?;
            Address {
                host: outbound.shared.config.node_name.as_str().into(),
                kind: Kind::Exported,
                id: token,
            }
        }
        None => {
            return Err(S::Error::custom(
                "an external ref of another transport cannot be sent",
            ))
        }
    };
    (&*address.host, address.kind, &*address.id, M::TAG).serialize(serializer)
}

/// Deserializes an actor ref (see the module docs).
pub fn deserialize<'de, M, D>(deserializer: D) -> Result<ActorRef<M>, D::Error>
where
    M: RemoteMessage,
    D: Deserializer<'de>,
{
    let (host, kind, id, tag) = <(String, Kind, String, String)>::deserialize(deserializer)?;
    let Some(outbound) = current() else {
        return Err(D::Error::custom(
            "an ActorRef can only be deserialized by a troupe-remote node",
        ));
    };
    if !valid_token(&host) || !valid_token(&id) {
        return Err(D::Error::custom("malformed actor address"));
    }
    if tag != M::TAG {
        return Err(D::Error::custom(format!(
            "a ref of {tag} where a ref of {} was expected",
            M::TAG
        )));
    }
    let shared = &outbound.shared;
    if kind == Kind::Exported && host == shared.config.node_name {
        if let Some(local) = shared.locals.exported::<M>(&id) {
            return Ok(local);
        }
    }
    let address = Address {
        host: host.into(),
        kind,
        id: id.into(),
    };
    Ok(remote_ref(&outbound, address))
}

/// An ordinary ref whose messages go to `address` through `outbound`.
pub(crate) fn remote_ref<M: RemoteMessage>(outbound: &Outbound, address: Address) -> ActorRef<M> {
    let subject = address.subject(&outbound.shared.config.cluster_name);
    let target = RemoteTarget::<M> {
        subject: subject.into(),
        address,
        outbound: outbound.clone(),
        _msg: PhantomData,
    };
    ActorRef::from_external(&outbound.shared.system, target)
}

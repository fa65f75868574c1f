//! Actor refs on the wire: the [`Address`] of a remote ref, and the serde
//! functions behind `#[serde(with = "troupe_remote::actor_ref")]`.
//!
//! On the wire a ref is `(host node, host incarnation, kind, id, tag)`:
//!
//! * a ref that came from this cluster (a lookup, or a ref received in a
//!   message) is written as the address it already has, so it can be passed
//!   on through any number of nodes;
//! * a local ref is **exported**: the node gives its actor a random 128-bit
//!   token once (see `node/locals.rs`) and writes
//!   `(this node, its incarnation, Exported, token)`. Frames for it go to
//!   `troupe.<cluster>.ref.<node>.<token>`; an actor that was never sent
//!   anywhere has no subject, and a token cannot be guessed.
//!
//! Reading a ref back on the node that exported it yields the original
//! local ref; elsewhere, a remote ref to the same actor. The incarnation
//! pins the ref to one start of its node: frames through it carry it, and
//! a restarted node (another incarnation) refuses them. The tag is the
//! message type's [`RemoteMessage::TAG`]: a ref of another message type does
//! not decode.
//!
//! Like `reply_to`, both directions need the node, which installs itself
//! in a thread-local for one encode or decode ([`Outbound::scope`]).

use std::marker::PhantomData;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use troupe::ActorRef;

use super::target::RemoteTarget;
use super::Outbound;
use crate::address::{Address, Kind};
use crate::config::valid_token;
use crate::wire::RemoteMessage;

/// Serializes an actor ref (see the module docs).
pub fn serialize<M, S>(actor: &ActorRef<M>, serializer: S) -> Result<S::Ok, S::Error>
where
    M: RemoteMessage,
    S: Serializer,
{
    let Some(outbound) = Outbound::current() else {
        return Err(S::Error::custom(
            "an ActorRef can only be serialized by a troupe-remote send",
        ));
    };
    let address = match actor.external_target::<RemoteTarget<M>>() {
        Some(target) => target.liveness.address.clone(),
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
                incarnation: outbound.shared.incarnation,
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
    (
        &*address.host,
        address.incarnation,
        address.kind,
        &*address.id,
        M::TAG,
    )
        .serialize(serializer)
}

/// Deserializes an actor ref (see the module docs).
pub fn deserialize<'de, M, D>(deserializer: D) -> Result<ActorRef<M>, D::Error>
where
    M: RemoteMessage,
    D: Deserializer<'de>,
{
    let (host, incarnation, kind, id, tag) =
        <(String, u64, Kind, String, String)>::deserialize(deserializer)?;
    let Some(outbound) = Outbound::current() else {
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
    if kind == Kind::Exported
        && host == shared.config.node_name
        && incarnation == shared.incarnation
    {
        if let Some(local) = shared.locals.exported::<M>(&id) {
            return Ok(local);
        }
    }
    let address = Address {
        host: host.into(),
        incarnation,
        kind,
        id: id.into(),
    };
    Ok(remote_ref(&outbound, address))
}

/// An ordinary ref whose messages go to `address` through `outbound`.
pub(crate) fn remote_ref<M: RemoteMessage>(outbound: &Outbound, address: Address) -> ActorRef<M> {
    let shared = &outbound.shared;
    let subject = address.subject(&shared.config.cluster_name);
    let current = shared.heard_incarnation(&address.host);
    let liveness = shared.liveness.liveness(&address, current);
    let target = RemoteTarget::<M> {
        subject: subject.into(),
        liveness,
        outbound: outbound.clone(),
        _msg: PhantomData,
    };
    ActorRef::from_external(&outbound.shared.system, target)
}

//! Actor refs on the wire: the node's [`Codec`] (troupe's `transport`),
//! which writes and reads the [`Address`] of a ref and passes reply
//! handles on to the codec of the send or receive it serves.
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
//! `ActorRef` serializes itself (troupe's feature `serde`) through the
//! codec the node installs for one encode or decode ([`Outbound::scope`]);
//! outside it a ref fails to serialize. [`serialize`] and [`deserialize`]
//! are the same impls, kept so that
//! `#[serde(with = "troupe_remote::actor_ref")]` still compiles.

use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use troupe::transport::{Codec, ExportedRef, ExportedReply, ImportedRef, ImportedReply};
use troupe::ActorRef;

use super::target::{Endpoint, RemoteTarget};
use super::Outbound;
use crate::address::{Address, Kind};
use crate::config::valid_token;
use crate::wire::RemoteMessage;

/// The node's codec for one encode or decode: refs through the node,
/// reply handles through `replies` (the codec of a send or of a receive),
/// if the encode or decode has one.
pub(crate) struct NodeCodec {
    pub(crate) outbound: Outbound,
    pub(crate) replies: Option<Rc<dyn Codec>>,
}

impl Codec for NodeCodec {
    fn export_reply(
        &self,
        reply: ExportedReply,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        match &self.replies {
            Some(replies) => replies.export_reply(reply),
            None => Err("a ReplyTo can only be serialized by a troupe-remote send".into()),
        }
    }

    fn import_reply(
        &self,
        wire: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<ImportedReply, erased_serde::Error> {
        match &self.replies {
            Some(replies) => replies.import_reply(wire),
            None => Err(serde::de::Error::custom(
                "a ReplyTo can only be deserialized by a troupe-remote node",
            )),
        }
    }

    fn export_ref(
        &self,
        actor: ExportedRef<'_>,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        let outbound = &self.outbound;
        let address = match actor.external() {
            Some(target) => match target.downcast_ref::<Endpoint>() {
                Some(endpoint) => endpoint.liveness.address.clone(),
                // An external ref of another transport has no meaning on
                // another node.
                None => return Err("an external ref of another transport cannot be sent".into()),
            },
            None if !actor.is_external() => {
                let token = outbound
                    .shared
                    .locals
                    .export(outbound, actor.id(), || actor.local())?;
                Address {
                    host: outbound.shared.config.node_name.as_str().into(),
                    incarnation: outbound.shared.incarnation(),
                    kind: Kind::Exported,
                    id: token,
                }
            }
            None => return Err("an external ref of another transport cannot be sent".into()),
        };
        Ok(Box::new(RefWire {
            address,
            tag: actor.tag(),
        }))
    }

    fn import_ref(
        &self,
        wire: &mut dyn erased_serde::Deserializer<'_>,
        want: &'static str,
    ) -> Result<ImportedRef, erased_serde::Error> {
        let (host, incarnation, kind, id, tag): (String, u64, Kind, String, String) =
            erased_serde::deserialize(wire)?;
        if !valid_token(&host) || !valid_token(&id) {
            return Err(serde::de::Error::custom("malformed actor address"));
        }
        if tag != want {
            return Err(serde::de::Error::custom(format!(
                "a ref of {tag} where a ref of {want} was expected"
            )));
        }
        let outbound = &self.outbound;
        let shared = &outbound.shared;
        if kind == Kind::Exported
            && host == shared.config.node_name
            && incarnation == shared.incarnation()
        {
            if let Some(local) = shared.locals.exported(&id, want) {
                return Ok(ImportedRef::Local(local));
            }
        }
        let address = Address {
            host: host.into(),
            incarnation,
            kind,
            id: id.into(),
        };
        Ok(ImportedRef::Remote {
            system: shared.system.clone(),
            target: Arc::new(endpoint(outbound, address, want)),
        })
    }
}

/// A ref's address and tag, as written.
struct RefWire {
    address: Address,
    tag: &'static str,
}

impl Serialize for RefWire {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let address = &self.address;
        (
            &*address.host,
            address.incarnation,
            address.kind,
            &*address.id,
            self.tag,
        )
            .serialize(serializer)
    }
}

/// Serializes an actor ref: `ActorRef`'s own `Serialize` (troupe's feature
/// `serde`), kept for `#[serde(with = "troupe_remote::actor_ref")]`.
pub fn serialize<M, S>(actor: &ActorRef<M>, serializer: S) -> Result<S::Ok, S::Error>
where
    M: RemoteMessage,
    S: Serializer,
{
    actor.serialize(serializer)
}

/// Deserializes an actor ref: `ActorRef`'s own `Deserialize`, kept for
/// `#[serde(with = "troupe_remote::actor_ref")]`.
pub fn deserialize<'de, M, D>(deserializer: D) -> Result<ActorRef<M>, D::Error>
where
    M: RemoteMessage,
    D: Deserializer<'de>,
{
    ActorRef::deserialize(deserializer)
}

/// Where messages of type `tag` for `address` go, through `outbound`.
fn endpoint(outbound: &Outbound, address: Address, tag: &'static str) -> Endpoint {
    let shared = &outbound.shared;
    let subject = address.subject(&shared.config.cluster_name);
    let current = shared.heard_incarnation(&address.host);
    let liveness = shared.liveness.liveness(&address, current);
    Endpoint {
        subject: subject.into(),
        liveness,
        outbound: outbound.clone(),
        tag,
        last_frame: AtomicUsize::new(0),
    }
}

/// An ordinary ref whose messages go to `address` through `outbound`.
pub(crate) fn remote_ref<M: RemoteMessage>(outbound: &Outbound, address: Address) -> ActorRef<M> {
    let target = RemoteTarget::<M> {
        endpoint: endpoint(outbound, address, M::TAG),
        _msg: PhantomData,
    };
    ActorRef::from_external(&outbound.shared.system, target)
}

//! troupe-remote: troupe actors across processes and hosts, over NATS.
//!
//! A [`Node`] joins an [`ActorSystem`](troupe::ActorSystem) to a NATS
//! cluster. [`Node::publish`] makes a local actor reachable under a
//! cluster-wide name; [`Node::lookup`] on any node returns an ordinary
//! [`troupe::ActorRef`] to it, on which `tell`, `try_tell` and `ask` work as
//! for a local actor. Message types implement [`RemoteMessage`] (serde plus a
//! stable tag); a `ReplyTo` field travels as it is (troupe's feature
//! `serde`, which this crate turns on).
//!
//! ```no_run
//! use std::time::Duration;
//! use serde::{Deserialize, Serialize};
//! use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
//! use troupe_remote::{Node, RemoteConfig, RemoteMessage};
//!
//! #[derive(Serialize, Deserialize)]
//! enum Greet {
//!     Hello(String, ReplyTo<String>),
//! }
//! impl RemoteMessage for Greet {
//!     const TAG: &'static str = "greet.v1";
//! }
//!
//! struct Greeter;
//! impl Actor for Greeter {
//!     type Msg = Greet;
//!     fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Greet) {
//!         let Greet::Hello(name, reply) = msg;
//!         reply.reply(format!("hello, {name}"));
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let system = ActorSystem::builder().build()?;
//! let node = Node::start(&system, RemoteConfig::new("nats://127.0.0.1:4222", "a")).await?;
//! let greeter = system.spawn(Props::new(|| Greeter))?;
//! node.publish("greeter", &greeter).await?;
//!
//! // On any node of the cluster:
//! let greeter = node.lookup::<Greet>("greeter").await?;
//! let answer = greeter
//!     .ask(|r| Greet::Hello("you".into(), r), Duration::from_secs(1))
//!     .await?;
//! assert_eq!(answer, "hello, you");
//! node.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! [`Node::members`] and [`Node::member_events`] tell which nodes are up,
//! from heartbeats.
//!
//! An `ActorRef` field travels as it is too, and `ctx.watch` on a
//! remote ref delivers `Terminated` when the far actor stops or its node
//! goes. The delivery contract (at most once, order per sender and
//! receiver, what happens while NATS is unreachable) is written down in
//! docs/semantics.md, "Across nodes".

#![forbid(unsafe_code)]

// Everything but the wire format needs the `node` feature (on by default);
// the decoder's fuzz target builds without it.
#[cfg(feature = "node")]
pub mod actor_ref {
    //! `ActorRef` fields across nodes: a field of type
    //! `troupe::ActorRef<M>` (with `M: RemoteMessage`) in a
    //! [`RemoteMessage`](crate::RemoteMessage) travels as it is (troupe's
    //! feature `serde`); these functions are the same impls, for
    //! `#[serde(with = "troupe_remote::actor_ref")]`.
    //!
    //! A local ref is exported under a random 128-bit token when it is
    //! first sent; a remote ref is passed on as the address it has. On the
    //! node that exported it the ref reads back as the original local ref;
    //! elsewhere as a remote ref on which `tell`, `ask` and `ctx.watch`
    //! work. The ref's message tag travels with it and must match the
    //! field's type. Outside a node's send or receive a ref fails to
    //! serialize with a serde error.
    pub use crate::node::refs::{deserialize, serialize};
}
#[cfg(feature = "node")]
mod address;
#[cfg(feature = "node")]
mod batching;
#[cfg(feature = "node")]
mod bounds;
#[cfg(feature = "node")]
mod config;
mod dead_letters;
#[cfg(feature = "node")]
mod error;
#[cfg(feature = "launcher")]
pub mod launcher;
#[cfg(feature = "node")]
mod liveness;
#[cfg(feature = "node")]
mod membership;
#[cfg(feature = "node")]
mod node;
#[cfg(feature = "node")]
pub mod reply_to;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wire;

#[cfg(feature = "node")]
pub use batching::BatchStats;
#[cfg(feature = "node")]
pub use bounds::Footprint;
#[cfg(feature = "node")]
pub use config::{Auth, InboundLimit, RemoteConfig, Tls};
pub use dead_letters::{DeadLetter, DeadLetterReason};
#[cfg(feature = "node")]
pub use error::RemoteError;
#[cfg(feature = "node")]
pub use membership::{DownReason, MemberEvent};
#[cfg(feature = "node")]
pub use node::refusal::{REFUSALS_PER_SECOND, REFUSAL_BURST};
#[cfg(feature = "node")]
pub use node::{Node, Stall};
pub use wire::RemoteMessage;

/// The user guide's page on remote actors (`docs/guide/09-remote.md`): its
/// examples are compiled here (`no_run`: they need a NATS server).
#[cfg(all(doctest, feature = "node"))]
pub mod guide {
    #[doc = include_str!("../../../docs/guide/09-remote.md")]
    pub struct Remote;
}

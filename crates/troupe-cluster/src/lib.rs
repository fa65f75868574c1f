//! Cluster building blocks for troupe actors:
//!
//! * [`persistence`]: actors whose state is the fold of a durable event log
//!   (event sourcing), recovered from a snapshot and the log's tail when
//!   they start, with a single writer per persistence id enforced by a
//!   fencing token on every append. No NATS needed.
//! * [`lease`] (feature `nats`, on by default): which node owns a name,
//!   decided by compare-and-set in a NATS JetStream key-value bucket; the
//!   revision is a fencing token.
//! * [`singleton`] (feature `nats`): one instance of an actor in the
//!   cluster, on the lease's holder, reached through a proxy on every node
//!   that holds messages during a handover.
//! * [`sharding`] (feature `nats`): many entities of one type spread over
//!   the nodes, each on one node at a time, started on demand, passivated
//!   when idle, moved when nodes join, leave or fail.
//! * [`receptionist`] (feature `nats`): the system receptionist's listings
//!   made cluster-wide for the keys a node shares.
//! * [`pubsub`] (feature `nats`): topics that actors on any node subscribe
//!   to, alone or in groups, and any node publishes to.
//!
//! `persistence` depends on nothing outside its directory but troupe and
//! troupe-journal; `singleton` is built on `lease` and troupe-remote.
//!
//! The guarantees (what is durable when a reply arrives, what fencing
//! prevents, what recovery replays) are written down in `docs/semantics.md`
//! of the repository, section "Persistent actors"; the user's guide page is
//! `docs/guide/12-persistence.md`.

#![forbid(unsafe_code)]

#[cfg(feature = "nats")]
pub mod lease;
pub mod persistence;
#[cfg(feature = "nats")]
pub mod pubsub;
#[cfg(feature = "nats")]
pub mod receptionist;
#[cfg(feature = "nats")]
pub mod sharding;
#[cfg(feature = "nats")]
pub mod singleton;
#[cfg(feature = "testing")]
pub mod testing;
mod token;

pub use token::MAX_ID_BYTES;

/// The user guide's pages on this crate's blocks, compiled (and the
/// persistence page run) as doctests here so their examples stay true.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../../docs/guide/12-persistence.md")]
    pub struct Persistence;
    #[doc = include_str!("../../../docs/guide/13-singletons.md")]
    pub struct Singletons;
    #[doc = include_str!("../../../docs/guide/14-sharding.md")]
    pub struct Sharding;
    #[doc = include_str!("../../../docs/guide/15-cluster-services.md")]
    pub struct ClusterServices;
}

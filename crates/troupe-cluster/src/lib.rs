//! Cluster building blocks for troupe actors. For now one block:
//! [`persistence`], actors whose state is the fold of a durable event log
//! (event sourcing), recovered from a snapshot and the log's tail when they
//! start, with a single writer per persistence id enforced by a fencing
//! token on every append.
//!
//! Sharding and singletons will live beside it, each in a module of its
//! own; `persistence` depends on nothing outside its directory but troupe
//! and troupe-journal.
//!
//! The guarantees (what is durable when a reply arrives, what fencing
//! prevents, what recovery replays) are written down in `docs/semantics.md`
//! of the repository, section "Persistent actors"; the user's guide page is
//! `docs/guide/12-persistence.md`.

#![forbid(unsafe_code)]

pub mod persistence;

/// The user guide's page on persistent actors, compiled and run as a
/// doctest here so its example stays true.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../../docs/guide/12-persistence.md")]
    pub struct Persistence;
}

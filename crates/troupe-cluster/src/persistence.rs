//! Persistent actors: event sourcing with snapshots and a fencing token.
//!
//! A [`PersistentActor`] handles commands by returning an [`Effect`]
//! (events to persist, then a reply); its state is rebuilt from its events
//! on every start. [`Persistent`] runs it as an ordinary troupe actor on a
//! [`Journal`] ([`LocalJournal`], on local disk, by default).
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use serde::{Deserialize, Serialize};
//! use troupe::{ActorSystem, Props, ReplyTo};
//! use troupe_cluster::persistence::{self, Effect, LocalJournal, Persistent, PersistentActor, PersistentContext};
//!
//! enum Cmd { Deposit(u64, ReplyTo<u64>), Balance(ReplyTo<u64>) }
//! #[derive(Serialize, Deserialize)]
//! enum Event { Deposited(u64) }
//! struct Account { id: String }
//!
//! impl PersistentActor for Account {
//!     type Command = Cmd;
//!     type Event = Event;
//!     type State = u64;
//!     fn persistence_id(&self) -> String { format!("account-{}", self.id) }
//!     fn handle(&mut self, _ctx: &mut PersistentContext<'_, Self>, balance: &u64, cmd: Cmd) -> Effect<Self> {
//!         match cmd {
//!             Cmd::Deposit(n, reply) => Effect::persist(Event::Deposited(n)).then_reply(reply, |b: &u64| *b),
//!             Cmd::Balance(reply) => Effect::reply(reply, *balance),
//!         }
//!     }
//!     fn apply(balance: &mut u64, event: &Event) {
//!         match event { Event::Deposited(n) => *balance += n }
//!     }
//! }
//!
//! let dir = tempfile::tempdir().unwrap();
//! let journal: Arc<dyn persistence::Journal> = Arc::new(LocalJournal::open(dir.path()).unwrap());
//! let system = ActorSystem::builder().threads(1).build().unwrap();
//! let props = {
//!     let journal = journal.clone();
//!     Props::new(move || Persistent::new(Account { id: "1".into() }, journal.clone()))
//! };
//! let account = persistence::spawn(&system, props).unwrap();
//! let t = Duration::from_secs(5);
//! assert_eq!(account.ask(|r| Cmd::Deposit(10, r), t).wait().unwrap(), 10);
//! assert_eq!(account.ask(|r| Cmd::Deposit(5, r), t).wait().unwrap(), 15);
//! system.shutdown();
//! system.await_termination().unwrap();
//!
//! // A new activation (here: a new system) recovers the balance.
//! let system = ActorSystem::builder().threads(1).build().unwrap();
//! let props = Props::new(move || Persistent::new(Account { id: "1".into() }, journal.clone()));
//! let account = persistence::spawn(&system, props).unwrap();
//! assert_eq!(account.ask(Cmd::Balance, t).wait().unwrap(), 15);
//! system.shutdown();
//! system.await_termination().unwrap();
//! ```
//!
//! # The pieces
//!
//! - `runner.rs`: the trait a user implements, and the troupe actor that
//!   runs it (the two name each other) (recovery, the stash, the
//!   append/acknowledge cycle, snapshots, fencing); `runner/effect.rs`,
//!   what a command handler returns.
//! - `journal.rs`: the storage trait, in bytes.
//! - `local.rs`: the local-disk journal on troupe-journal (its header says
//!   why one log per entity type).
//! - `jetstream/` (feature `nats`): [`JetStreamJournal`], a stream per
//!   entity type and a subject per persistence id, every write checked by
//!   the server with `Nats-Expected-Last-Subject-Sequence`, so an
//!   activation of an entity moved to another node fences the old one
//!   there too (its header says which servers are safe); recovery reads
//!   without a consumer, and nothing over the server's limits is sent.
//! - `error.rs`: every failure, typed.

mod error;
#[cfg(feature = "nats")]
mod jetstream;
mod journal;
mod local;
mod runner;

use troupe::{ActorRef, ActorSystem, Props, SpawnError};

pub use error::PersistenceError;
#[cfg(feature = "nats")]
pub use jetstream::{JetStreamJournal, JetStreamOptions, Storage, MAX_ENTITY_TYPE_BYTES};
pub use journal::{Counters, Done, EachEvent, Journal, JournalScope, Replayed, Snapshot};
pub use local::{Durability, LocalJournal, LogOptions};
pub use runner::{
    Effect, Internal, Msg, Persistent, PersistentActor, PersistentContext, PersistentSettings,
};

/// Spawns a persistent actor as a top-level actor of `system` and returns
/// the ref of its command type (see [`command_ref`]).
///
/// # Errors
///
/// As [`ActorSystem::spawn`].
pub fn spawn<A: PersistentActor>(
    system: &ActorSystem,
    props: Props<Persistent<A>>,
) -> Result<ActorRef<A::Command>, SpawnError> {
    let actor = system.spawn(props)?;
    Ok(command_ref(system, &actor))
}

/// An `ActorRef<C>` in front of a persistent actor's own ref: `tell`,
/// `try_tell` and `ask` with the plain command type. It has an id of its
/// own; to watch the actor, watch `actor` itself (the command ref does not
/// report termination).
pub fn command_ref<C: Send + 'static>(
    system: &ActorSystem,
    actor: &ActorRef<Msg<C>>,
) -> ActorRef<C> {
    ActorRef::from_external(system, runner::Commands(actor.clone()))
}

//! troupe: typed actors with supervision, work-stealing dispatchers and ask.
//!
//! An [`Actor`] owns its state and handles one message at a time through a
//! synchronous [`Actor::receive`]. Actors are addressed by typed, cloneable
//! [`ActorRef`]s: [`tell`](ActorRef::tell) enqueues and never blocks,
//! [`ask`](ActorRef::ask) returns an answer to `.await` or to
//! [`wait`](Ask::wait) for. A panic in a handler is caught and handled by the
//! [`SupervisorStrategy`] the parent chose (resume, restart, stop, escalate).
//! An [`ActorSystem`] owns the dispatchers that run actors, the
//! [`Scheduler`], and the graceful shutdown.
//!
//! ```
//! use std::time::Duration;
//! use troupe::prelude::*;
//!
//! enum Msg { Ping(ReplyTo<&'static str>) }
//! struct Ponger;
//! impl Actor for Ponger {
//!     type Msg = Msg;
//!     fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Msg) {
//!         let Msg::Ping(reply) = msg;
//!         reply.reply("pong");
//!     }
//! }
//!
//! let system = ActorSystem::builder().build().unwrap();
//! let ponger = system.spawn(Props::new(|| Ponger).name("ponger")).unwrap();
//! let answer = ponger.ask(Msg::Ping, Duration::from_secs(1)).wait().unwrap();
//! assert_eq!(answer, "pong");
//! system.shutdown();
//! system.await_termination().unwrap();
//! ```
//!
//! The guarantees (ordering, delivery, supervision, shutdown) are written
//! down in `docs/semantics.md` of the repository; what the runtime costs
//! against code without actors, in `docs/benchmarks.md`.

pub mod actor;
pub mod actor_ref;
pub mod ask;
mod dispatch;
mod ids;
mod kernel;
mod mailbox;
pub mod props;
pub mod receptionist;
pub mod router;
#[cfg(feature = "metrics")]
mod runtime_metrics;
pub mod scheduler;
pub mod supervision;
mod sync;
pub mod system;
#[cfg(feature = "serde")]
pub mod transport;

pub use actor::asynchronous::{Async, AsyncActor, AsyncContext};
pub use actor::cell::stash::StashFull;
pub use actor::cell::timers::{TimerId, Timers};
pub use actor::{Actor, Context, Signal};
pub use actor_ref::{
    ActorId, ActorRef, ExternalTarget, SendError, SendFuture, TrySendError, Watcher,
};
pub use ask::{Ask, AskError, ReplyTo};
pub use dispatch::DispatcherStats;
pub use mailbox::bound::{MailboxConfig, Overflow};
pub use props::Props;
pub use receptionist::{Listing, Receptionist, ServiceKey};
pub use router::{Router, Routing};
pub use scheduler::{Cancellable, Scheduler};
pub use supervision::{Directive, Failure, SupervisorStrategy};
pub use system::{
    ActorEvent, ActorEventKind, ActorSystem, ActorSystemBuilder, AwaitError, ConfigError,
    DeadLetter, DeadLetterReason, DispatcherConfig, DispatcherKind, EventStream, SpawnError,
    Stealing, TerminationReason,
};

/// Whether this build records runtime metrics (troupe's `metrics`
/// feature): every handled message then adds a sample to the process's
/// `metrics` recorder. Cargo turns a feature on for every package of one
/// build that asks for it, so a build of several packages at once (say
/// `cargo build --workspace`) can turn it on for a binary whose own
/// manifest does not; a program that measures itself can check here.
///
/// ```
/// if troupe::RUNTIME_METRICS {
///     eprintln!("note: runtime metrics are on in this build");
/// }
/// ```
pub const RUNTIME_METRICS: bool = cfg!(feature = "metrics");

/// The names most programs need.
pub mod prelude {
    pub use crate::{
        Actor, ActorRef, ActorSystem, Ask, AskError, AsyncActor, AsyncContext, Context,
        DispatcherConfig, Props, ReplyTo, Signal, SupervisorStrategy,
    };
}

/// The README's example, compiled and run as a doctest so it stays true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The user guide (`docs/guide/`): every page about the runtime itself is
/// compiled and run as doctests here, so its examples stay true. The page
/// on testing is compiled by `troupe-testkit`, the one on remote actors by
/// `troupe-remote`.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../../docs/guide/01-getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../../../docs/guide/02-actors-and-messages.md")]
    pub struct ActorsAndMessages;
    #[doc = include_str!("../../../docs/guide/03-ask-and-replies.md")]
    pub struct AskAndReplies;
    #[doc = include_str!("../../../docs/guide/04-supervision.md")]
    pub struct Supervision;
    #[doc = include_str!("../../../docs/guide/05-timers.md")]
    pub struct Timers;
    #[doc = include_str!("../../../docs/guide/06-mailboxes.md")]
    pub struct Mailboxes;
    /// Needs the `tokio` feature (`pipe_to_self`, the tokio dispatcher):
    /// `cargo test -p troupe --doc --features tokio`, and every workspace
    /// test run, which turns it on.
    #[cfg(feature = "tokio")]
    #[doc = include_str!("../../../docs/guide/07-async-work.md")]
    pub struct AsyncWork;
    /// Needs the `tokio` feature (the examples await tokio sockets).
    #[cfg(feature = "tokio")]
    #[doc = include_str!("../../../docs/guide/16-async-actors.md")]
    pub struct AsyncActors;
    #[doc = include_str!("../../../docs/guide/10-operations.md")]
    pub struct Operations;
    #[doc = include_str!("../../../docs/guide/11-migrating.md")]
    pub struct Migrating;
}

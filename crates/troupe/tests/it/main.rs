//! The runtime's integration tests as one test binary: a module per area,
//! named `<area>_<topic>`, and the patience and default system they share
//! in [`support`]. One binary links the runtime once instead of once per
//! file.
//!
//! Tests expect messages on `troupe_testkit::TestProbe`s, hold actors on its
//! `Latch`, record orders in its `EventLog`, and end their systems with its
//! `terminate`. A few keep a plain `std::sync::mpsc` channel where a probe
//! actor does not fit (a dead-letter listener, a worker the test keeps
//! busy), and say why where they do.
//!
//! Tests that need a process of their own stay separate binaries directly
//! under `tests/`: `thread_census.rs` (counts the process's threads) and
//! `runtime_miri_smoke.rs` (the end-to-end run CI gives to Miri by name).
//!
//! Every module here shares the process with the others, so a test may not
//! assume it is alone: it names its own systems, counts only its own actors'
//! work, and installs panic filters through `troupe_testkit::quiet_panics`,
//! which chains them instead of replacing one another's.

mod support;

mod actor_lifecycle;
mod adapter_messages;
mod ask_reply;
mod async_actors;
#[cfg(feature = "tokio")]
mod async_pipes;
mod children_by_name;
mod deathwatch_terminated;
mod delivery_ordering;
mod dispatch_fairness;
mod dispatch_locality;
mod dispatch_pinned;
#[cfg(feature = "tokio")]
mod dispatch_tokio;
mod events_stream;
mod mailbox_bounded;
mod mailbox_overload;
mod receptionist_listing;
mod router_routing;
mod scheduler_context_timers;
mod scheduler_manual_clock;
mod scheduler_once;
mod scheduler_timers;
mod stash_unstash;
mod supervision_directives;
mod supervision_groups;
mod supervision_restart_storm;
mod supervision_under_load;
mod system_shutdown;
mod system_shutdown_under_load;
#[cfg(feature = "tracing-spans")]
mod tracing_spans;

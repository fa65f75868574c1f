//! The trading system across processes, on troupe-remote over NATS.
//!
//! Each engine's primary and standby live on different engine nodes;
//! receivers and clients on nodes of their own. Orders are idempotent by
//! id (client id and sequence number), clients retry what is not
//! acknowledged, and when the primaries' node dies (or stops answering,
//! say paused) the standbys take the engines' leases over and go on; a
//! node that finds its lease moved ends itself (fail-stop). See
//! apps/trading/GUARANTEES.md ("Trading across processes") for the guarantee and
//! why two primaries cannot both acknowledge.
//!
//! Modules, from the bottom up (each imports only modules above it):
//! `wire`; `applied`; `batches`; `engine`; `lease`; `client`; `interrupt`; `node`;
//! `args`; `procs`; `netns`; `verify`; `launch`.

pub mod applied;
pub mod args;
pub mod batches;
pub mod client;
pub mod engine;
pub mod interrupt;
pub mod launch;
pub mod lease;
pub mod netns;
pub mod node;
pub mod procs;
pub mod state;
pub mod verify;
pub mod wire;

pub use args::{ClusterWork, NodeArgs, NodeTuning};
pub use launch::{run_cluster, Cluster, ClusterOptions};
pub use node::{run_node, NodeDispatcher, NodeOptions, NodeRole};
pub use procs::NodeCommand;
pub use verify::{print_outcome, ClusterOutcome};

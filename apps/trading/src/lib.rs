//! The trading system of the seed benchmark, on troupe.
//!
//! Clients send limit orders to stateless order receivers, which route each
//! order to the matching engine that owns its book; engines work in
//! primary/standby pairs, each logging every order to its own transaction
//! log before the order completes. See [`topology`] for the market's shape
//! and the scenario, [`run()`] for one benchmark run and its verification.
//!
//! Three variants: `sync` (locks and direct calls), `request-reply`
//! (actors; the primary replies once both engines are done) and `one-way`
//! (actors; fire-and-forget sends and a completion token).
//!
//! ```
//! use std::time::Duration;
//! use trading::{run, RunConfig, Scenario, TxLog, Variant};
//!
//! let config = RunConfig {
//!     variant: Variant::OneWay,
//!     scenario: Scenario::new(2, 600).unwrap(),
//!     txlog: TxLog::Off,
//!     log_root: None,
//!     threads: 2,
//!     timeout: Duration::from_secs(60),
//! };
//! let result = run(&config).unwrap();
//! assert!(result.verified(), "{:?}", result.problems);
//! assert_eq!(result.trades, 300);
//! ```

mod actors_run;
mod client;
pub mod engine;
pub mod engine_core;
pub mod messages;
pub mod replay;
mod run;
mod sync;
pub mod topology;
pub mod txlog;

pub use actors_run::{spawn_pairs, summaries, Pairs};
pub use run::{run, RunConfig, RunResult, Variant};
pub use topology::Scenario;
pub use txlog::TxLog;

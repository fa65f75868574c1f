//! The trading system of the trading experiment (see docs/experiments.md,
//! trading), on troupe.
//!
//! Clients send limit orders to stateless order receivers, which route each
//! order to the matching engine that owns its book; engines work in
//! primary/standby pairs, each logging every order to its own transaction
//! log before the order completes. See [`topology`] for the market's shape
//! and the scenarios, [`run()`] for one benchmark run and [`verify`] for
//! what every run is checked for.
//!
//! Three variants: `sync` (locks and direct calls, [`variants::locked`]),
//! `request-reply` (actors; the primary replies once both engines are done)
//! and `one-way` (actors; fire-and-forget sends and a completion token),
//! both in [`variants::actors`].
//!
//! Modules, from the bottom up (each imports only modules above it in
//! this list): `error`; `topology`; `engine_core`; `messages`; `txlog`;
//! `ledger`; `config`; `verify`; `engine`; `client`; `variants`; `run`;
//! `replay` (imports only `error`); `cluster` (the system across
//! processes, built on the modules before `variants`).
//!
//! ```
//! use std::time::Duration;
//! use trading::{run, Pattern, RunConfig, Scenario, TxLog, Variant};
//!
//! let config = RunConfig {
//!     variant: Variant::OneWay,
//!     scenario: Scenario::new(2, 600).unwrap().with_pattern(Pattern::Resting),
//!     txlog: TxLog::Off,
//!     log_root: None,
//!     threads: 2,
//!     stealing: troupe::Stealing::default(),
//!     window: 1,
//!     timeout: Duration::from_secs(60),
//! };
//! let result = run(&config).unwrap();
//! assert!(result.verified(), "{:?}", result.problems);
//! // 2 clients x 10 loops: 20 asks per book, 10 of them filled, 15 books.
//! assert_eq!((result.trades, result.resting), (300, 150));
//! ```

pub mod client;
pub mod cluster;
pub mod config;
pub mod engine;
pub mod engine_core;
pub mod error;
pub mod ledger;
pub mod messages;
pub mod replay;
mod run;
pub mod topology;
pub mod txlog;
pub mod variants;
pub mod verify;

pub use config::{RunConfig, Variant};
pub use error::{LogError, ParseError, ReplayError, RunError};
pub use run::{run, RunResult};
pub use topology::{Pattern, Scenario, ScenarioError};
pub use txlog::TxLog;
pub use variants::actors::{spawn_pairs, summaries, Pairs};

//! The primes REST service: `GET /primes/{n}` answers the first n primes as
//! a JSON array. Three servers share the routes, the validation (bad input
//! gets a 4xx with a JSON error body) and the metrics:
//!
//! - **actor-backed** ([`server::Kind::Actor`]): axum and hyper on tokio
//!   (`http.rs`), with header-read and idle timeouts ([`timeouts`]); each
//!   request asks a round-robin pool of prime-worker actors, which share a
//!   growing sieve cache; a worker that panics is restarted by its
//!   supervisor and the request gets a 500;
//! - **plain** ([`server::Kind::Plain`]): the same axum server computing in
//!   the handler, the no-actor async baseline;
//! - **blocking** ([`server::Kind::Blocking`]): a fixed pool of threads on
//!   `std::net`, a connection per thread, as a servlet container does, with
//!   the same timeouts (`blocking.rs`).
//!
//! Every server is started, stopped and joined through [`server::Server`].
//! The `faults` feature (this crate's tests only) adds fault injection into
//! the prime workers (`faults.rs`).
//!
//! ```
//! use primes::route::{route, Route};
//! use primes::sieve::{render_json, PrimeCache};
//!
//! assert_eq!(route("GET", "/primes/3", 100), Ok(Route::Primes(3)));
//! assert_eq!(render_json(&PrimeCache::new().first(3)[..3]), "[2,3,5]");
//! ```

#![forbid(unsafe_code)]

mod blocking;
mod drain;
#[cfg(feature = "faults")]
pub mod faults;
#[cfg(not(feature = "faults"))]
mod faults;
pub mod http;
pub mod listener;
pub mod metrics;
pub mod route;
pub mod server;
pub mod service;
pub mod sieve;
pub mod timeouts;

//! The primes REST service: `GET /primes/{n}` answers the first n primes as
//! a JSON array. Three servers share the routes, the validation (bad input
//! gets a 4xx with a JSON error body) and the metrics:
//!
//! - **actor-backed** (`Service::with_actors` + [`http::serve`]): axum and
//!   hyper on tokio, with header-read and idle timeouts ([`timeouts`]);
//!   each request asks a round-robin pool of prime-worker actors, which
//!   share a growing sieve cache; a worker that panics is restarted by its
//!   supervisor and the request gets a 500;
//! - **plain** (`Service::direct` + [`http::serve`]): the same axum server
//!   computing in the handler, the no-actor async baseline;
//! - **blocking** ([`blocking::BlockingServer`]): a fixed pool of threads on
//!   `std::net`, a connection per thread, as a servlet container does.
//!
//! ```
//! use primes::route::{route, Route};
//! use primes::sieve::{render_json, PrimeCache};
//!
//! assert_eq!(route("GET", "/primes/3", 100), Ok(Route::Primes(3)));
//! assert_eq!(render_json(&PrimeCache::new().first(3)[..3]), "[2,3,5]");
//! ```

#![forbid(unsafe_code)]

pub mod blocking;
mod drain;
pub mod http;
pub mod listener;
pub mod metrics;
pub mod route;
pub mod service;
pub mod sieve;
pub mod timeouts;

//! What every module of the `it` binary shares besides the testkit: the
//! patience of its waits and the system most tests start from.
//!
//! # Ground rules
//!
//! * Tests never sleep to wait for an outcome. They expect messages on a
//!   [`troupe_testkit::TestProbe`], hold actors on a [`troupe_testkit::Latch`],
//!   poll state no message announces with [`troupe_testkit::await_condition`],
//!   or read counts after [`troupe_testkit::terminate`], which returns only
//!   once every runtime thread has been joined, so everything the actors did
//!   is visible. Each of those fails after [`PATIENCE`].
//! * "Nothing else arrived" is checked with `TestProbe::received` after
//!   termination, never by waiting for a quiet period. A probe's actors
//!   stop with the system, so what actors do during the shutdown itself
//!   (their `stopped` hooks) goes to a `troupe_testkit::EventLog` instead.

use std::time::Duration;

use troupe::ActorSystem;

/// How long a test waits for an outcome before it fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The system most tests start from: two workers on the default pool.
pub fn system() -> ActorSystem {
    ActorSystem::builder()
        .threads(2)
        .build()
        .expect("the default configuration is valid")
}

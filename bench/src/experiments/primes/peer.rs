//! The primes experiment's Apache Pekko rows: the peer's HTTP server under the same load as troupe's servers.

use serde_json::json;

use super::Settings;
use crate::peer::Server;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// The Pekko HTTP server under the same load as troupe's servers.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let server = Server::start(100_000)?;
    let mut r = super::run_external(server.addr, "pekko", settings, options)?;
    drop(server);
    r.params.insert("runtime".into(), json!("pekko"));
    r.params.insert("peer_of".into(), json!("actor"));
    Ok(vec![r])
}

//! The primes experiment's Apache Pekko row: the peer's HTTP server under
//! the same load as troupe's servers. The load comes from this process, so
//! the warm-up rule ([`crate::warmup::WarmUp`]) is applied here, by the
//! same loop that measures troupe's servers: rounds of the load are played
//! against the server until three rounds in a row agree (or the cap), then
//! the measured rounds.

use serde_json::json;

use super::Settings;
use crate::peer::Server;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// The Pekko HTTP server under the same load as troupe's servers.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let server = Server::start(100_000)?;
    let mut r = super::run_external(server.addr, "pekko", settings, options)?;
    if let Some(threads) = server.threads {
        r.params.insert("threads".into(), json!(threads));
    }
    drop(server);
    // The rounds warmed the JVM: say so.
    r.protocol = format!("JVM {}", r.protocol);
    r.params.insert("runtime".into(), json!("pekko"));
    r.params.insert("peer_of".into(), json!("actor-http1"));
    Ok(vec![r])
}

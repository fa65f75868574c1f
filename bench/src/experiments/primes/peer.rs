//! The primes experiment's Apache Pekko row: the peer's HTTP server under
//! the same load as troupe's servers. The load comes from this process, so
//! the peers' warm-up rule ([`WarmUp`]) is applied here: rounds of the load
//! are played against the server until two consecutive rounds differ by
//! less than the rule's tolerance (or the cap is reached), then the row is
//! measured as troupe's rows are (one more warm-up round, then the measured
//! rounds), and its protocol says all of it.

use serde_json::json;

use super::Settings;
use crate::peer::{Server, WarmUp};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// The Pekko HTTP server under the same load as troupe's servers.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let server = Server::start(100_000)?;
    // Each warm-up call plays two rounds (its own warm-up and one measured):
    // both count as warm-up rounds of the JVM, in the order they ran.
    let warm_options = RunOptions {
        repeats: 1,
        filter: options.filter.clone(),
    };
    let mut rounds: Vec<f64> = Vec::new();
    while !WarmUp::done(&rounds) {
        let r = super::run_external(server.addr, "pekko", settings, &warm_options)?;
        rounds.push(r.warmup_ns_per_msg);
        rounds.extend(&r.samples_ns_per_msg);
        eprintln!(
            "pekko primes: warm-up rounds so far (ns per request): {:?}",
            rounds.iter().map(|r| r.round()).collect::<Vec<_>>()
        );
    }
    let mut r = super::run_external(server.addr, "pekko", settings, options)?;
    if let Some(threads) = server.threads {
        r.params.insert("threads".into(), json!(threads));
    }
    drop(server);
    r.protocol = format!(
        "{} (plus the load generator's own warm-up round)",
        WarmUp::protocol(&rounds, r.repeats)
    );
    r.params.insert("jvm_warmup_rounds".into(), json!(rounds));
    r.params.insert("runtime".into(), json!("pekko"));
    r.params.insert("peer_of".into(), json!("actor-http1"));
    Ok(vec![r])
}

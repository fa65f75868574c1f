//! Spawn and stop: spawn N idle actors, wait until every one has started,
//! stop them all and wait until every one has stopped; the figure is the
//! whole cycle's time per actor. The first run of the process (a fresh
//! process per row) also reads the resident memory the started actors
//! occupy: bytes per idle actor, everything included (the library's
//! per-actor task, mailbox and bookkeeping, allocator overhead), less the
//! vector of references the benchmark holds.
//!
//! Arguments: `--actors 100000 --threads 2`. RESULT: `actors`, `threads`,
//! `bytes_per_actor`, the protocol's fields.

mod actix;
mod kameo;
mod ractor;

use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::Check;
use crate::steady::Steady;
use crate::Library;

/// What one cycle measured.
pub struct Cycle {
    /// ns for the whole cycle.
    pub ns: f64,
    /// Resident memory growth from before the first spawn to every actor
    /// started, in bytes.
    pub grown: f64,
    /// The bytes of the references the benchmark held meanwhile.
    pub refs: f64,
    /// Actors that started, and that stopped.
    pub started: u64,
    /// Actors that stopped.
    pub stopped: u64,
}

/// The cycles of one library, on its runtime.
pub trait Spawns {
    /// One cycle of `actors`.
    fn cycle(&mut self, actors: usize) -> Result<Cycle, String>;
}

/// The current resident set of this process, in bytes (Linux).
pub fn rss_bytes() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().strip_suffix("kB"))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib * 1024.0)
}

/// Runs the cycles on `library` and returns the RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let actors = a.num("actors", 100_000)?.max(1) as usize;
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let mut lib: Box<dyn Spawns> = match library {
        Library::Kameo => Box::new(kameo::Runner::new(threads)?),
        Library::Ractor => Box::new(ractor::Runner::new(threads)?),
        Library::Actix => Box::new(actix::Runner::new(threads)),
    };
    let mut checks = Check::default();
    let mut bytes = None;
    let what = format!("{} spawn-stop", library.name());
    let measured = steady.measure(&what, |_| {
        let c = lib.cycle(actors)?;
        let n = actors as u64;
        checks.that(c.started == n, || {
            format!("{} of {n} actors started", c.started)
        });
        checks.that(c.stopped == n, || {
            format!("{} of {n} actors stopped", c.stopped)
        });
        // Only the process's first cycle: later ones reuse freed memory.
        bytes.get_or_insert((c.grown - c.refs) / actors as f64);
        Ok(c.ns / actors as f64)
    })?;
    let mut json = Map::new();
    json.insert("experiment".into(), json!("spawn"));
    json.insert("actors".into(), json!(actors));
    json.insert("threads".into(), json!(threads));
    json.insert("bytes_per_actor".into(), json!(bytes));
    measured.write_json(&mut json, "");
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

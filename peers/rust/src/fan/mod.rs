//! Fan-in and fan-out. Fan-in: 4 producer actors each send M/4 numbered
//! messages to one consumer actor, which counts them and checks that each
//! producer's arrive in order. Fan-out: one producer actor sends M
//! numbered messages round-robin to 32 worker actors, each of which counts
//! its own and checks their order. The figure is the run's time per
//! message, from the producers' start to the last message handled.
//!
//! Arguments: `--msgs 1000000 --threads 2`. RESULT: `msgs`, `threads`, the
//! protocol's fields suffixed `_in` and `_out`.

mod actix;
mod kameo;
mod ractor;

use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::Check;
use crate::steady::Steady;
use crate::Library;

/// Producers of the fan-in.
pub const PRODUCERS: usize = 4;
/// Workers of the fan-out.
pub const WORKERS: usize = 32;

/// What a run's receivers counted: messages, and messages out of order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Messages received.
    pub received: u64,
    /// Messages whose number was not the next from their sender.
    pub disorder: u64,
}

/// A receiver's view of one sender's numbered messages.
#[derive(Default)]
pub struct Sequence {
    next: Vec<u64>,
    counts: Counts,
}

impl Sequence {
    /// A receiver of `senders` senders.
    pub fn new(senders: usize) -> Sequence {
        Sequence {
            next: vec![0; senders],
            counts: Counts::default(),
        }
    }

    /// Records message `seq` of `sender`.
    pub fn arrived(&mut self, sender: usize, seq: u64) {
        self.counts.received += 1;
        if self.next[sender] != seq {
            self.counts.disorder += 1;
        }
        self.next[sender] = seq + 1;
    }

    /// The counts.
    pub fn counts(&self) -> Counts {
        self.counts
    }
}

/// Fan-in and fan-out runs of one library.
pub trait Fans {
    /// One fan-in run of `per_producer` messages per producer: ns and counts.
    fn fan_in(&mut self, per_producer: u64) -> Result<(f64, Counts), String>;
    /// One fan-out run of `per_worker` messages per worker: ns and counts.
    fn fan_out(&mut self, per_worker: u64) -> Result<(f64, Counts), String>;
}

/// Runs both on `library` and returns the RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let msgs = a.num("msgs", 1_000_000)?;
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let per_producer = (msgs / PRODUCERS as u64).max(1);
    let per_worker = (msgs / WORKERS as u64).max(1);
    let mut lib: Box<dyn Fans> = match library {
        Library::Kameo => Box::new(kameo::Runner::new(threads)?),
        Library::Ractor => Box::new(ractor::Runner::new(threads)?),
        Library::Actix => Box::new(actix::Runner::new(threads)),
    };
    let mut checks = Check::default();
    let check = |what: &str, c: Counts, expected: u64, checks: &mut Check| {
        checks.that(c.received == expected, || {
            format!(
                "{what}: {} messages received, expected {expected}",
                c.received
            )
        });
        checks.that(c.disorder == 0, || {
            format!("{what}: {} messages arrived out of order", c.disorder)
        });
    };
    let what = format!("{} fan-in", library.name());
    let fan_in = steady.measure(&what, |_| {
        let (ns, c) = lib.fan_in(per_producer)?;
        let total = per_producer * PRODUCERS as u64;
        check("fan-in", c, total, &mut checks);
        Ok(ns / total as f64)
    })?;
    let what = format!("{} fan-out", library.name());
    let fan_out = steady.measure(&what, |_| {
        let (ns, c) = lib.fan_out(per_worker)?;
        let total = per_worker * WORKERS as u64;
        check("fan-out", c, total, &mut checks);
        Ok(ns / total as f64)
    })?;
    let mut json = Map::new();
    json.insert("experiment".into(), json!("fan"));
    json.insert("msgs_in".into(), json!(per_producer * PRODUCERS as u64));
    json.insert("msgs_out".into(), json!(per_worker * WORKERS as u64));
    json.insert("threads".into(), json!(threads));
    fan_in.write_json(&mut json, "_in");
    fan_out.write_json(&mut json, "_out");
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

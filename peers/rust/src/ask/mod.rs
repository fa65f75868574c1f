//! Asks: a plain thread asks an echo actor N times in a row, waiting for
//! each answer (the library's way for code outside actors: a blocking
//! ask); and an asker actor asks an echo actor N times in a row from its
//! handler (the library's way between actors). Every answer must echo its
//! question. Figures: the mean round trip of a run (ns per ask), and for
//! the thread the per-ask median and 99th percentile of the measured runs.
//!
//! Arguments: `--asks 100000 --threads 2`. RESULT: `asks`, `threads`, the
//! protocol's fields suffixed `_thread` and `_actor`, `p50_ns_thread`,
//! `p99_ns_thread` (medians over the measured runs).

mod actix;
mod kameo;
mod ractor;

use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::Check;
use crate::steady::{median, quantile, Steady};
use crate::Library;

/// The asks of one library, on its runtime.
pub trait Asks {
    /// One run from a plain thread: every ask's round trip in ns, and how
    /// many answers were wrong.
    fn ask_from_thread(&mut self, asks: u64) -> Result<(Vec<f64>, u64), String>;
    /// One run between two actors: the run's ns, and how many answers
    /// were wrong.
    fn between_actors(&mut self, asks: u64) -> Result<(f64, u64), String>;
}

/// Runs both on `library` and returns the RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let asks = a.num("asks", 100_000)?.max(1);
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let mut lib: Box<dyn Asks> = match library {
        Library::Kameo => Box::new(kameo::Runner::new(threads)?),
        Library::Ractor => Box::new(ractor::Runner::new(threads)?),
        Library::Actix => Box::new(actix::Runner::new(threads)),
    };
    let mut checks = Check::default();
    let wrong = |n: u64, checks: &mut Check| {
        checks.that(n == 0, || {
            format!("{n} answers did not echo their question")
        });
    };
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    let what = format!("{} ask-thread", library.name());
    let thread = steady.measure(&what, |measured| {
        let (mut lat, bad) = lib.ask_from_thread(asks)?;
        wrong(bad, &mut checks);
        let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
        if measured {
            lat.sort_by(f64::total_cmp);
            p50.push(quantile(&lat, 0.5));
            p99.push(quantile(&lat, 0.99));
        }
        Ok(mean)
    })?;
    let what = format!("{} ask-actor", library.name());
    let actor = steady.measure(&what, |_| {
        let (ns, bad) = lib.between_actors(asks)?;
        wrong(bad, &mut checks);
        Ok(ns / asks as f64)
    })?;
    let mut json = Map::new();
    json.insert("experiment".into(), json!("ask"));
    json.insert("asks".into(), json!(asks));
    json.insert("threads".into(), json!(threads));
    thread.write_json(&mut json, "_thread");
    actor.write_json(&mut json, "_actor");
    json.insert("p50_ns_thread".into(), json!(median(&p50)));
    json.insert("p99_ns_thread".into(), json!(median(&p99)));
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

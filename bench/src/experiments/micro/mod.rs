//! Micro-benchmarks of the runtime's fixed costs: spawning an actor, the
//! memory an idle actor occupies, and an ask round trip from a plain thread.
//!
//! - `spawn`: spawns N top-level actors from one thread (time per `spawn`
//!   call), waits until every actor has run its `started` hook, and reads the
//!   growth of resident memory: bytes per idle actor, everything included
//!   (cell, mailbox, the system's registry entry, allocator overhead).
//! - `ask-thread`: a plain thread asks an echo actor N times in a row and
//!   waits for each answer; `ns_per_msg` is the mean round trip of a run, and
//!   the row's params carry the per-ask median and 99th percentile.
//! - `ask-actor`, `spawn-stop`: an actor asking another, and the spawn and
//!   stop cycle ([`actors`]), which the Rust peers also run.
//!
//! Every row runs on a system of the machine's cores (troupe's default),
//! recorded as `workers`, and the Rust peers' rows on as many threads.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use troupe::prelude::*;

mod actors;
mod experiment;
pub mod rust_peers;

pub use experiment::Micro;

use crate::report::Row;
use crate::rss;
use crate::runner::{self, expect_eq, RunOptions, Scale, Stopwatch, Workload, WorkloadError};
use crate::shared::run_experiment;
use crate::shared::SystemGuard;

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "micro";

/// Settings of the micro-benchmarks.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Actors spawned per run.
    pub actors: usize,
    /// Asks per run.
    pub asks: u64,
    /// Actors spawned and stopped per run of the `spawn-stop` rows (fewer
    /// than `actors`: a peer's idle actor can take several kilobytes).
    pub cycled: usize,
    /// The threads every row runs on: troupe's default, the machine's cores.
    pub workers: usize,
}

impl Settings {
    /// The sizes for a scale (the 1,000,000 actors by default).
    pub fn for_scale(scale: Scale) -> Self {
        match scale {
            Scale::Quick => Settings {
                actors: 100_000,
                asks: 10_000,
                cycled: 20_000,
                workers: cores(),
            },
            Scale::Default | Scale::Full => Settings {
                actors: 1_000_000,
                asks: 100_000,
                cycled: 100_000,
                workers: cores(),
            },
        }
    }
}

/// The machine's cores: the default system's worker threads.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Actors started in this process, and how many the probe waits for. The
/// idle actor is a zero-sized type, so the figure is the runtime's own cost;
/// these statics are per process, and each probe runs in a fresh one.
static STARTED: AtomicUsize = AtomicUsize::new(0);
static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static ALL_STARTED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// An actor that does nothing but count its start.
struct Idle;

impl Actor for Idle {
    type Msg = ();

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        if STARTED.fetch_add(1, Ordering::AcqRel) + 1 == TARGET.load(Ordering::Acquire) {
            let (done, cv) = &ALL_STARTED;
            *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
    }
}

/// Per-run extra figures, keyed by variant, merged into the rows' params.
type Extras = Rc<RefCell<Vec<(String, &'static str, f64)>>>;

/// What one spawn measurement found (printed by the child process).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct SpawnProbe {
    /// Wall time of the `spawn` calls, in nanoseconds.
    pub spawn_ns: u64,
    /// Resident memory growth per started idle actor, in bytes.
    pub bytes_per_actor: f64,
}

/// Measures spawning `actors` idle actors in this (fresh) process. Resident
/// memory is only meaningful in a fresh process: memory an earlier run freed
/// stays resident in the allocator and would hide the growth.
pub fn spawn_probe(actors: usize) -> Result<SpawnProbe, WorkloadError> {
    let system = ActorSystem::builder()
        .name("spawn")
        .build()
        .map_err(|e| WorkloadError::new(e.to_string()))?;
    let guard = SystemGuard(system);
    STARTED.store(0, Ordering::Release);
    TARGET.store(actors, Ordering::Release);
    let props = Props::new(|| Idle);
    let mut refs = Vec::with_capacity(actors);
    let before = rss::current_rss_bytes().map_err(|e| WorkloadError::new(e.to_string()))?;
    let clock = Instant::now();
    for _ in 0..actors {
        let actor = guard
            .0
            .spawn(props.clone())
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        refs.push(actor);
    }
    let spawn_ns = clock.elapsed().as_nanos() as u64;
    {
        let (done, cv) = &ALL_STARTED;
        let guard_done = done.lock().unwrap_or_else(|e| e.into_inner());
        let (all, timeout) = cv
            .wait_timeout_while(guard_done, Duration::from_secs(120), |d| !*d)
            .unwrap_or_else(|e| e.into_inner());
        if timeout.timed_out() && !*all {
            return Err(WorkloadError::new("not every actor started within 120 s"));
        }
    }
    let after = rss::current_rss_bytes().map_err(|e| WorkloadError::new(e.to_string()))?;
    // The refs vector is the benchmark's, not the actors': leave it out.
    let refs_bytes = (refs.capacity() * std::mem::size_of::<ActorRef<()>>()) as f64;
    let bytes_per_actor = (after.saturating_sub(before) as f64 - refs_bytes) / actors as f64;
    expect_eq(
        "actors started",
        actors as u64,
        STARTED.load(Ordering::Acquire) as u64,
    )?;
    expect_eq(
        "live top-level actors",
        actors as u64,
        guard.0.top_level_count() as u64,
    )?;
    drop(refs);
    Ok(SpawnProbe {
        spawn_ns,
        bytes_per_actor,
    })
}

fn spawn_workload(actors: usize, workers: usize, extras: Extras) -> Workload {
    let variant = "spawn";
    Workload::new(variant, move || {
        let args = [
            "spawn-probe".to_string(),
            "--actors".into(),
            actors.to_string(),
        ];
        let probe: SpawnProbe = crate::child::probe("spawn probe", &args)?;
        extras.borrow_mut().push((
            variant.to_string(),
            "bytes_per_actor",
            probe.bytes_per_actor,
        ));
        Ok(runner::Sample {
            msgs: actors as u64,
            elapsed: Duration::from_nanos(probe.spawn_ns),
        })
    })
    .param("runtime", "troupe")
    .param("actors", actors)
    .param("workers", workers)
    .param("process", "fresh per run")
}

/// The echo's request: a number to send back.
pub(crate) enum Echo {
    Ask(u64, ReplyTo<u64>),
}

/// Answers every request with its number.
pub(crate) struct EchoActor;

impl Actor for EchoActor {
    type Msg = Echo;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Echo) {
        let Echo::Ask(n, reply) = msg;
        reply.reply(n);
    }
}

fn ask_workload(asks: u64, workers: usize, extras: Extras) -> Workload {
    let variant = "ask-thread";
    Workload::with_setup(variant, move || {
        let system = ActorSystem::builder()
            .name("ask")
            .build()
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let echo = system
            .spawn(Props::new(|| EchoActor))
            .map_err(|e| WorkloadError::new(e.to_string()))?;
        let guard = SystemGuard(system);
        Ok(move || {
            let _keep = &guard;
            let mut latencies = Vec::with_capacity(asks as usize);
            let clock = Stopwatch::start();
            for i in 0..asks {
                let t0 = Instant::now();
                let answer = echo
                    .ask(|r| Echo::Ask(i, r), Duration::from_secs(10))
                    .wait()
                    .map_err(|e| WorkloadError::new(e.to_string()))?;
                latencies.push(t0.elapsed().as_nanos() as f64);
                expect_eq("echoed value", i, answer)?;
            }
            let sample = clock.stop(asks);
            latencies.sort_by(f64::total_cmp);
            let pick = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
            let mut e = extras.borrow_mut();
            e.push((variant.to_string(), "p50_ns", pick(0.5)));
            e.push((variant.to_string(), "p99_ns", pick(0.99)));
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("asks", asks)
    .param("workers", workers)
}

/// Runs the micro-benchmarks; measured extras (bytes per actor, ask
/// percentiles) go into each row's params as the median over the measured
/// runs, with every run's value kept under `<name>_samples`.
pub fn run(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let extras: Extras = Rc::default();
    let workloads = vec![
        spawn_workload(sizes.actors, sizes.workers, extras.clone()),
        ask_workload(sizes.asks, sizes.workers, extras.clone()),
        actors::ask_actor_workload(sizes.asks, sizes.workers),
        actors::spawn_stop_workload(sizes.cycled, sizes.workers),
    ];
    let mut rows = run_experiment(EXPERIMENT, workloads, options)?;
    let extras = extras.borrow();
    for row in &mut rows {
        let mut names: Vec<&'static str> = extras
            .iter()
            .filter(|(v, _, _)| *v == row.variant)
            .map(|(_, n, _)| *n)
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            // The first value of each name is the warm-up's; keep it apart.
            let values: Vec<f64> = extras
                .iter()
                .filter(|(v, n, _)| *v == row.variant && *n == name)
                .map(|(_, _, x)| *x)
                .skip(1)
                .collect();
            if let Some(summary) = runner::summarize(&values) {
                row.params
                    .insert(name.to_string(), Value::from(summary.median));
                row.params
                    .insert(format!("{name}_samples"), Value::from(values.clone()));
            }
        }
    }
    Ok(rows)
}

//! The primes REST experiment (seed 003, `EXPERIMENTS.md` section 4): the
//! load generator against the actor-backed server, the plain axum handler
//! and the blocking thread-pool server, each started in this process (or a
//! server elsewhere with `--url`). One warm-up round, then the measured
//! rounds, as in the post; every response is counted and checked.

mod experiment;
pub mod loadgen;
pub mod peer;

pub use experiment::Primes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use primes::blocking::BlockingServer;
use primes::service::Service;
use primes::sieve::{render_json, PrimeCache};
use serde_json::{json, Map};
use troupe::ActorSystem;

use crate::progress::Progress;
use crate::report::Row;
use crate::runner::{summarize, Measurement, Phase, RunOptions, Sample, Scale, WorkloadError};
use loadgen::{run_round, Round, RoundResult};

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "primes";

/// Load settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Connections opened at once.
    pub connections: usize,
    /// Requests per round.
    pub requests: u64,
    /// The n of `/primes/{n}`.
    pub n: usize,
    /// Open loop at this rate (requests/s); closed loop when `None`.
    pub rate: Option<f64>,
    /// Target this server instead of starting the three in-process.
    pub url: Option<SocketAddr>,
}

impl Settings {
    /// The post's load: 1,000 connections, 20,000 requests, n = 20.
    pub fn for_scale(scale: Scale) -> Self {
        let (connections, requests) = match scale {
            Scale::Quick => (100, 2_000),
            Scale::Default | Scale::Full => (1_000, 20_000),
        };
        Settings {
            connections,
            requests,
            n: 20,
            rate: None,
            url: None,
        }
    }
}

/// A server started in this process.
pub(crate) enum Running {
    Async {
        runtime: tokio::runtime::Runtime,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        done: tokio::task::JoinHandle<std::io::Result<()>>,
        system: Option<ActorSystem>,
    },
    Blocking(BlockingServer),
}

const MAX_N: usize = 100_000;

/// Dispatcher threads of the actor-backed server (see `start`).
const DISPATCHER_THREADS: usize = 1;

pub(crate) fn start(server: &str) -> Result<(SocketAddr, Running), WorkloadError> {
    let err = |e: &dyn std::fmt::Display| WorkloadError::new(format!("{server} server: {e}"));
    let socket =
        primes::listener::bind("127.0.0.1:0".parse().expect("valid")).map_err(|e| err(&e))?;
    let addr = socket.local_addr().map_err(|e| err(&e))?;
    if server == "blocking" {
        let s = BlockingServer::start(socket, 200, MAX_N).map_err(|e| err(&e))?;
        return Ok((addr, Running::Blocking(s)));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("primes-server")
        .enable_all()
        .build()
        .map_err(|e| err(&e))?;
    let (system, service) = if server == "actor" {
        // One dispatcher thread: the HTTP runtime already has a thread per
        // core, and on this 2-core machine a second spinning worker takes
        // CPU from it (40 K req/s with two workers, 52-63 K with one).
        let system = ActorSystem::builder()
            .name("primes")
            .threads(DISPATCHER_THREADS)
            .build()
            .map_err(|e| err(&e))?;
        let service = Service::with_actors(&system, 4, MAX_N, None).map_err(|e| err(&e))?;
        (Some(system), service)
    } else {
        (None, Service::direct(MAX_N))
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = runtime.spawn(primes::http::serve(socket, Arc::new(service), async {
        let _ = rx.await;
    }));
    Ok((
        addr,
        Running::Async {
            runtime,
            stop: Some(tx),
            done,
            system,
        },
    ))
}

pub(crate) fn stop(running: Running) {
    match running {
        Running::Blocking(s) => s.stop(),
        Running::Async {
            runtime,
            mut stop,
            done,
            system,
        } => {
            if let Some(tx) = stop.take() {
                let _ = tx.send(());
            }
            let _ = runtime.block_on(done);
            drop(runtime);
            if let Some(system) = system {
                system.shutdown();
                let _ = system.await_termination_timeout(Duration::from_secs(30));
            }
        }
    }
}

/// Runs the servers (or `--url`) and returns one row each.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let (client, expected) = load_generator(settings)?;
    let servers: Vec<&str> = if settings.url.is_some() {
        vec!["url"]
    } else {
        vec!["actor", "plain", "blocking"]
    };
    let servers: Vec<&str> = servers
        .into_iter()
        .filter(|server| options.filter.as_deref().is_none_or(|f| server.contains(f)))
        .collect();
    let mut progress = Progress::new(EXPERIMENT, servers.len(), options.repeats);
    let mut rows = Vec::new();
    for (index, server) in servers.into_iter().enumerate() {
        progress.start_row(index, server);
        let (addr, running) = match settings.url {
            Some(url) => (url, None),
            None => {
                let (addr, running) = start(server).inspect_err(|_| progress.finish())?;
                (addr, Some(running))
            }
        };
        let results = measure(
            &client,
            addr,
            server,
            settings,
            options,
            &expected,
            &mut progress,
        );
        if let Some(running) = running {
            stop(running);
        }
        rows.push(row(server, settings, &results));
    }
    Ok(rows)
}

/// Warm-up and measured rounds against the server at `addr`.
fn measure(
    client: &tokio::runtime::Runtime,
    addr: SocketAddr,
    server: &str,
    settings: &Settings,
    options: &RunOptions,
    expected: &Arc<String>,
    progress: &mut Progress,
) -> Vec<RoundResult> {
    let round = Round {
        addr,
        connections: settings.connections,
        requests: settings.requests,
        path: format!("/primes/{}", settings.n),
        expected: expected.clone(),
        rate: settings.rate,
    };
    let mut results = Vec::new();
    for run in 0..=options.repeats {
        let phase = Phase::nth(run, options.repeats);
        progress.phase(phase);
        let result = client.block_on(run_round(&round));
        progress.note(&format!(
            "primes/{server}: {phase} {:.0} req/s, {} errors",
            settings.requests as f64 / result.elapsed.as_secs_f64(),
            result.errors + result.connect_errors
        ));
        results.push(result);
    }
    results
}

/// The client runtime and the body every answer must have. Raises the
/// open-file limit first: a thousand client sockets plus a thousand server
/// ones live in one process.
fn load_generator(
    settings: &Settings,
) -> Result<(tokio::runtime::Runtime, Arc<String>), WorkloadError> {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("primes-client")
        .enable_all()
        .build()
        .map_err(|e| WorkloadError::new(e.to_string()))?;
    let expected = Arc::new(render_json(
        &PrimeCache::new().first(settings.n)[..settings.n],
    ));
    Ok((client, expected))
}

/// Loads a server that runs elsewhere (a peer) exactly as the in-process
/// ones, and names its row `label`.
pub fn run_external(
    addr: SocketAddr,
    label: &str,
    settings: &Settings,
    options: &RunOptions,
) -> Result<Row, WorkloadError> {
    let (client, expected) = load_generator(settings)?;
    let mut progress = Progress::new(EXPERIMENT, 1, options.repeats);
    progress.start_row(0, label);
    let results = measure(
        &client,
        addr,
        label,
        settings,
        options,
        &expected,
        &mut progress,
    );
    Ok(row(label, settings, &results))
}

fn row(server: &str, settings: &Settings, results: &[RoundResult]) -> Row {
    let sample = |r: &RoundResult| Sample {
        msgs: settings.requests,
        elapsed: r.elapsed,
    };
    let measurement = Measurement {
        warmup: sample(&results[0]),
        samples: results[1..].iter().map(sample).collect(),
    };
    let measured = &results[1..];
    let median = |f: &dyn Fn(&RoundResult) -> f64| {
        let values: Vec<f64> = measured.iter().map(f).collect();
        summarize(&values).map_or(f64::NAN, |s| s.median)
    };
    let ms = |us: u64| us as f64 / 1e3;
    let mut params = Map::new();
    // "url" is a server elsewhere: what runs it is not known here (a peer's
    // rows are relabelled by the peer).
    let runtime = match server {
        "actor" => "troupe",
        "url" => "external",
        _ => "baseline",
    };
    params.insert("runtime".into(), json!(runtime));
    params.insert("server".into(), json!(server));
    params.insert("connections".into(), json!(settings.connections));
    params.insert("requests".into(), json!(settings.requests));
    params.insert("n".into(), json!(settings.n));
    if server == "actor" {
        params.insert("dispatcher_threads".into(), json!(DISPATCHER_THREADS));
    }
    params.insert(
        "mode".into(),
        json!(if settings.rate.is_some() {
            "open-loop"
        } else {
            "closed-loop"
        }),
    );
    if let Some(rate) = settings.rate {
        params.insert("offered_rps".into(), json!(rate));
    }
    let errors: u64 = measured.iter().map(|r| r.errors + r.connect_errors).sum();
    params.insert("errors".into(), json!(errors));
    params.insert(
        "rps".into(),
        json!(median(
            &|r| settings.requests as f64 / r.elapsed.as_secs_f64()
        )),
    );
    params.insert("min_ms".into(), json!(median(&|r| ms(r.latency_us.min()))));
    params.insert(
        "mean_ms".into(),
        json!(median(&|r| r.latency_us.mean() / 1e3)),
    );
    for (key, q) in [("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99)] {
        params.insert(
            key.into(),
            json!(median(&|r| ms(r.latency_us.value_at_quantile(q)))),
        );
    }
    params.insert("max_ms".into(), json!(median(&|r| ms(r.latency_us.max()))));
    Row::new(EXPERIMENT, server, params, &measurement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_load_against_each_server_has_no_errors() {
        let settings = Settings {
            connections: 8,
            requests: 200,
            n: 20,
            rate: None,
            url: None,
        };
        let options = RunOptions {
            repeats: 1,
            filter: None,
        };
        let rows = run(&settings, &options).unwrap();
        assert_eq!(rows.len(), 3);
        for row in &rows {
            assert_eq!(row.params["errors"], 0, "{}", row.variant);
            assert_eq!(row.msgs, 200);
        }
    }
}

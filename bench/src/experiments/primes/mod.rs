//! The primes REST experiment (see docs/experiments.md, primes): the load
//! generator against the actor-backed server, the plain axum handler and
//! the blocking thread-pool server, each started in this process by
//! `primes::server` (or a server elsewhere with `--url`). Warm-up rounds
//! until the run-to-run change settles, then the measured rounds; every response is counted and
//! checked. Only correct answers count as served: a row's requests/s and
//! ns per request are over them alone, and a row with any failed request
//! is a failed row.

mod experiment;
pub mod loadgen;
pub mod peer;

pub use experiment::Primes;

use std::net::SocketAddr;
use std::sync::Arc;

use primes::server::{Config, Kind, Server};
use primes::sieve::{render_json, PrimeCache};
use serde_json::{json, Map};

use crate::progress::Phase;
use crate::progress::Progress;
use crate::report::Row;
use crate::runner::{summarize, Measurement, RunOptions, Sample, Scale, WorkloadError};
use crate::warmup::Phases;
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

const MAX_N: usize = 100_000;

/// One server as the benchmark runs it: its row's name, its kind and its
/// threads.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The row's variant.
    pub label: &'static str,
    /// Which server.
    pub kind: Kind,
    /// tokio worker threads of an async server's HTTP runtime (the
    /// blocking server ignores it: its pool is its own).
    pub http_threads: usize,
    /// Dispatcher threads of the actor-backed server.
    pub dispatcher_threads: usize,
}

impl Setup {
    /// Every thread that serves requests: the HTTP runtime's and the
    /// dispatcher's for the actor server, the HTTP runtime's for the plain
    /// one, the pool for the blocking one. Rows are paired on this count.
    pub fn threads(&self) -> usize {
        match self.kind {
            Kind::Actor => self.http_threads + self.dispatcher_threads,
            Kind::Plain => self.http_threads,
            Kind::Blocking => primes::server::DEFAULT_BLOCKING_THREADS,
        }
    }
}

/// The servers the experiment runs. `actor`: one HTTP thread per core of
/// the 2-core machine the published figures come from, and one dispatcher
/// thread (a second spinning dispatcher thread takes CPU from the HTTP
/// runtime: 40 K req/s with two, 52-63 K with one). `actor-http1`: one HTTP
/// thread and one dispatcher thread, two threads in all, as many as the
/// Pekko server's pool, so that the two are compared on equal threads.
/// `actor-tokio`: two HTTP threads and no dispatcher threads: the prime
/// workers run as tasks on the HTTP runtime (troupe's tokio dispatcher), as
/// many threads as the plain server, with no hand-off between threads.
pub const SETUPS: [Setup; 5] = [
    Setup {
        label: "actor",
        kind: Kind::Actor,
        http_threads: 2,
        dispatcher_threads: 1,
    },
    Setup {
        label: "actor-http1",
        kind: Kind::Actor,
        http_threads: 1,
        dispatcher_threads: 1,
    },
    Setup {
        label: "actor-tokio",
        kind: Kind::Actor,
        http_threads: 2,
        dispatcher_threads: 0,
    },
    Setup {
        label: "plain",
        kind: Kind::Plain,
        http_threads: 2,
        dispatcher_threads: 0,
    },
    Setup {
        label: "blocking",
        kind: Kind::Blocking,
        http_threads: 0,
        dispatcher_threads: 0,
    },
];

/// Starts a `kind` server on a free local port as the benchmark's first
/// setup of that kind runs it.
pub(crate) fn start(kind: Kind) -> Result<Server, WorkloadError> {
    let setup = SETUPS
        .iter()
        .find(|s| s.kind == kind)
        .expect("every kind has a setup");
    start_setup(setup)
}

/// Starts the server of `setup` on a free local port, n up to 100,000.
fn start_setup(setup: &Setup) -> Result<Server, WorkloadError> {
    let kind = setup.kind;
    let mut config = Config::new(kind).max_n(MAX_N);
    if kind != Kind::Blocking {
        config = config.http_threads(Some(setup.http_threads));
    }
    if kind == Kind::Actor {
        config = config.dispatcher_threads(setup.dispatcher_threads);
    }
    Server::start("127.0.0.1:0".parse().expect("valid"), &config)
        .map_err(|e| WorkloadError::new(format!("{} server: {e}", kind.name())))
}

/// Stops a server started by [`start`]; its error, if any, as a workload
/// error.
pub(crate) fn stop(server: Server) -> Result<(), WorkloadError> {
    let kind = server.kind();
    server
        .stop()
        .map_err(|e| WorkloadError::new(format!("{} server: {e}", kind.name())))
}

/// Runs the servers (or `--url`) and returns one row each.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let load = Load::new(settings)?;
    // `None`: the server at `--url`.
    let servers: Vec<Option<Setup>> = match settings.url {
        Some(_) => vec![None],
        None => SETUPS.into_iter().map(Some).collect(),
    };
    let name = |server: &Option<Setup>| server.map_or("url", |s| s.label);
    let servers: Vec<Option<Setup>> = servers
        .into_iter()
        .filter(|server| {
            options
                .filter
                .as_deref()
                .is_none_or(|f| name(server).contains(f))
        })
        .collect();
    let mut progress = Progress::new(EXPERIMENT, servers.len(), options.repeats);
    let mut rows = Vec::new();
    for (index, server) in servers.into_iter().enumerate() {
        let label = name(&server);
        progress.start_row(index, label);
        let (addr, running) = match (server, settings.url) {
            (None, Some(url)) => (url, None),
            (None, None) => unreachable!("a server elsewhere only with --url"),
            (Some(setup), _) => {
                let running = start_setup(&setup).inspect_err(|_| progress.finish())?;
                (running.addr(), Some(running))
            }
        };
        let results = load.measure(addr, label, settings, options, &mut progress);
        if let Some(running) = running {
            stop(running).inspect_err(|_| progress.finish())?;
        }
        rows.push(row(label, server.as_ref(), settings, &results.0, results.1));
    }
    Ok(rows)
}

/// The load generator: the client runtime and the body every answer must
/// have.
struct Load {
    client: tokio::runtime::Runtime,
    expected: Arc<String>,
}

impl Load {
    /// Raises the open-file limit first: a thousand client sockets plus a
    /// thousand server ones live in one process.
    fn new(settings: &Settings) -> Result<Self, WorkloadError> {
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
        Ok(Load { client, expected })
    }

    /// Warm-up rounds until the [`WarmUp`](crate::warmup::WarmUp) rule is met, then the measured
    /// rounds, against the server at `addr`: every round in order, and the ns
    /// per correct answer of the warm-up rounds (the first ones).
    fn measure(
        &self,
        addr: SocketAddr,
        server: &str,
        settings: &Settings,
        options: &RunOptions,
        progress: &mut Progress,
    ) -> (Vec<RoundResult>, Vec<f64>) {
        let round = Round {
            addr,
            connections: settings.connections,
            requests: settings.requests,
            path: format!("/primes/{}", settings.n),
            expected: self.expected.clone(),
            rate: settings.rate,
        };
        let mut results = Vec::new();
        let mut phases = Phases::new(options.repeats);
        while let Some(phase) = phases.next_phase() {
            progress.phase(phase);
            let result = self.client.block_on(run_round(&round));
            progress.note(&format!(
                "primes/{server}: {phase} {:.0} req/s, {} errors",
                result.ok as f64 / result.elapsed.as_secs_f64(),
                result.errors + result.connect_errors
            ));
            if phase == Phase::WarmUp {
                phases.warmed(result.elapsed.as_nanos() as f64 / result.ok.max(1) as f64);
            }
            results.push(result);
        }
        (results, phases.into_warmups_ns())
    }
}

/// Loads a server that runs elsewhere (a peer) exactly as the in-process
/// ones, and names its row `label`.
pub fn run_external(
    addr: SocketAddr,
    label: &str,
    settings: &Settings,
    options: &RunOptions,
) -> Result<Row, WorkloadError> {
    let load = Load::new(settings)?;
    let mut progress = Progress::new(EXPERIMENT, 1, options.repeats);
    progress.start_row(0, label);
    let results = load.measure(addr, label, settings, options, &mut progress);
    Ok(row(label, None, settings, &results.0, results.1))
}

/// The row of one server from its rounds: the first `warmups_ns.len()` are
/// the warm-up.
fn row(
    server: &str,
    setup: Option<&Setup>,
    settings: &Settings,
    results: &[RoundResult],
    warmups_ns: Vec<f64>,
) -> Row {
    // Only correct answers are served requests. A round with none counts
    // as one, so that its ns per request stays a finite (and dismal)
    // figure; its row is failed anyway.
    let sample = |r: &RoundResult| Sample {
        msgs: r.ok.max(1),
        elapsed: r.elapsed,
    };
    let w = warmups_ns.len();
    let measurement = Measurement {
        warmup: sample(&results[w - 1]),
        warmups_ns,
        samples: results[w..].iter().map(sample).collect(),
        costs: Vec::new(),
    };
    let measured = &results[w..];
    let median = |f: &dyn Fn(&RoundResult) -> f64| {
        let values: Vec<f64> = measured.iter().map(f).collect();
        summarize(&values).map_or(f64::NAN, |s| s.median)
    };
    let ms = |us: u64| us as f64 / 1e3;
    let mut params = Map::new();
    // "url" is a server elsewhere: what runs it is not known here (a peer's
    // rows are relabelled by the peer).
    let runtime = match setup.map(|s| s.kind) {
        Some(Kind::Actor) => "troupe",
        Some(_) => "baseline",
        None => "external",
    };
    params.insert("runtime".into(), json!(runtime));
    params.insert("server".into(), json!(server));
    params.insert("connections".into(), json!(settings.connections));
    params.insert("requests".into(), json!(settings.requests));
    params.insert("n".into(), json!(settings.n));
    // `threads` (what rows are paired on) counts every thread that serves
    // requests; the parts are recorded beside it for the reader.
    if let Some(setup) = setup {
        params.insert("threads".into(), json!(setup.threads()));
        match setup.kind {
            Kind::Actor => {
                params.insert("http_threads".into(), json!(setup.http_threads));
                params.insert("dispatcher_threads".into(), json!(setup.dispatcher_threads));
            }
            Kind::Plain => {
                params.insert("http_threads".into(), json!(setup.http_threads));
            }
            Kind::Blocking => {
                params.insert("pool_threads".into(), json!(setup.threads()));
            }
        }
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
    let failed = |r: &RoundResult| r.errors + r.connect_errors;
    let errors: u64 = measured.iter().map(failed).sum();
    let warmup_errors: u64 = results[..w].iter().map(failed).sum();
    params.insert("errors".into(), json!(errors));
    params.insert("warmup_errors".into(), json!(warmup_errors));
    params.insert(
        "rps".into(),
        json!(median(&|r| r.ok as f64 / r.elapsed.as_secs_f64())),
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
    let mut row = Row::new(EXPERIMENT, server, params, &measurement);
    if errors + warmup_errors > 0 {
        row.failure = Some(format!(
            "{errors} of {} measured requests failed ({warmup_errors} in the warm-up): \
             wrong status or body, or a connection error",
            settings.requests * measured.len() as u64
        ));
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_load() -> (Settings, RunOptions) {
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
        (settings, options)
    }

    #[test]
    fn a_small_load_against_each_server_has_no_errors() {
        let _machine = crate::runner::tests::one_experiment_at_a_time();
        let (settings, options) = small_load();
        let rows = run(&settings, &options).unwrap();
        assert_eq!(rows.len(), SETUPS.len());
        for row in &rows {
            assert_eq!(row.params["errors"], 0, "{}", row.variant);
            assert_eq!(row.failure, None, "{}", row.variant);
            assert_eq!(row.msgs, 200);
        }
    }

    #[test]
    fn a_server_that_answers_with_errors_makes_a_failed_row_that_served_nothing() {
        let (settings, options) = small_load();
        // A real server that refuses the n asked for: every answer is a 400.
        let config = Config::new(Kind::Plain).max_n(settings.n - 1);
        let server = Server::start("127.0.0.1:0".parse().unwrap(), &config).unwrap();
        let row = run_external(server.addr(), "refusing", &settings, &options).unwrap();
        server.stop().unwrap();
        assert_eq!(row.params["errors"], 200);
        // Every warm-up round (at least the rule's three) failed too.
        let warmup_errors = row.params["warmup_errors"].as_u64().unwrap();
        assert!(
            warmup_errors >= 600 && warmup_errors.is_multiple_of(200),
            "{warmup_errors}"
        );
        assert_eq!(row.params["rps"], 0.0, "refusals are not served requests");
        let failure = row.failure.expect("a failed row");
        assert!(
            failure.starts_with("200 of 200 measured requests failed"),
            "{failure}"
        );
    }
}

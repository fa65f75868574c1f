//! The remote experiment (docs/experiments.md, remote): two processes
//! through one local nats-server, three workloads, three transports.
//!
//! Workloads: round trips with 1 in flight (latency percentiles of every
//! round trip of the measured runs, and round trips per second), round
//! trips with 64 in flight (round trips per second), and a one-way stream
//! of small messages (messages received per second; the receiver checks
//! that every one arrived exactly once and in order, and a flow-control
//! window keeps the sender from outrunning it).
//!
//! Transports: `troupe` (troupe-remote: a published echo actor, asks and
//! tells), `sharded` (the echo is an entity of a troupe-cluster shard
//! region in the echo process, reached through a proxy region: what
//! sharding adds to a remote message), `nats` (raw async-nats between the same two processes, no
//! actors: the transport's own limit) and `pekko` (Apache Pekko remoting,
//! Artery over TCP, two JVMs; `peer.rs`). The bench process drives
//! (`drive.rs`); the echo process is this binary's hidden `remote-echo`
//! subcommand (`echo.rs`).

mod drive;
mod echo;
mod experiment;
pub mod peer;
mod protocol;

pub use echo::serve as serve_echo;
pub use experiment::Remote;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;
use troupe_remote::launcher::NatsServer;

use crate::report::Row;
use crate::runner::{RunOptions, Scale, Stopwatch, Workload, WorkloadError};
use crate::shared::run_experiment;
use drive::{Driver, Window};
use echo::EchoProcess;
use protocol::StreamCheck;

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "remote";

/// Threads each process gives the work, for every transport (see
/// `echo.rs`); what rows are paired on.
pub const THREADS: u64 = 2;

/// How the two processes talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// troupe-remote.
    Troupe,
    /// troupe-cluster's sharding on troupe-remote: the echo is an entity
    /// of a region in the echo process, reached through a proxy region.
    Sharded,
    /// Raw async-nats, no actors.
    Nats,
}

impl Transport {
    /// Its name on the command line and in variants.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Troupe => "troupe",
            Transport::Sharded => "sharded",
            Transport::Nats => "nats",
        }
    }

    /// The transport called `name`.
    pub fn parse(name: &str) -> Option<Transport> {
        [Transport::Troupe, Transport::Sharded, Transport::Nats]
            .into_iter()
            .find(|t| t.name() == name)
    }

    /// The bench process's runtime: the same two threads as the echo's.
    fn runtime(self) -> std::io::Result<tokio::runtime::Runtime> {
        let workers = match self {
            // Plus the actor system's one dispatcher thread.
            Transport::Troupe | Transport::Sharded => 1,
            Transport::Nats => 2,
        };
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
}

/// One workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Request-reply round trips with this many outstanding.
    RoundTrips(usize),
    /// A one-way stream.
    Stream,
}

impl Shape {
    /// `rtt-1`, `rtt-64`, `stream`.
    pub fn name(self) -> String {
        match self {
            Shape::RoundTrips(n) => format!("rtt-{n}"),
            Shape::Stream => "stream".into(),
        }
    }

    /// The `workload` parameter of its rows.
    pub fn workload(self) -> &'static str {
        match self {
            Shape::RoundTrips(_) => "round-trips",
            Shape::Stream => "stream",
        }
    }

    /// The `in_flight` parameter of its rows (a stream's is its window).
    pub fn in_flight(self, window: Window) -> u64 {
        match self {
            Shape::RoundTrips(n) => n as u64,
            Shape::Stream => window.every * window.marks as u64,
        }
    }
}

/// The workloads, in the order they run.
pub const SHAPES: [Shape; 3] = [Shape::RoundTrips(1), Shape::RoundTrips(64), Shape::Stream];

/// Sizes of a run.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Round trips per run with 1 in flight.
    pub rtt_1: u64,
    /// Round trips per run with 64 in flight.
    pub rtt_64: u64,
    /// Messages per run of the stream.
    pub stream: u64,
    /// Payload bytes of every message.
    pub size: usize,
    /// The stream's flow control.
    pub window: Window,
    /// Part of `all`: a missing nats-server skips the experiment.
    pub in_all: bool,
}

impl Settings {
    /// The sizes for a scale.
    pub fn for_scale(scale: Scale, in_all: bool) -> Settings {
        let (rtt_1, rtt_64, stream) = match scale {
            Scale::Quick => (2_000, 12_800, 100_000),
            Scale::Default => (20_000, 192_000, 1_000_000),
            Scale::Full => (100_000, 960_000, 5_000_000),
        };
        Settings {
            rtt_1,
            rtt_64,
            stream,
            size: 100,
            window: Window {
                every: 1_000,
                marks: 8,
            },
            in_all,
        }
    }

    fn msgs(&self, shape: Shape) -> u64 {
        match shape {
            Shape::RoundTrips(1) => self.rtt_1,
            Shape::RoundTrips(_) => self.rtt_64,
            Shape::Stream => self.stream,
        }
    }
}

/// Every round trip's time (ns) of every run of a row, in run order.
type Latencies = Rc<RefCell<Vec<Vec<u64>>>>;

/// Runs the troupe and raw-NATS rows through one nats-server.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let server = match crate::nats::binary().and_then(|b| NatsServer::launch(&b, &[])) {
        Ok(server) => server,
        Err(why) if settings.in_all => {
            eprintln!("remote: skipped, no nats-server could be started: {why}");
            return Ok(Vec::new());
        }
        Err(why) => return Err(WorkloadError::new(format!("no nats-server: {why}"))),
    };
    let mut workloads = Vec::new();
    let mut latencies: Vec<(String, Latencies)> = Vec::new();
    for transport in [Transport::Troupe, Transport::Sharded, Transport::Nats] {
        for shape in SHAPES {
            let times = Latencies::default();
            let variant = format!("{}-{}", transport.name(), shape.name());
            latencies.push((variant.clone(), times.clone()));
            workloads.push(workload(transport, shape, settings, &server.url(), times));
        }
    }
    let mut rows = run_experiment(EXPERIMENT, workloads, options)?;
    for row in &mut rows {
        let Some((_, times)) = latencies.iter().find(|(v, _)| *v == row.variant) else {
            continue;
        };
        // The measured runs are the last `repeats` (the warm-up came first).
        let runs = times.borrow();
        let measured = &runs[runs.len().saturating_sub(row.repeats)..];
        let mut all: Vec<u64> = measured.iter().flatten().copied().collect();
        all.sort_unstable();
        if let (Some(p50), Some(p99)) = (percentile(&all, 0.50), percentile(&all, 0.99)) {
            row.params.insert("rtt_p50_us".into(), json!(p50 as f64 / 1e3));
            row.params.insert("rtt_p99_us".into(), json!(p99 as f64 / 1e3));
        }
    }
    drop(server);
    Ok(rows)
}

/// The value at `q` of sorted `values` (nearest rank).
fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    let last = sorted.len().checked_sub(1)?;
    sorted.get(((last as f64) * q).round() as usize).copied()
}

/// The bench side of a session: its runtime, its connection, the echo
/// process; dropping it leaves cleanly.
struct Session {
    runtime: tokio::runtime::Runtime,
    driver: Option<Driver>,
    _echo: EchoProcess,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            self.runtime.block_on(driver.close());
        }
    }
}

fn workload(
    transport: Transport,
    shape: Shape,
    settings: &Settings,
    url: &str,
    latencies: Latencies,
) -> Workload {
    let settings = *settings;
    let url = url.to_string();
    let variant = format!("{}-{}", transport.name(), shape.name());
    let n = settings.msgs(shape);
    Workload::with_setup(variant, move || {
        let echo = EchoProcess::start(transport, &url)?;
        let runtime = transport
            .runtime()
            .map_err(|e| WorkloadError::new(format!("tokio: {e}")))?;
        let driver = runtime.block_on(Driver::connect(transport, &url))?;
        let mut session = Session {
            runtime,
            driver: Some(driver),
            _echo: echo,
        };
        let payload = vec![0x5a; settings.size];
        Ok(move || {
            let Session {
                runtime, driver, ..
            } = &mut session;
            let driver = driver.as_mut().expect("open until dropped");
            match shape {
                Shape::RoundTrips(in_flight) => {
                    let mut times = Vec::with_capacity(n as usize);
                    let clock = Stopwatch::start();
                    runtime.block_on(driver.round_trips(n, in_flight, &payload, &mut times))?;
                    let sample = clock.stop(n);
                    latencies.borrow_mut().push(times);
                    Ok(sample)
                }
                Shape::Stream => {
                    let clock = Stopwatch::start();
                    let seen = runtime.block_on(driver.stream(n, &payload, settings.window))?;
                    let sample = clock.stop(n);
                    match StreamCheck::verdict(seen, n) {
                        None => Ok(sample),
                        Some(why) => Err(WorkloadError::new(format!(
                            "{why}; dead letters on the sending node: {}",
                            driver.dead_letters()
                        ))),
                    }
                }
            }
        })
    })
    .param(
        "runtime",
        match transport {
            Transport::Troupe => "troupe",
            // Not paired with the baseline or Pekko (pairing.rs knows
            // troupe, baseline, pekko): its own line compares it with the
            // plain troupe row of the same workload.
            Transport::Sharded => "troupe-sharded",
            Transport::Nats => "baseline",
        },
    )
    .param("transport", transport.name())
    .param("workload", shape.workload())
    .param("in_flight", shape.in_flight(settings.window))
    .param("size", settings.size as u64)
    .param("threads", THREADS)
}

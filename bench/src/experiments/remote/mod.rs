//! The remote experiment (docs/experiments.md, remote): two processes
//! through one local nats-server, three workloads, three transports.
//!
//! Workloads: round trips with 1 in flight (latency percentiles of every
//! round trip of the measured runs, and round trips per second), round
//! trips with 64 in flight (round trips per second), and a one-way stream
//! (messages received per second; the receiver checks that every one
//! arrived exactly once and in order, and a flow-control window keeps the
//! sender from outrunning it). Each at 100-byte payloads (`--size`), and
//! the last two again at 1 KiB and 16 KiB (rows `-1k`, `-16k`: fewer
//! messages a run, and the stream's window capped at 8 MiB in flight).
//!
//! Transports: `troupe` (troupe-remote: a published echo actor, asks and
//! tells), `sharded` (the echo is an entity of a troupe-cluster shard
//! region in the echo process, reached through a proxy region: what
//! sharding adds to a remote message), `nats` (raw async-nats between the same two processes, no
//! actors: the transport's own limit), `pekko` (Apache Pekko remoting,
//! Artery over TCP, two JVMs; `peer.rs`) and `ractor_cluster` (ractor's
//! TCP remoting, two processes, round trips only; `rust_peers.rs`). The bench process drives
//! (`drive.rs`); the echo process is this binary's hidden `remote-echo`
//! subcommand (`echo.rs`).

mod clients;
mod drive;
mod echo;
mod experiment;
pub mod peer;
mod protocol;
mod rust_peers;

pub use clients::serve as serve_client;
pub use echo::serve as serve_echo;
pub use experiment::Remote;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;
use troupe_remote::launcher::NatsServer;
use troupe_remote::BatchStats;

use crate::report::Row;
use crate::runner::{RunOptions, Scale, Stopwatch, Workload, WorkloadError};
use crate::shared::run_experiment;
use clients::ClientProcess;
use drive::{Batches, Driver, Window};
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

/// One row's workload: a shape at a payload size, from one or more
/// client processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// Round trips or the stream.
    pub shape: Shape,
    /// Payload bytes of every message; `None`: the run's `--size` (100 by
    /// default).
    pub size: Option<usize>,
    /// Client processes driving the echo at once: the bench process, and
    /// the others started for the row (`clients.rs`).
    pub clients: usize,
}

impl Point {
    const fn new(shape: Shape, size: Option<usize>, clients: usize) -> Point {
        Point {
            shape,
            size,
            clients,
        }
    }

    /// `rtt-64`, `stream-16k` for a point of its own size, `rtt-64-3c`
    /// for one of three clients.
    pub fn name(self) -> String {
        let mut name = self.shape.name();
        match self.size {
            None => {}
            Some(bytes) if bytes % 1024 == 0 => name += &format!("-{}k", bytes / 1024),
            Some(bytes) => name += &format!("-{bytes}b"),
        }
        if self.clients > 1 {
            name += &format!("-{}c", self.clients);
        }
        name
    }

    /// Whether the point is one of the run's own size from one client:
    /// what the sharded transport and Pekko's one-client peer run.
    pub fn is_basic(self) -> bool {
        self.size.is_none() && self.clients == 1
    }
}

/// The workloads, in the order they run: the three at the run's size;
/// 64 round trips in flight from each of three client processes; then 64
/// round trips in flight and the stream at 1 KiB and at 16 KiB, so the
/// figures are not only for tiny messages and one pair of processes.
pub const POINTS: [Point; 8] = [
    Point::new(Shape::RoundTrips(1), None, 1),
    Point::new(Shape::RoundTrips(64), None, 1),
    Point::new(Shape::Stream, None, 1),
    Point::new(Shape::RoundTrips(64), None, 3),
    Point::new(Shape::RoundTrips(64), Some(1024), 1),
    Point::new(Shape::Stream, Some(1024), 1),
    Point::new(Shape::RoundTrips(64), Some(16 * 1024), 1),
    Point::new(Shape::Stream, Some(16 * 1024), 1),
];

/// Sizes of a run.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Round trips per run with 1 in flight.
    pub rtt_1: u64,
    /// Round trips per run with 64 in flight.
    pub rtt_64: u64,
    /// Messages per run of the stream.
    pub stream: u64,
    /// Payload bytes of every message of the points without a size.
    pub size: usize,
    /// The stream's flow control at that size.
    pub window: Window,
    /// Part of `all`: a missing nats-server skips the experiment.
    pub in_all: bool,
}

/// Bytes a stream keeps in flight at most when its messages are large:
/// well under the server's slow-consumer limit (64 MiB pending a client).
const STREAM_BYTES_IN_FLIGHT: usize = 8 << 20;

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

    /// The payload bytes of `point`.
    pub fn size_of(&self, point: Point) -> usize {
        point.size.unwrap_or(self.size)
    }

    /// Messages (or round trips) per run of `point`: fewer for larger
    /// payloads, about as many bytes as at the run's size, but at least a
    /// twentieth of the count.
    fn msgs(&self, point: Point) -> u64 {
        let base = match point.shape {
            Shape::RoundTrips(1) => self.rtt_1,
            Shape::RoundTrips(_) => self.rtt_64,
            Shape::Stream => self.stream,
        };
        let bytes = self.size_of(point);
        if bytes <= self.size {
            return base;
        }
        (base * self.size as u64 / bytes as u64).max(base / 20)
    }

    /// The stream's flow control for `point`: marks as far apart as at the
    /// run's size, but no more than [`STREAM_BYTES_IN_FLIGHT`] in flight.
    fn window(&self, point: Point) -> Window {
        let per_mark = STREAM_BYTES_IN_FLIGHT / self.window.marks.max(1);
        let every = (self.window.every as usize).min(per_mark / self.size_of(point).max(1));
        Window {
            every: every.max(1) as u64,
            marks: self.window.marks,
        }
    }
}

/// Every round trip's time (ns) of every run of a row, in run order.
type Latencies = Rc<RefCell<Vec<Vec<u64>>>>;

/// The troupe nodes' batches of every run of a row, in run order.
type BatchLog = Rc<RefCell<Vec<Batches>>>;

/// What the rows show of a batch distribution: frames per NATS message,
/// mean and the bucket (a power of two) of its median and 90th
/// percentile.
fn describe(stats: &BatchStats) -> String {
    format!(
        "{:.1} (p50 {}, p90 {})",
        stats.mean(),
        stats.percentile(0.5),
        stats.percentile(0.9)
    )
}

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
    let mut latencies: Vec<(String, Latencies, BatchLog)> = Vec::new();
    for transport in [Transport::Troupe, Transport::Sharded, Transport::Nats] {
        for point in POINTS {
            // What routing through shards adds does not depend on the
            // payload: the sharded rows are the basic ones only.
            if transport == Transport::Sharded && !point.is_basic() {
                continue;
            }
            let (times, batches) = (Latencies::default(), BatchLog::default());
            let variant = format!("{}-{}", transport.name(), point.name());
            latencies.push((variant.clone(), times.clone(), batches.clone()));
            let logs = (times, batches);
            workloads.push(workload(transport, point, settings, &server.url(), logs));
        }
    }
    let mut rows = run_experiment(EXPERIMENT, workloads, options)?;
    for row in &mut rows {
        let Some((_, times, batches)) = latencies.iter().find(|(v, ..)| *v == row.variant) else {
            continue;
        };
        let logged = batches.borrow();
        if logged.len() >= row.repeats && row.repeats > 0 {
            let mut measured = Batches::default();
            for run in &logged[logged.len() - row.repeats..] {
                measured.add(run);
            }
            row.params
                .insert("batch_sent".into(), json!(describe(&measured.sent)));
            row.params
                .insert("batch_answers".into(), json!(describe(&measured.answers)));
        }
        // The measured runs are the last `repeats` (the warm-up came first).
        let runs = times.borrow();
        let measured = &runs[runs.len().saturating_sub(row.repeats)..];
        let mut all: Vec<u64> = measured.iter().flatten().copied().collect();
        all.sort_unstable();
        if let (Some(p50), Some(p99)) = (percentile(&all, 0.50), percentile(&all, 0.99)) {
            row.params
                .insert("rtt_p50_us".into(), json!(p50 as f64 / 1e3));
            row.params
                .insert("rtt_p99_us".into(), json!(p99 as f64 / 1e3));
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

/// The bench side of a session: its runtime, its connection, the other
/// client processes, the echo process; dropping it leaves cleanly.
struct Session {
    runtime: tokio::runtime::Runtime,
    driver: Option<Driver>,
    others: Vec<ClientProcess>,
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
    point: Point,
    settings: &Settings,
    url: &str,
    (latencies, batch_log): (Latencies, BatchLog),
) -> Workload {
    let settings = *settings;
    let url = url.to_string();
    let variant = format!("{}-{}", transport.name(), point.name());
    let n = settings.msgs(point);
    let size = settings.size_of(point);
    let window = settings.window(point);
    let shape = point.shape;
    Workload::with_setup(variant, move || {
        let echo = EchoProcess::start(transport, &url)?;
        let runtime = transport
            .runtime()
            .map_err(|e| WorkloadError::new(format!("tokio: {e}")))?;
        let driver = runtime.block_on(Driver::connect(transport, &url, "bench-driver"))?;
        let others = (2..=point.clients)
            .map(|i| ClientProcess::start(transport, &url, &format!("bench-driver-{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut session = Session {
            runtime,
            driver: Some(driver),
            others,
            _echo: echo,
        };
        let payload = vec![0x5a; size];
        Ok(move || {
            let Session {
                runtime,
                driver,
                others,
                ..
            } = &mut session;
            let driver = driver.as_mut().expect("open until dropped");
            let before = runtime.block_on(driver.batches())?;
            let sample = match shape {
                Shape::RoundTrips(in_flight) => {
                    // Each client its share; the run ends when all are done.
                    let each = n / point.clients as u64;
                    let mut times = Vec::with_capacity(each as usize);
                    let clock = Stopwatch::start();
                    for other in others.iter_mut() {
                        other.go(each, in_flight, size)?;
                    }
                    runtime.block_on(driver.round_trips(each, in_flight, &payload, &mut times))?;
                    for other in others.iter_mut() {
                        other.done()?;
                    }
                    let sample = clock.stop(each * point.clients as u64);
                    latencies.borrow_mut().push(times);
                    sample
                }
                Shape::Stream => {
                    let clock = Stopwatch::start();
                    let seen = runtime.block_on(driver.stream(n, &payload, window))?;
                    let sample = clock.stop(n);
                    if let Some(why) = StreamCheck::verdict(seen, n) {
                        return Err(WorkloadError::new(format!(
                            "{why}; dead letters on the sending node: {}",
                            driver.dead_letters()
                        )));
                    }
                    sample
                }
            };
            // Each window also holds the ask for the echo's statistics and
            // its answer: one frame each side, against thousands.
            let after = runtime.block_on(driver.batches())?;
            if let (Some(before), Some(after)) = (before, after) {
                batch_log.borrow_mut().push(after.since(&before));
            }
            Ok(sample)
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
    .param("in_flight", shape.in_flight(window))
    .param("size", size as u64)
    .param("clients", point.clients as u64)
    .param("threads", THREADS)
}

//! The service's request metrics, and `GET /metrics`: the Prometheus text
//! of the process, rendered by `metrics-exporter-prometheus` from the
//! `metrics` facade. It holds this module's request metrics and, when the
//! runtime is built with its `metrics` feature (this crate's default
//! feature `runtime-metrics`), the actor runtime's own (`troupe_*`, see
//! docs/operations.md).
//!
//! The exporter is installed as the process's recorder the first time a
//! server starts (or `Metrics` is made): in one process every server shares
//! it, so `/metrics` is the process's view, as a scraper expects. Each
//! `Metrics` also keeps its own counts, for the server's API and its tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, histogram, Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Upper bounds of the request latency buckets, in seconds.
const REQUEST_BUCKETS: [f64; 8] = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0];
/// Upper bounds of the runtime's handler-time buckets, in seconds.
const HANDLER_BUCKETS: [f64; 8] = [1e-6, 1e-5, 1e-4, 0.001, 0.01, 0.1, 1.0, 10.0];
/// Upper bounds of the runtime's mailbox-depth buckets, in messages.
const DEPTH_BUCKETS: [f64; 8] = [0.0, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];

/// The process's exporter: installed once, as the global recorder.
pub fn exporter() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full("primes_request_seconds".into()),
                &REQUEST_BUCKETS,
            )
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("troupe_message_seconds".into()),
                    &HANDLER_BUCKETS,
                )
            })
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("troupe_mailbox_depth".into()),
                    &DEPTH_BUCKETS,
                )
            })
            .expect("the bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!(
                "another metrics recorder is installed: /metrics shows only what reaches this one"
            );
        }
        start_upkeep(handle.clone(), UPKEEP_EVERY);
        handle
    })
}

/// How often the exporter's histograms are folded into their buckets
/// without a scrape.
const UPKEEP_EVERY: Duration = Duration::from_secs(1);
/// The upkeep thread's name (15 bytes at most: what Linux keeps of it).
const UPKEEP_THREAD: &str = "primes-upkeep";

/// Folds the recorder's histogram samples into their buckets every
/// `every`, on a thread of its own, for as long as the process lives.
///
/// The exporter keeps each histogram sample until a render or an upkeep
/// folds it in. Without this, a server nobody scrapes grew by 16 bytes for
/// every sample for ever: with the runtime's metrics on, two samples per
/// actor message, gigabytes within minutes of load. One process once hit
/// it that way after its primes servers had stopped: the recorder outlives
/// them, and every later actor message still added samples.
fn start_upkeep(handle: PrometheusHandle, every: Duration) {
    let started = std::thread::Builder::new()
        .name(UPKEEP_THREAD.into())
        .spawn(move || loop {
            std::thread::sleep(every);
            handle.run_upkeep();
        });
    match started {
        Ok(thread) => {
            let _ = UPKEEP.set(thread);
        }
        Err(e) => tracing::warn!("no metrics upkeep thread ({e}): histograms grow until scraped"),
    }
}

/// The upkeep thread, once the exporter has started it.
static UPKEEP: OnceLock<std::thread::JoinHandle<()>> = OnceLock::new();

/// The Prometheus text exposition of the process (`GET /metrics`).
pub fn render() -> String {
    exporter().render()
}

/// Request metrics of one server: the process's series, and this server's
/// own counts.
#[derive(Debug)]
pub struct Metrics {
    requests: AtomicU64,
    header_read_timeouts: AtomicU64,
    idle_timeouts: AtomicU64,
    series: Series,
}

/// Handles of the facade series, looked up once.
#[derive(Debug)]
struct Series {
    requests: Counter,
    client_errors: Counter,
    server_errors: Counter,
    seconds: Histogram,
    header_read_timeouts: Counter,
    idle_timeouts: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        exporter();
        let cutoff =
            |kind: &'static str| counter!("primes_connections_timed_out_total", "timeout" => kind);
        Metrics {
            requests: AtomicU64::new(0),
            header_read_timeouts: AtomicU64::new(0),
            idle_timeouts: AtomicU64::new(0),
            series: Series {
                requests: counter!("primes_requests_total"),
                client_errors: counter!("primes_errors_total", "class" => "4xx"),
                server_errors: counter!("primes_errors_total", "class" => "5xx"),
                seconds: histogram!("primes_request_seconds"),
                header_read_timeouts: cutoff("header_read"),
                idle_timeouts: cutoff("idle"),
            },
        }
    }
}

/// Why the server closed a connection on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cutoff {
    /// A request head took too long.
    HeaderRead,
    /// No request (or no progress on a response) for too long.
    Idle,
}

impl Metrics {
    /// Records one answered request.
    pub fn record(&self, status: u16, latency: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.series.requests.increment(1);
        match status {
            400..=499 => self.series.client_errors.increment(1),
            500..=599 => self.series.server_errors.increment(1),
            _ => {}
        }
        self.series.seconds.record(latency.as_secs_f64());
    }

    /// Records a connection closed by one of the async servers' timeouts.
    pub fn record_cutoff(&self, cutoff: Cutoff) {
        let (own, series) = match cutoff {
            Cutoff::HeaderRead => (
                &self.header_read_timeouts,
                &self.series.header_read_timeouts,
            ),
            Cutoff::Idle => (&self.idle_timeouts, &self.series.idle_timeouts),
        };
        own.fetch_add(1, Ordering::Relaxed);
        series.increment(1);
    }

    /// Connections this server closed so far for `cutoff`.
    pub fn cutoffs(&self, cutoff: Cutoff) -> u64 {
        match cutoff {
            Cutoff::HeaderRead => self.header_read_timeouts.load(Ordering::Relaxed),
            Cutoff::Idle => self.idle_timeouts.load(Ordering::Relaxed),
        }
    }

    /// Requests this server answered so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition of the process (see [`render`]).
    pub fn render(&self) -> String {
        render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the sample `name` with `labels` in a rendering.
    fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines).expect("the exposition parses");
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => panic!("{name} is not a single value"),
            })
            .unwrap_or(0.0)
    }

    #[test]
    fn the_exporter_runs_its_upkeep_without_a_scrape() {
        exporter();
        // Started with the exporter, whichever test made it first, and
        // running for as long as the process does.
        let upkeep = UPKEEP
            .get()
            .expect("the exporter started its upkeep thread");
        assert_eq!(upkeep.thread().name(), Some(UPKEEP_THREAD));
        assert!(!upkeep.is_finished());
    }

    #[test]
    fn records_reach_the_process_exposition() {
        // The exposition is the process's: other tests add to it too, so
        // the checks are on what this test added.
        let m = Metrics::default();
        let before = render();
        m.record(200, Duration::from_micros(300));
        m.record(404, Duration::from_millis(20));
        m.record_cutoff(Cutoff::Idle);
        let after = render();
        let delta = |name, labels: &[(&str, &str)]| {
            value(&after, name, labels) - value(&before, name, labels)
        };
        assert!(delta("primes_requests_total", &[]) >= 2.0);
        assert!(delta("primes_errors_total", &[("class", "4xx")]) >= 1.0);
        assert!(delta("primes_connections_timed_out_total", &[("timeout", "idle")]) >= 1.0);
        assert!(
            after.contains("primes_request_seconds_bucket{le=\"0.0005\"}"),
            "{after}"
        );
        assert_eq!(m.requests(), 2);
        assert_eq!(m.cutoffs(Cutoff::Idle), 1);
        assert_eq!(m.cutoffs(Cutoff::HeaderRead), 0);
    }
}

//! Request counters and a latency histogram, rendered in the Prometheus
//! text format for `GET /metrics`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 8] = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0];

/// Counters shared by every request handler.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    latency_sum_us: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    header_read_timeouts: AtomicU64,
    idle_timeouts: AtomicU64,
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
        match status {
            400..=499 => self.client_errors.fetch_add(1, Ordering::Relaxed),
            500..=599 => self.server_errors.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let secs = latency.as_secs_f64();
        self.latency_sum_us
            .fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            if secs <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records a connection closed by one of the async servers' timeouts.
    pub fn record_cutoff(&self, cutoff: Cutoff) {
        let counter = match cutoff {
            Cutoff::HeaderRead => &self.header_read_timeouts,
            Cutoff::Idle => &self.idle_timeouts,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections closed so far for `cutoff`.
    pub fn cutoffs(&self, cutoff: Cutoff) -> u64 {
        match cutoff {
            Cutoff::HeaderRead => self.header_read_timeouts.load(Ordering::Relaxed),
            Cutoff::Idle => self.idle_timeouts.load(Ordering::Relaxed),
        }
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        family(
            &mut out,
            "primes_requests_total",
            "counter",
            "Requests answered.",
        );
        sample(&mut out, "primes_requests_total", "", load(&self.requests));
        family(
            &mut out,
            "primes_errors_total",
            "counter",
            "Requests answered with an error status.",
        );
        let errors = "primes_errors_total";
        sample(&mut out, errors, "class=\"4xx\"", load(&self.client_errors));
        sample(&mut out, errors, "class=\"5xx\"", load(&self.server_errors));
        family(
            &mut out,
            "primes_request_seconds",
            "histogram",
            "Time to answer a request.",
        );
        let bucket = "primes_request_seconds_bucket";
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            sample(&mut out, bucket, &format!("le=\"{bound}\""), load(count));
        }
        sample(&mut out, bucket, "le=\"+Inf\"", load(&self.requests));
        let sum = load(&self.latency_sum_us) as f64 / 1e6;
        let _ = writeln!(out, "primes_request_seconds_sum {sum}");
        sample(
            &mut out,
            "primes_request_seconds_count",
            "",
            load(&self.requests),
        );
        let cutoffs = "primes_connections_timed_out_total";
        family(
            &mut out,
            cutoffs,
            "counter",
            "Connections the async servers closed for a timeout.",
        );
        let header_read = load(&self.header_read_timeouts);
        sample(&mut out, cutoffs, "timeout=\"header_read\"", header_read);
        sample(
            &mut out,
            cutoffs,
            "timeout=\"idle\"",
            load(&self.idle_timeouts),
        );
        out
    }
}

/// A metric family's `# HELP` and `# TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One sample line, with its labels (`key="value"`, or none).
fn sample(out: &mut String, name: &str, labels: &str, value: u64) {
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {value}");
    } else {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_buckets() {
        let m = Metrics::default();
        m.record(200, Duration::from_micros(300));
        m.record(404, Duration::from_millis(20));
        m.record_cutoff(Cutoff::Idle);
        let text = m.render();
        assert!(text.contains("primes_requests_total 2"));
        assert!(text.contains("primes_errors_total{class=\"4xx\"} 1"));
        assert!(text.contains("primes_request_seconds_bucket{le=\"0.0005\"} 1"));
        assert!(text.contains("primes_request_seconds_bucket{le=\"0.05\"} 2"));
        assert!(text.contains("primes_connections_timed_out_total{timeout=\"header_read\"} 0"));
        assert!(text.contains("primes_connections_timed_out_total{timeout=\"idle\"} 1"));
    }
}

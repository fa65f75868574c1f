//! `GET /metrics` of a running actor-backed server, read with a Prometheus
//! text parser: the service's request metrics and the actor runtime's own
//! (`troupe_*`) are there, and they move under load. Its own test binary:
//! the exposition is the process's, and no other server may add to it.

#[path = "support/http_get.rs"]
mod http_get;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_get::get;
use primes::server::{Config, Kind, Server};
use prometheus_parse::{Scrape, Value};

fn scrape(addr: SocketAddr) -> Scrape {
    let (status, body) = get(addr, "GET", "/metrics");
    assert_eq!(status, 200);
    Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("the exposition parses")
}

/// Scrapes until `ready` holds of the scrape, for at most ten seconds,
/// and returns the last scrape (the caller's assertions then say what is
/// missing).
fn scrape_until(addr: SocketAddr, ready: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = scrape(addr);
        if ready(&now) || Instant::now() > deadline {
            return now;
        }
        std::thread::yield_now();
    }
}

/// The sum of the single-valued samples of `name` whose labels include
/// `labels` (a histogram's `_count` is its own sample name).
fn total(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            Value::Summary(_) => 0.0,
        })
        .sum()
}

const WORKER: (&str, &str) = ("actor", "primes::service::PrimeWorker");

#[test]
fn the_runtime_metrics_are_scraped_and_move_under_load() {
    let config = Config::new(Kind::Actor)
        .max_n(1000)
        .workers(Some(2))
        .http_threads(Some(2))
        .dispatcher_threads(2);
    let server = Server::start("127.0.0.1:0".parse().unwrap(), &config).unwrap();
    let addr = server.addr();
    // The workers start on their dispatcher a moment after the server.
    let before = scrape_until(addr, |s| {
        total(s, "troupe_actor_starts_total", &[WORKER]) >= 2.0
    });
    assert_eq!(
        total(&before, "troupe_actors", &[WORKER]),
        2.0,
        "two live prime workers"
    );
    assert!(total(&before, "troupe_actor_starts_total", &[WORKER]) >= 2.0);

    const REQUESTS: u32 = 50;
    for n in 0..REQUESTS {
        let (status, _) = get(addr, "GET", &format!("/primes/{}", 100 + n));
        assert_eq!(status, 200);
    }
    // A worker counts a message when its handler has returned, a moment
    // after the reply went out: scrape until the last one is in.
    let after = scrape_until(addr, |s| {
        total(s, "troupe_messages_handled_total", &[WORKER])
            - total(&before, "troupe_messages_handled_total", &[WORKER])
            >= f64::from(REQUESTS)
    });
    let moved = |name: &str, labels: &[(&str, &str)]| {
        total(&after, name, labels) - total(&before, name, labels)
    };
    assert!(
        moved("troupe_messages_handled_total", &[WORKER]) >= f64::from(REQUESTS),
        "every request is a message to a worker"
    );
    assert!(
        moved("troupe_message_seconds", &[WORKER]) >= f64::from(REQUESTS),
        "handler times recorded"
    );
    assert!(
        moved("troupe_mailbox_depth", &[WORKER]) >= 1.0,
        "runs sampled"
    );
    assert!(moved("primes_requests_total", &[]) >= f64::from(REQUESTS));
    assert!(moved("primes_request_seconds", &[]) >= f64::from(REQUESTS));
    // Every family has its type line, so a scraper reads them right.
    for (name, kind) in [
        ("troupe_messages_handled_total", "counter"),
        ("troupe_message_seconds", "histogram"),
        ("troupe_actors", "gauge"),
        ("primes_request_seconds", "histogram"),
    ] {
        let (_, body) = get(addr, "GET", "/metrics");
        assert!(
            body.contains(&format!("# TYPE {name} {kind}")),
            "{name} is not a {kind}:\n{body}"
        );
    }
    server.stop().unwrap();
}

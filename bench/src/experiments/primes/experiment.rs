//! The primes REST service as an [`Experiment`]: its flags, its Pekko row,
//! its latency lines and its latency chart.

use std::net::SocketAddr;

use clap::Args;

use super::{peer, run, Settings, EXPERIMENT};
use crate::experiments::{Better::Higher, Experiment, Headline, Rows};
use crate::pairing::runtime;
use crate::report::Row;
use crate::runner::{RunOptions, Scale, WorkloadError};
use crate::site::charts::{self, Series};
use crate::table::Column;

/// The primes experiment.
pub struct Primes;

/// Primes' own flags.
#[derive(Debug, Args)]
pub struct PrimesArgs {
    /// Connections opened at once (default 1,000).
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u64).range(1..))]
    connections: Option<u64>,
    /// Requests per round (default 20,000).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,
    /// The n of `/primes/<n>`.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    n: u64,
    /// Open loop: start requests at this fixed rate (requests per second).
    #[arg(long, value_name = "PER_S")]
    rate: Option<f64>,
    /// Load a server elsewhere (host:port) instead of the three in-process ones.
    #[arg(long, value_name = "ADDR")]
    url: Option<SocketAddr>,
}

impl Experiment for Primes {
    type Args = PrimesArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Primes REST service: load against the actor, plain and blocking servers.";
    const RUN: Rows<Settings> = run;
    const PEER: Option<Rows<Settings>> = Some(peer_rows);
    const NOTES: &'static [&'static str] =
        &["Latency per request at the client, send to full body."];
    const KEYS: &'static [&'static str] = &["connections", "n", "mode"];
    const HEADLINE: Option<Headline> =
        Headline::new("requests per second", Higher, |r| r.num("rps"), |_| true);

    fn settings(&self, args: PrimesArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        let mut settings = Settings::for_scale(scale);
        if let Some(c) = args.connections {
            settings.connections = c as usize;
        }
        if let Some(r) = args.requests {
            settings.requests = r;
        }
        settings.n = args.n as usize;
        if args.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err("--rate must be a positive number of requests per second".into());
        }
        settings.rate = args.rate;
        settings.url = args.url;
        Ok(settings)
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            Column::with("requests", |r| crate::shared::group_thousands(r.msgs)),
            Column::param("req/s", "rps"),
            Column::with("req/s min-max", crate::table::spread_rate),
            Column::param("errors", "errors"),
            Column::param("p50 ms", "p50_ms"),
            Column::param("p95 ms", "p95_ms"),
            Column::param("p99 ms", "p99_ms"),
            Column::param("max ms", "max_ms"),
        ]
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        rows.iter().map(|row| line(row)).collect()
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        let series: Vec<Series> = rows
            .iter()
            .map(|r| Series {
                label: r.variant.clone(),
                runtime: runtime(r).to_string(),
                points: [
                    (0.0, "min_ms"),
                    (50.0, "p50_ms"),
                    (95.0, "p95_ms"),
                    (99.0, "p99_ms"),
                    (100.0, "max_ms"),
                ]
                .iter()
                .filter_map(|(q, k)| Some((*q, r.num(k)?)))
                .collect(),
            })
            .collect();
        vec![charts::lines(
            "primes: latency by percentile",
            "percentile",
            "ms",
            &series,
            (false, false),
        )]
    }
}

/// A row's latency line under the table.
fn line(row: &Row) -> String {
    let f = |k: &str| row.num(k).unwrap_or(f64::NAN);
    format!(
        "{}: {:.0} req/s, {} errors; latency ms min {:.2} mean {:.2} p50 {:.2} p95 {:.2} p99 {:.2} max {:.2}{}",
        row.variant,
        f("rps"),
        f("errors"),
        f("min_ms"),
        f("mean_ms"),
        f("p50_ms"),
        f("p95_ms"),
        f("p99_ms"),
        f("max_ms"),
        row.num("offered_rps")
            .map(|o| format!(" (open loop: offered {o:.0} req/s)"))
            .unwrap_or_default(),
    )
}

/// Pekko's rows, unless the load goes to a server elsewhere: then there is
/// nothing to compare Pekko with.
fn peer_rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    if settings.url.is_some() {
        return Ok(Vec::new());
    }
    peer::rows(settings, options)
}

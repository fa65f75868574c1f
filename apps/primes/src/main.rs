//! `primes serve`: runs one of the primes servers until SIGINT or SIGTERM.

#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use primes::http;
use primes::server::{Config, Kind, Server};
use primes::service::DEFAULT_MAX_N;
use primes::timeouts::Timeouts;

/// The primes REST service.
#[derive(Debug, Parser)]
#[command(name = "primes", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    // `<n>` rather than the usual braces: clap prints `{n}` as a line break.
    /// Serve `GET /primes/<n>`, `/health` and `/metrics`.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: SocketAddr,
        /// Largest n served; larger ones get 400.
        #[arg(long, default_value_t = DEFAULT_MAX_N)]
        max_n: usize,
        /// Which server.
        #[arg(long, value_enum, default_value_t = Kind::Actor)]
        server: Kind,
        /// Prime workers (actor server) or threads (blocking server).
        #[arg(long)]
        workers: Option<usize>,
        /// Dispatcher threads for the prime workers (actor server). The HTTP
        /// runtime has a thread per core already; one dispatcher thread
        /// keeps the two from competing on a small machine.
        #[arg(long, default_value_t = 1)]
        dispatcher_threads: usize,
        /// Time a client has to send a complete request head, from the
        /// accept or the head's first byte, before the connection is closed
        /// (every server), e.g. `10s` or `200ms`.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        header_read_timeout: Duration,
        /// Time a keep-alive connection may sit without a request, or with
        /// an unread response, before it is closed (every server).
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        idle_timeout: Duration,
        /// Log format on stdout: `text`, `json` (one object per line, with
        /// every span's close and its timing: each request and each actor
        /// message), or `off`. The level filter is `RUST_LOG` (default
        /// `info`).
        #[arg(long, value_enum, default_value_t = Log::Text)]
        log: Log,
    },
}

/// Where the service's `tracing` output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Log {
    Off,
    Text,
    Json,
}

/// Installs the subscriber for `log`, filtered by `RUST_LOG` (default
/// `info`). An invalid `RUST_LOG` is an error, not silence.
fn install_logging(log: Log) -> Result<(), String> {
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) => EnvFilter::try_new(&text).map_err(|e| format!("RUST_LOG={text:?}: {e}"))?,
        Err(_) => EnvFilter::new("info"),
    };
    use std::io::IsTerminal;
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal());
    match log {
        Log::Off => Ok(()),
        Log::Text => fmt
            .with_span_events(FmtSpan::CLOSE)
            .try_init()
            .map_err(|e| e.to_string()),
        Log::Json => fmt
            .json()
            .with_span_events(FmtSpan::CLOSE)
            .with_current_span(true)
            .with_span_list(true)
            .try_init()
            .map_err(|e| e.to_string()),
    }
}

/// `<n>s` or `<n>ms`, n > 0.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (digits, unit): (&str, fn(u64) -> Duration) = match text.strip_suffix("ms") {
        Some(digits) => (digits, Duration::from_millis),
        None => match text.strip_suffix('s') {
            Some(digits) => (digits, Duration::from_secs),
            None => return Err(format!("{text:?}: expected e.g. 10s or 200ms")),
        },
    };
    match digits.parse::<u64>() {
        Ok(n) if n > 0 => Ok(unit(n)),
        _ => Err(format!(
            "{text:?}: expected a positive whole number of s or ms"
        )),
    }
}

fn main() -> ExitCode {
    let Command::Serve {
        addr,
        max_n,
        server,
        workers,
        dispatcher_threads,
        header_read_timeout,
        idle_timeout,
        log,
    } = Cli::parse().command;
    if let Err(e) = install_logging(log) {
        eprintln!("primes: error: {e}");
        return ExitCode::FAILURE;
    }
    let timeouts = Timeouts {
        header_read: header_read_timeout,
        idle: idle_timeout,
    };
    let config = Config::new(server)
        .max_n(max_n)
        .workers(workers)
        .dispatcher_threads(dispatcher_threads)
        .timeouts(timeouts);
    match run(addr, &config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("primes: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(addr: SocketAddr, config: &Config) -> std::io::Result<()> {
    let server = Server::start(addr, config)?;
    eprintln!(
        "primes: {} server on http://{}",
        config.kind().name(),
        server.addr()
    );
    // The server runs on threads of its own; this one waits for the signal.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(http::termination_signal());
    eprintln!("primes: shutting down");
    server.stop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_seconds_or_milliseconds() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        for bad in ["0s", "0ms", "10", "s", "1.5s", "-1s", "10m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}

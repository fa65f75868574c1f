//! The extra client processes of the rows with several clients
//! (`rtt-64-3c`): `troupe-bench remote-client --transport T --url U --name N`
//! connects as the bench process does, says `ready`, then runs the round
//! trips each `run N IN_FLIGHT BYTES` line on its standard input asks for
//! and answers `done` (or `failed: why`), until its standard input closes.
//!
//! The bench process starts them with the row's echo process, tells all of
//! them to go at the start of a run, drives its own share meanwhile, and
//! stops the clock once every client has answered: a run's rate is every
//! client's round trips over that wall time, so it counts what the echo
//! side keeps up with when three processes press it at once.

use std::error::Error;
use std::io::{BufRead, Write};
use std::time::Duration;

use super::drive::Driver;
use super::Transport;
use crate::child::Child;
use crate::runner::WorkloadError;

/// How long a client may take to connect, or to finish a run.
const PATIENCE: Duration = Duration::from_secs(120);

/// A running client process; dropping it closes its stdin and reaps it.
pub struct ClientProcess {
    child: Child,
}

impl ClientProcess {
    /// Starts a client named `name` (its node's name) and waits until it
    /// has found the echo.
    pub fn start(
        transport: Transport,
        url: &str,
        name: &str,
    ) -> Result<ClientProcess, WorkloadError> {
        let args = [
            "remote-client",
            "--transport",
            transport.name(),
            "--url",
            url,
            "--name",
            name,
        ];
        let mut child = Child::start(&args, &format!("client {name}"))?;
        child.expect("ready", PATIENCE)?;
        Ok(ClientProcess { child })
    }

    /// Tells the client to run `n` round trips with `in_flight`
    /// outstanding, `bytes` of payload each.
    pub fn go(&mut self, n: u64, in_flight: usize, bytes: usize) -> Result<(), WorkloadError> {
        self.child.say(&format!("run {n} {in_flight} {bytes}"))
    }

    /// Waits for the client's answer to the last `go`.
    pub fn done(&mut self) -> Result<(), WorkloadError> {
        self.child.expect("done", PATIENCE)
    }
}

/// Runs in the client process: connects, then serves `run` lines until
/// stdin closes.
pub fn serve(transport: Transport, url: &str, name: &str) -> Result<(), Box<dyn Error>> {
    let runtime = transport.runtime()?;
    let mut driver = runtime.block_on(Driver::connect(transport, url, name))?;
    let mut out = std::io::stdout();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut times = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let answer = match parse_run(&line) {
            Some((n, in_flight, bytes)) => {
                times.clear();
                let payload = vec![0x5a; bytes];
                match runtime.block_on(driver.round_trips(n, in_flight, &payload, &mut times)) {
                    Ok(()) => "done".to_string(),
                    Err(e) => format!("failed: {e}"),
                }
            }
            None => format!("failed: not a run line: {line:?}"),
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    runtime.block_on(driver.close());
    Ok(())
}

/// `run N IN_FLIGHT BYTES`.
fn parse_run(line: &str) -> Option<(u64, usize, usize)> {
    let mut words = line.split_whitespace();
    if words.next()? != "run" {
        return None;
    }
    let n = words.next()?.parse().ok()?;
    let in_flight = words.next()?.parse().ok()?;
    let bytes = words.next()?.parse().ok()?;
    words.next().is_none().then_some((n, in_flight, bytes))
}

#[cfg(test)]
mod tests {
    use super::parse_run;

    #[test]
    fn run_lines_are_read_strictly() {
        assert_eq!(parse_run("run 64000 64 100"), Some((64_000, 64, 100)));
        assert_eq!(parse_run("run 1 2"), None);
        assert_eq!(parse_run("run 1 2 3 4"), None);
        assert_eq!(parse_run("walk 1 2 3"), None);
        assert_eq!(parse_run("run x 2 3"), None);
    }
}

//! Progress reporting for long runs: on a terminal, one status line on stderr
//! that is redrawn in place ("pingpong: row 3/12 actor-tp1-w1 run 2/5 ...");
//! when stderr is not a terminal (CI logs, pipes), nothing at all.
//!
//! The line goes to stderr so that stdout carries only the result tables and
//! can be redirected into a file or a README unchanged.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::rss;
use crate::runner::Phase;

/// The status line of one experiment.
pub struct Progress {
    experiment: String,
    rows: usize,
    /// Whether stderr is a terminal; decided once, when the experiment starts.
    enabled: bool,
    /// Whether a status line is currently drawn and must be cleared.
    drawn: bool,
    row: usize,
    variant: String,
    started: Instant,
}

impl Progress {
    /// Progress for `experiment`, which has `rows` rows to run.
    pub fn new(experiment: &str, rows: usize) -> Self {
        Progress {
            experiment: experiment.to_string(),
            rows,
            enabled: io::stderr().is_terminal(),
            drawn: false,
            row: 0,
            variant: String::new(),
            started: Instant::now(),
        }
    }

    /// Row `index` (0-based) named `variant` is starting.
    pub fn start_row(&mut self, index: usize, variant: &str) {
        self.row = index;
        self.variant = variant.to_string();
    }

    /// A run of the current row is starting; redraws the line.
    pub fn phase(&mut self, phase: Phase) {
        if !self.enabled {
            return;
        }
        // The resident size is shown because the memory-bound experiments
        // are the long ones, and a growing number is the first sign of trouble.
        let line = render(
            &self.experiment,
            self.row,
            self.rows,
            &self.variant,
            phase,
            self.started.elapsed(),
            rss::current_rss_bytes().ok(),
        );
        let mut err = io::stderr().lock();
        // A failed write to the terminal is not worth failing a benchmark for.
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Clears the line, so that what is printed next starts on a clean line.
    pub fn finish(&mut self) {
        if self.drawn {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The text of the status line, without terminal control codes.
fn render(
    experiment: &str,
    row: usize,
    rows: usize,
    variant: &str,
    phase: Phase,
    elapsed: Duration,
    rss_bytes: Option<u64>,
) -> String {
    let run = match phase {
        Phase::WarmUp => "warm-up".to_string(),
        Phase::Measured { run, of } => format!("run {run}/{of}"),
    };
    let mut line = format!(
        "{experiment}: row {}/{rows} {variant} {run} [{}s]",
        row + 1,
        elapsed.as_secs()
    );
    if let Some(bytes) = rss_bytes {
        line.push_str(&format!(" rss {:.1} MiB", bytes as f64 / (1024.0 * 1024.0)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_names_experiment_row_variant_and_run() {
        let line = render(
            "pingpong",
            2,
            12,
            "actor-tp1-w1",
            Phase::Measured { run: 2, of: 5 },
            Duration::from_secs(7),
            Some(3 * 1024 * 1024),
        );
        assert_eq!(
            line,
            "pingpong: row 3/12 actor-tp1-w1 run 2/5 [7s] rss 3.0 MiB"
        );
    }

    #[test]
    fn line_shows_the_warm_up_and_omits_an_unknown_rss() {
        let line = render(
            "pingpong",
            0,
            1,
            "busy-spin",
            Phase::WarmUp,
            Duration::ZERO,
            None,
        );
        assert_eq!(line, "pingpong: row 1/1 busy-spin warm-up [0s]");
    }
}

//! Progress reporting for long runs: on a terminal, one status line on stderr
//! with a bar over every run of the experiment, redrawn in place
//! ("pingpong [######..............] 7/36 row 3/12 actor-tp1-w1 run 2/5 ...");
//! when stderr is not a terminal (CI logs, pipes), no bar at all.
//!
//! Experiments that also report each finished run in words ("trading: ...
//! 1.4M orders/s") print it through [`Progress::note`], which keeps the line
//! above the bar on a terminal and is a plain line in a log.
//!
//! Everything goes to stderr so that stdout carries only the result tables
//! and can be redirected into a file or a README unchanged.

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::rss;

/// The status line of one experiment.
pub struct Progress {
    experiment: String,
    rows: usize,
    /// Runs per row: the warm-up and the measured ones.
    runs_per_row: usize,
    /// Whether stderr is a terminal; decided once, when the experiment starts.
    enabled: bool,
    /// Whether a status line is currently drawn and must be cleared.
    drawn: bool,
    row: usize,
    variant: String,
    /// The phase of the run in progress, once one has started.
    phase: Option<Phase>,
    started: Instant,
}

impl Progress {
    /// Progress for `experiment`, which has `rows` rows of `repeats`
    /// measured runs each, after their warm-up (which takes one slot of
    /// the bar however many runs the warm-up rule needs).
    pub fn new(experiment: &str, rows: usize, repeats: u32) -> Self {
        Progress {
            experiment: experiment.to_string(),
            rows,
            runs_per_row: 1 + repeats as usize,
            enabled: io::stderr().is_terminal(),
            drawn: false,
            row: 0,
            variant: String::new(),
            phase: None,
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
        self.phase = Some(phase);
        self.draw();
    }

    /// Prints `line` (a finished run's figures): above the bar on a
    /// terminal, as a plain line otherwise.
    pub fn note(&mut self, line: &str) {
        self.finish();
        eprintln!("{line}");
        self.draw();
    }

    fn draw(&mut self) {
        let Some(phase) = self.phase.filter(|_| self.enabled) else {
            return;
        };
        let done = self.row * self.runs_per_row
            + match phase {
                Phase::WarmUp => 0,
                Phase::Measured { run, .. } => run as usize,
            };
        let status = Status {
            experiment: &self.experiment,
            done,
            total: self.rows * self.runs_per_row,
            row: self.row,
            rows: self.rows,
            variant: &self.variant,
            phase,
        };
        // The resident size is shown because the memory-bound experiments
        // are the long ones, and a growing number is the first sign of trouble.
        let line = status.render(self.started.elapsed(), rss::current_rss_bytes().ok());
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

/// Where an experiment is, for the status line.
struct Status<'a> {
    experiment: &'a str,
    /// Runs finished, across every row.
    done: usize,
    /// Runs in all, across every row.
    total: usize,
    row: usize,
    rows: usize,
    variant: &'a str,
    phase: Phase,
}

/// Width of the bar, in characters.
const BAR: usize = 20;

impl Status<'_> {
    /// The text of the status line, without terminal control codes.
    fn render(&self, elapsed: Duration, rss_bytes: Option<u64>) -> String {
        let filled = (self.done * BAR)
            .checked_div(self.total)
            .unwrap_or(0)
            .min(BAR);
        let mut line = format!(
            "{} [{}{}] {}/{} row {}/{} {} {} [{}s]",
            self.experiment,
            "#".repeat(filled),
            ".".repeat(BAR - filled),
            self.done,
            self.total,
            self.row + 1,
            self.rows,
            self.variant,
            self.phase,
            elapsed.as_secs()
        );
        if let Some(bytes) = rss_bytes {
            line.push_str(&format!(" rss {:.1} MiB", bytes as f64 / (1024.0 * 1024.0)));
        }
        line
    }
}

/// Which run of a row is about to start, for progress reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A warm-up run, whose sample is kept but not summarised.
    WarmUp,
    /// Measured run `run` (1-based) of `of`.
    Measured {
        /// This run's number, starting at 1.
        run: u32,
        /// How many measured runs the row has.
        of: u32,
    },
}

impl Phase {
    /// Run `index` of a row with `repeats` measured runs, counting the
    /// warm-up as run 0.
    pub fn nth(index: u32, repeats: u32) -> Self {
        match index {
            0 => Phase::WarmUp,
            run => Phase::Measured { run, of: repeats },
        }
    }
}

impl fmt::Display for Phase {
    /// "warm-up" or "run 2/5".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::WarmUp => f.write_str("warm-up"),
            Phase::Measured { run, of } => write!(f, "run {run}/{of}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_the_bar_row_variant_and_run() {
        let status = Status {
            experiment: "pingpong",
            done: 7,
            total: 36,
            row: 2,
            rows: 12,
            variant: "actor-tp1-w1",
            phase: Phase::Measured { run: 1, of: 2 },
        };
        assert_eq!(
            status.render(Duration::from_secs(7), Some(3 * 1024 * 1024)),
            "pingpong [###.................] 7/36 row 3/12 actor-tp1-w1 run 1/2 [7s] rss 3.0 MiB"
        );
    }

    #[test]
    fn line_shows_the_warm_up_and_omits_an_unknown_rss() {
        let status = Status {
            experiment: "pingpong",
            done: 0,
            total: 6,
            row: 0,
            rows: 1,
            variant: "busy-spin",
            phase: Phase::WarmUp,
        };
        assert_eq!(
            status.render(Duration::ZERO, None),
            "pingpong [....................] 0/6 row 1/1 busy-spin warm-up [0s]"
        );
    }

    #[test]
    fn a_finished_experiment_fills_the_bar_and_an_empty_one_does_not_divide_by_zero() {
        let mut status = Status {
            experiment: "x",
            done: 6,
            total: 6,
            row: 0,
            rows: 1,
            variant: "v",
            phase: Phase::WarmUp,
        };
        assert!(status
            .render(Duration::ZERO, None)
            .contains(&"#".repeat(BAR)));
        status.total = 0;
        status.done = 0;
        assert!(status
            .render(Duration::ZERO, None)
            .contains(&".".repeat(BAR)));
    }
}

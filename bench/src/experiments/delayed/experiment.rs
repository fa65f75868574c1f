//! Delayed messages as an [`Experiment`]: its flag, its Pekko row, its
//! lines under the table and its charts (completions and resident memory
//! over time).

use clap::Args;
use serde_json::Value;

use super::{peer, run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{Better::Lower, Experiment, Headline, Rows};
use crate::pairing::runtime;
use crate::report::Row;
use crate::runner::Scale;
use crate::site::charts::{self, Series};
use crate::table::Column;

/// The delayed-messages experiment.
pub struct Delayed;

/// Delayed's own flags.
#[derive(Debug, Args)]
pub struct DelayedArgs {
    /// Jobs per run (default 1,000,000; `--full`: 10,000,000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
}

impl Experiment for Delayed {
    type Args = DelayedArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Delayed messages: jobs answered by replies scheduled one second later.";
    const RUN: Rows<Settings> = run;
    const PEER: Option<Rows<Settings>> = Some(peer::rows);
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);
    const COLUMNS: &'static [Column] = &[
        Column::param("jobs", "jobs"),
        Column::param("total s", "total_s"),
        // How late the replies reached the manager: the same quantity on
        // every row, Pekko's included; when the timers fired is troupe's
        // and tokio's alone (the peer does not see its timer fire).
        Column::param("late at manager p50 ms", "late_p50_ms"),
        Column::param("late at manager p99 ms", "late_p99_ms"),
        Column::param("timer fired late p99 ms", "fired_p99_ms"),
        Column::param("peak RSS MB", "peak_rss_mb"),
        Column::param("bytes/job", "bytes_per_job"),
    ];
    const NOTES: &'static [&'static str] = &["Charts: the first measured run of each variant."];
    const KEYS: &'static [&'static str] = &["jobs"];
    const HEADLINE: Option<Headline> = Headline::new(
        "seconds for all jobs",
        Lower,
        |r| r.num("total_s"),
        |_| true,
    );

    fn settings(&self, args: DelayedArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        let mut sizes = Settings::for_scale(scale);
        if let Some(jobs) = args.jobs {
            sizes.jobs = jobs;
        }
        Ok(sizes)
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        rows.iter().map(|row| line(row)).collect()
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        timeline_charts(rows)
    }
}

/// A row's line under the table.
fn line(row: &Row) -> String {
    let p = &row.params;
    let f = |k: &str| p.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let mut line = format!(
        "{}: {} jobs in {:.2} s ({:.0} completions/s); replies reached the manager late \
         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        row.variant,
        f("jobs"),
        f("total_s"),
        f("completions_per_s"),
        f("late_p50_ms"),
        f("late_p99_ms"),
        f("late_max_ms"),
    );
    // A peer reports only some figures; what it does not report is left
    // out rather than printed as NaN.
    if p.contains_key("fired_p99_ms") {
        line += &format!(
            " (timers fired late p50 {:.1} ms, p99 {:.1} ms)",
            f("fired_p50_ms"),
            f("fired_p99_ms")
        );
    }
    line += &format!("; peak RSS {:.0} MB", f("peak_rss_mb"));
    if p.contains_key("bytes_per_job") {
        line += &format!(
            ", {:.0} bytes per in-flight job (max in flight {:.0})",
            f("bytes_per_job"),
            f("max_in_flight")
        );
    }
    line
}

/// Completions and resident memory over time, from each row's first
/// measured run's timeline `(seconds, sent, completed, rss_mb)`.
fn timeline_charts(rows: &[&Row]) -> Vec<String> {
    let mut done = Vec::new();
    let mut rss = Vec::new();
    for r in rows {
        let Some(timeline) = r
            .params
            .get("runs")
            .and_then(|runs| runs.get(0))
            .and_then(|run| run.get("timeline"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let point = |i: usize| -> Vec<(f64, f64)> {
            timeline
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(i)?.as_f64()?)))
                .collect()
        };
        for (series, column) in [(&mut done, 2), (&mut rss, 3)] {
            series.push(Series {
                label: r.variant.clone(),
                runtime: runtime(r).to_string(),
                points: point(column),
            });
        }
    }
    if done.is_empty() {
        return vec![];
    }
    vec![
        charts::lines(
            "delayed: completions over time",
            "seconds",
            "completed",
            &done,
            (false, false),
        ),
        charts::lines(
            "delayed: resident memory over time",
            "seconds",
            "MB",
            &rss,
            (false, false),
        ),
    ]
}

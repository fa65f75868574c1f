//! The soak as an [`Experiment`]: not part of `all` (it runs for minutes),
//! its one flag, its memory columns and its resident-memory chart.

use std::time::Duration;

use clap::Args;

use super::{run, EXPERIMENT};
use crate::experiments::{Experiment, Rows};
use crate::pairing::runtime;
use crate::report::Row;
use crate::runner::Scale;
use crate::site::charts::{self, Series};
use crate::table::Column;

/// The soak.
pub struct Soak;

/// The soak's own flag.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// How long (default 10 minutes; `--quick`: 1).
    #[arg(long, value_name = "MIN")]
    minutes: Option<f64>,
}

impl Experiment for Soak {
    type Args = SoakArgs;
    type Settings = Duration;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Soak: minutes of trading + primes + delayed + overload in one process, the resident \
         memory sampled every second; reports the drift.";
    const RUN: Rows<Duration> = run;
    const IN_ALL: bool = false;
    const COLUMNS: &'static [Column] = &[
        Column::param("seconds", "seconds"),
        Column::param("RSS early MiB", "rss_early_mib"),
        Column::param("RSS late MiB", "rss_late_mib"),
        Column::param("RSS peak MiB", "rss_peak_mib"),
        Column::param("RSS drift %", "rss_drift_pct"),
    ];

    fn settings(&self, args: SoakArgs, scale: Scale, _: bool) -> Result<Duration, String> {
        let minutes = args
            .minutes
            .unwrap_or(if scale == Scale::Quick { 1.0 } else { 10.0 });
        if !(minutes > 0.0 && minutes.is_finite()) {
            return Err("--minutes must be a positive number".into());
        }
        Ok(Duration::from_secs_f64(minutes * 60.0))
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        let series: Vec<Series> = rows
            .iter()
            .filter_map(|r| {
                let points = r
                    .params
                    .get("rss_series")?
                    .as_array()?
                    .iter()
                    .filter_map(|p| {
                        Some((
                            p.get(0)?.as_f64()?,
                            p.get(1)?.as_f64()? / (1u64 << 20) as f64,
                        ))
                    })
                    .collect();
                Some(Series {
                    label: r.variant.clone(),
                    runtime: runtime(r).to_string(),
                    points,
                })
            })
            .collect();
        vec![charts::lines(
            "soak: resident memory",
            "seconds",
            "MiB",
            &series,
            (false, false),
        )]
    }
}

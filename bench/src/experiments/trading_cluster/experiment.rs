//! The distributed trading experiment as an [`Experiment`]: its flags,
//! columns and lines.

use clap::Args;
use serde_json::Value;

use super::{run, Settings, EXPERIMENT};
use crate::experiments::{ns_per_msg, Better::Lower, Experiment, Headline, Rows};
use crate::report::Row;
use crate::runner::Scale;
use crate::table::Column;

/// The distributed trading experiment.
pub struct TradingCluster;

/// Its own flags.
#[derive(Debug, Args)]
pub struct TradingClusterArgs {
    /// SIGKILLs for the failover row, the first being the warm-up (0 skips
    /// the row; default 21, 6 under `all`).
    #[arg(long, value_name = "N")]
    kills: Option<usize>,
}

impl Experiment for TradingCluster {
    type Args = TradingClusterArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str = "The trading system across processes over NATS: orders/s per log mode and clients, and failover time after a SIGKILL of the primaries.";
    const RUN: Rows<Settings> = run;
    const COLUMNS: &'static [Column] = &[
        Column::param("txlog", "txlog"),
        Column::param("clients", "clients"),
        Column::param("window", "window"),
        Column::param("p50 µs", "p50_us"),
        Column::param("p99 µs", "p99_us"),
        Column::param("msgs/order", "msgs_per_order"),
        Column::param("failover p50 ms", "failover_p50_ms"),
        Column::param("failover max ms", "failover_max_ms"),
    ];
    const NOTES: &'static [&'static str] = &[
            "Five processes and a nats-server on this machine, each node's actors on its one-worker tokio runtime beside its NATS connection; clients keep one order in flight, or 64 in the `/w64` rows. ns/msg is per acknowledged order; p50/p99 are the medians over the measured runs of each run's percentile; msgs/order counts every message of the order path once (client batches, receivers' batches, replication, the standby's answers, answers to clients), median over the measured runs. The failover row's ns/msg is the time from a SIGKILL of the primaries' process to the first order a new primary accepted (one kill per run).",
        ];
    const KEYS: &'static [&'static str] = &["txlog", "clients", "window"];
    const HEADLINE: Option<Headline> = Headline::new(
        "ns per acknowledged order, 10 clients, log off",
        Lower,
        ns_per_msg,
        |r| {
            r.params.get("clients").and_then(Value::as_u64) == Some(10)
                && r.params.get("txlog").and_then(Value::as_str) == Some("off")
                && r.params.get("window").and_then(Value::as_u64) == Some(1)
                && r.variant != "failover"
        },
    );

    fn settings(
        &self,
        args: TradingClusterArgs,
        scale: Scale,
        in_all: bool,
    ) -> Result<Settings, String> {
        let mut settings = Settings::for_scale(scale, in_all);
        if let Some(kills) = args.kills {
            if kills == 1 {
                return Err(
                    "--kills needs a warm-up kill and at least one measured: 0 or 2 and up".into(),
                );
            }
            settings.kills = kills;
        }
        Ok(settings)
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        rows.iter().map(|row| line(row)).collect()
    }
}

/// A row's line under the table.
fn line(row: &Row) -> String {
    if row.variant == "failover" {
        return format!(
            "failover: SIGKILL to the new primary's first order, median {:.0} ms, max {:.0} ms over {} kills",
            row.num("failover_p50_ms").unwrap_or(f64::NAN),
            row.num("failover_max_ms").unwrap_or(f64::NAN),
            row.params.get("kills").and_then(Value::as_u64).unwrap_or(0)
        );
    }
    format!(
        "{}: {:.0} orders/s (median of {} runs), latency p50 {:.0} µs, p99 {:.0} µs, {:.2} messages per order",
        row.variant,
        row.msgs_per_s,
        row.repeats,
        row.num("p50_us").unwrap_or(f64::NAN),
        row.num("p99_us").unwrap_or(f64::NAN),
        row.num("msgs_per_order").unwrap_or(f64::NAN)
    )
}

//! The cluster-app experiment as an [`Experiment`]: its flags, columns and
//! lines.

use clap::Args;

use super::{run, Settings, EXPERIMENT};
use crate::experiments::{msgs_per_s, Better::Higher, Experiment, Headline, Rows};
use crate::report::Row;
use crate::runner::Scale;
use crate::table::Column;

/// Sharded persistent entities on three node processes.
pub struct ClusterApp;

/// Its own flags (each defaults to the scale's size).
#[derive(Debug, Args)]
pub struct ClusterAppArgs {
    /// Entities (persistent ledgers); default 1,000 (100 with --quick).
    #[arg(long, value_name = "N")]
    entities: Option<u64>,
    /// Shards of the entity type; default 100 (10 with --quick).
    #[arg(long, value_name = "N")]
    shards: Option<u32>,
    /// Commands in flight; default 256 (64 with --quick).
    #[arg(long, value_name = "N")]
    window: Option<usize>,
    /// Commands per run; default 40,000 (2,000 with --quick).
    #[arg(long, value_name = "N")]
    commands: Option<u64>,
}

impl Experiment for ClusterApp {
    type Args = ClusterAppArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "A cluster application: sharded persistent entities on three node processes over NATS, \
         commands asked through a proxy region with a window in flight, each persisted \
         (JetStream or local journal) before its answer; every acknowledged command checked.";
    const RUN: Rows<Settings> = run;
    const COLUMNS: &'static [Column] = &[
        Column::param("journal", "journal"),
        Column::param("entities", "entities"),
        Column::param("window", "window"),
        Column::param("p50 µs", "p50_us"),
        Column::param("p99 µs", "p99_us"),
        Column::param("writes/cmd", "journal_writes_per_cmd"),
        Column::param("msgs/cmd", "msgs_per_cmd"),
    ];
    const NOTES: &'static [&'static str] = &[
        "Three node processes (one actor thread and one tokio worker each), a client process \
         (the bench's: a proxy region, the same budget) and a nats-server on this machine. \
         ns/msg is per acknowledged command (persisted before its answer); p50/p99 are the \
         medians over the measured runs of each run's percentile; writes/cmd counts journal \
         appends and fences, msgs/cmd the NATS messages (troupe-remote's batches) the four \
         processes' clients published. After every run each entity is read back: every \
         acknowledged command there once, nothing else.",
    ];
    const KEYS: &'static [&'static str] = &["journal", "entities", "window"];
    const HEADLINE: Option<Headline> = Headline::new(
        "acknowledged persisted commands/s, 3 nodes, JetStream",
        Higher,
        msgs_per_s,
        |r| r.variant == "jetstream",
    );

    fn settings(
        &self,
        args: ClusterAppArgs,
        scale: Scale,
        in_all: bool,
    ) -> Result<Settings, String> {
        let mut s = Settings::for_scale(scale, in_all);
        s.entities = args.entities.unwrap_or(s.entities);
        s.shards = args.shards.unwrap_or(s.shards);
        s.window = args.window.unwrap_or(s.window);
        s.commands = args.commands.unwrap_or(s.commands);
        if s.entities == 0 || s.shards == 0 || s.window == 0 || s.commands == 0 {
            return Err("--entities, --shards, --window and --commands must be at least 1".into());
        }
        Ok(s)
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        rows.iter()
            .map(|row| {
                format!(
                    "{}: {:.0} acknowledged commands/s (median of {} runs), latency p50 {:.0} µs, \
                     p99 {:.0} µs, {:.2} journal writes and {:.2} NATS messages published per command",
                    row.variant,
                    row.msgs_per_s,
                    row.repeats,
                    row.num("p50_us").unwrap_or(f64::NAN),
                    row.num("p99_us").unwrap_or(f64::NAN),
                    row.num("journal_writes_per_cmd").unwrap_or(f64::NAN),
                    row.num("msgs_per_cmd").unwrap_or(f64::NAN)
                )
            })
            .collect()
    }
}

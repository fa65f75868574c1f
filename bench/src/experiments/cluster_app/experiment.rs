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
    /// SIGKILLs of a node for the jetstream-kill row, each in a fresh
    /// cluster, the first a warm-up; default 3 (also with --quick; 21 with
    /// --full); 0: no kill row.
    #[arg(long, value_name = "N")]
    kills: Option<u32>,
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
        Column::param("outage p50 ms", "outage_p50_ms"),
        Column::param("outage max ms", "outage_max_ms"),
    ];
    const NOTES: &'static [&'static str] = &[
        "Three node processes (one actor thread and one tokio worker each), a client process \
         (the bench's: a proxy region, the same budget) and a nats-server on this machine. \
         ns/msg is per acknowledged command (persisted before its answer); p50/p99 are the \
         medians over the measured runs of each run's percentile; writes/cmd counts journal \
         appends and fences, msgs/cmd the NATS messages (troupe-remote's batches) the four \
         processes' clients published. After every run each entity is read back: every \
         acknowledged command there once, nothing else.",
        "jetstream-kill: per kill a fresh cluster, one node SIGKILLed once a third of the \
         commands are acknowledged (the victims rotate, the shard coordinator's node among \
         them); the client asks again, with the same command id, every ask unanswered after \
         250 ms. ns/msg is the outage: from the kill until every ledger answered again, \
         measured by a probe per ledger started at the kill (a read asked again until \
         answered; the command lanes wait on the killed node's ledgers, so a live ledger's \
         next command answer says when a lane reached it); outage_commands_* in the JSON is \
         the same measured by the commands' answers. Every command ends acknowledged and is \
         read back once: 0 lost, 0 doubled, or the row fails.",
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
        s.kills = args.kills.unwrap_or(s.kills);
        if s.kills == 1 {
            return Err(
                "--kills needs a warm-up kill and at least one measured: 0 or 2 and up".into(),
            );
        }
        if s.entities == 0 || s.shards == 0 || s.window == 0 || s.commands == 0 {
            return Err("--entities, --shards, --window and --commands must be at least 1".into());
        }
        Ok(s)
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        rows.iter()
            .map(|row| {
                if row.variant == super::kill::VARIANT {
                    return format!(
                        "{}: every ledger answered again {:.0} ms after a node's SIGKILL \
                         (median of {} kills, max {:.0} ms), 0 commands lost or doubled",
                        row.variant,
                        row.num("outage_p50_ms").unwrap_or(f64::NAN),
                        row.num("kills").unwrap_or(f64::NAN),
                        row.num("outage_max_ms").unwrap_or(f64::NAN)
                    );
                }
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

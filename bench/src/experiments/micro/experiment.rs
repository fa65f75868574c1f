//! The micro-benchmarks as an [`Experiment`]: no flags of their own, and
//! their extra figures (bytes per idle actor, ask percentiles) as lines
//! under the table.

use clap::Args;

use super::{run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{Experiment, Headline, Rows};
use crate::report::Row;
use crate::runner::Scale;
use crate::table::{Column, PER_MESSAGE};

/// The micro-benchmarks.
pub struct Micro;

/// The micro-benchmarks take only the common flags.
#[derive(Debug, Args)]
pub struct MicroArgs {}

impl Experiment for Micro {
    type Args = MicroArgs;
    type Settings = Settings;
    const RUN: Rows<Settings> = run;
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);

    fn name(&self) -> &'static str {
        EXPERIMENT
    }
    fn about(&self) -> &'static str {
        "Micro-benchmarks: spawn cost, idle-actor memory, ask round trip from a thread and \
         between actors, spawn and stop."
    }
    fn settings(&self, _: MicroArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
    fn columns(&self) -> Vec<Column> {
        let mut columns = PER_MESSAGE.to_vec();
        columns.push(Column::param("bytes/actor", "bytes_per_actor"));
        columns
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        let mut lines = Vec::new();
        for row in rows {
            for key in ["bytes_per_actor", "p50_ns", "p99_ns"] {
                if let Some(v) = row.num(key) {
                    lines.push(format!(
                        "{}: {key} = {v:.1} (median of measured runs)",
                        row.variant
                    ));
                }
            }
        }
        lines
    }
    fn headline(&self) -> Option<Headline> {
        Some(Headline {
            figure: "ns per actor spawned, started and stopped",
            value: |r| Some(r.ns_per_msg),
            lower_is_better: true,
            select: |r| r.variant.ends_with("spawn-stop"),
        })
    }
}

//! The micro-benchmarks as an [`Experiment`]: no flags of their own, and
//! their extra figures (bytes per idle actor, ask percentiles) as lines
//! under the table.

use super::{run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{ns_per_msg, Better::Lower, Experiment, Headline, NoFlags, Rows};
use crate::report::Row;
use crate::runner::Scale;
use crate::table::Column;

/// The micro-benchmarks.
pub struct Micro;

impl Experiment for Micro {
    type Args = NoFlags;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Micro-benchmarks: spawn cost, idle-actor memory, ask round trip from a thread and \
         between actors, spawn and stop.";
    const RUN: Rows<Settings> = run;
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);
    const COLUMNS: &'static [Column] = &[Column::param("bytes/actor", "bytes_per_actor")];
    const HEADLINE: Option<Headline> = Headline::new(
        "ns per actor spawned, started and stopped",
        Lower,
        ns_per_msg,
        |r| r.variant.ends_with("spawn-stop"),
    );

    fn settings(&self, _: NoFlags, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
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
}

//! The persistence benchmarks as an [`Experiment`]: no flags of their own;
//! the sizes come from the scale.

use clap::Args;

use super::{run, Settings, EXPERIMENT};
use crate::experiments::{Experiment, Headline, Rows};
use crate::runner::Scale;
use crate::table::{Column, PER_MESSAGE};

/// Persistent actors: persist throughput, recovery, snapshots.
pub struct Persistence;

/// The persistence benchmarks take only the common flags.
#[derive(Debug, Args)]
pub struct PersistenceArgs {}

impl Experiment for Persistence {
    type Args = PersistenceArgs;
    type Settings = Settings;
    const RUN: Rows<Settings> = run;

    fn name(&self) -> &'static str {
        EXPERIMENT
    }
    fn about(&self) -> &'static str {
        "Persistent actors on the local journal: persist throughput with group commit across \
         100 entities, recovery of 1,000,000 events (snapshot + tail, and full replay), snapshot cost."
    }
    fn settings(&self, _: PersistenceArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
    fn columns(&self) -> Vec<Column> {
        let mut columns = PER_MESSAGE.to_vec();
        columns.push(Column::param("entities", "entities"));
        columns.push(Column::param("events", "events"));
        columns
    }
    fn notes(&self) -> Vec<String> {
        vec![
            "A \"message\" is an event: persisted and acknowledged (persist rows), recovered \
             (replay rows), or a snapshot written durably (snapshot row, ns per snapshot)."
                .into(),
            "Targets (issue 30): persist >= 300,000 events/s across 100 entities; 1,000,000 \
             events recovered from snapshot + tail in <= 200 ms (ms per run = ns/event x events / 1e6)."
                .into(),
        ]
    }
    fn keys(&self) -> &'static [&'static str] {
        &["events"]
    }
    fn headline(&self) -> Option<Headline> {
        Some(Headline {
            figure: "events/s persisted across 100 entities",
            value: |r| Some(r.msgs_per_s),
            lower_is_better: false,
            select: |r| r.variant == "persist-100-entities",
        })
    }
}

//! The persistence benchmarks as an [`Experiment`]: no flags of their own;
//! the sizes come from the scale.

use super::{run, Settings, EXPERIMENT};
use crate::experiments::{msgs_per_s, Better::Higher, Experiment, Headline, NoFlags, Rows};
use crate::runner::Scale;
use crate::table::Column;

/// Persistent actors: persist throughput, recovery, snapshots.
pub struct Persistence;

impl Experiment for Persistence {
    type Args = NoFlags;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str = "Persistent actors on the local journal: persist throughput with group commit across \
         100 entities, recovery of 1,000,000 events (snapshot + tail, and full replay), snapshot cost.";
    const RUN: Rows<Settings> = run;
    const COLUMNS: &'static [Column] = &[
        Column::param("persist", "persist"),
        Column::param("entities", "entities"),
        Column::param("events", "events"),
    ];
    const NOTES: &'static [&'static str] = &[
            "A \"message\" is an event: persisted and acknowledged (persist rows), recovered \
             (replay rows), or a snapshot written durably (snapshot row, ns per snapshot).",
            "Targets (issue 30): persist >= 300,000 events/s across 100 entities; 1,000,000 \
             events recovered from snapshot + tail in <= 200 ms (ms per run = ns/event x events / 1e6).",
            "persist rows: each entity's next command waits for its append (`Effect::persist`); \
             persist-async rows: it does not (`Effect::persist_async`), so an entity has many appends \
             in flight (the JetStream journal sends an id's queued appends as one record). Target \
             (issue 46): jetstream-persist >= 250,000 events/s.",
        ];
    const KEYS: &'static [&'static str] = &["events"];
    const HEADLINE: Option<Headline> = Headline::new(
        "events/s persisted across 100 entities",
        Higher,
        msgs_per_s,
        |r| r.variant == "persist-100-entities",
    );

    fn settings(&self, _: NoFlags, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
}

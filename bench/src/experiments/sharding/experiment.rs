//! The sharding benchmark as an [`Experiment`]: no flags of its own; the
//! sizes come from the scale.

use super::{run, Settings, EXPERIMENT};
use crate::experiments::{msgs_per_s, Better::Higher, Experiment, Headline, NoFlags, Rows};
use crate::runner::Scale;
use crate::table::Column;

/// Cluster sharding: entities started across three nodes.
pub struct Sharding;

impl Experiment for Sharding {
    type Args = NoFlags;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Cluster sharding on three nodes over NATS: 100,000 entities started on first message, \
         spread over the nodes by their shards' leases.";
    const RUN: Rows<Settings> = run;
    const COLUMNS: &'static [Column] = &[
        Column::param("entities", "entities"),
        Column::param("shards", "shards"),
        Column::param("bytes/entity", "bytes_per_entity"),
    ];
    const NOTES: &'static [&'static str] = &[
        "A \"message\" is an entity started and answering its first ask (64 in flight, \
             sent through the three nodes' regions in turn); bytes/entity is the process's \
             resident memory growth over the run per entity.",
    ];
    const KEYS: &'static [&'static str] = &["entities"];
    const HEADLINE: Option<Headline> = Headline::new(
        "entities started/s across 3 nodes",
        Higher,
        msgs_per_s,
        |r| r.variant == "activate-3-nodes",
    );

    fn settings(&self, _: NoFlags, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
}

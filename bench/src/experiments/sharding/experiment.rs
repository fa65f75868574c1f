//! The sharding benchmark as an [`Experiment`]: no flags of its own; the
//! sizes come from the scale.

use clap::Args;

use super::{run, Settings, EXPERIMENT};
use crate::experiments::{Experiment, Headline, Rows};
use crate::runner::Scale;
use crate::table::{Column, PER_MESSAGE};

/// Cluster sharding: entities started across three nodes.
pub struct Sharding;

/// The sharding benchmark takes only the common flags.
#[derive(Debug, Args)]
pub struct ShardingArgs {}

impl Experiment for Sharding {
    type Args = ShardingArgs;
    type Settings = Settings;
    const RUN: Rows<Settings> = run;

    fn name(&self) -> &'static str {
        EXPERIMENT
    }
    fn about(&self) -> &'static str {
        "Cluster sharding on three nodes over NATS: 100,000 entities started on first message, \
         spread over the nodes by their shards' leases."
    }
    fn settings(&self, _: ShardingArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
    fn columns(&self) -> Vec<Column> {
        let mut columns = PER_MESSAGE.to_vec();
        columns.push(Column::param("entities", "entities"));
        columns.push(Column::param("shards", "shards"));
        columns.push(Column::param("bytes/entity", "bytes_per_entity"));
        columns
    }
    fn notes(&self) -> Vec<String> {
        vec![
            "A \"message\" is an entity started and answering its first ask (64 in flight, \
             sent through the three nodes' regions in turn); bytes/entity is the process's \
             resident memory growth over the run per entity."
                .into(),
        ]
    }
    fn keys(&self) -> &'static [&'static str] {
        &["entities"]
    }
    fn headline(&self) -> Option<Headline> {
        Some(Headline {
            figure: "entities started/s across 3 nodes",
            value: |r| Some(r.msgs_per_s),
            lower_is_better: false,
            select: |r| r.variant == "activate-3-nodes",
        })
    }
}

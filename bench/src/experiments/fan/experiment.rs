//! Fan-in and fan-out as an [`Experiment`]: no flags of their own, the Rust
//! peers' rows, a headline per direction.

use clap::Args;

use super::{run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{Experiment, Headline, Rows};
use crate::runner::Scale;

/// The fan experiment.
pub struct Fan;

/// Fan takes only the common flags.
#[derive(Debug, Args)]
pub struct FanArgs {}

impl Experiment for Fan {
    type Args = FanArgs;
    type Settings = Settings;
    const RUN: Rows<Settings> = run;
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);

    fn name(&self) -> &'static str {
        EXPERIMENT
    }
    fn about(&self) -> &'static str {
        "Fan-in (4 producers, 1 consumer) and fan-out (1 producer, 32 workers); ns per message."
    }
    fn settings(&self, _: FanArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
    fn notes(&self) -> Vec<String> {
        vec!["Median nanoseconds per message from the producers' start to the last one handled; lower is better.".into()]
    }
    fn keys(&self) -> &'static [&'static str] {
        &["producers", "receivers"]
    }
    fn headline(&self) -> Option<Headline> {
        Some(Headline {
            figure: "ns per message, 4 producers to 1 actor",
            value: |r| Some(r.ns_per_msg),
            lower_is_better: true,
            select: |r| r.variant.ends_with("fan-in-4"),
        })
    }
}

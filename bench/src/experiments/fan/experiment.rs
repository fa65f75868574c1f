//! Fan-in and fan-out as an [`Experiment`]: no flags of their own, the Rust
//! peers' rows, a headline per direction.

use super::{run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{ns_per_msg, Better::Lower, Experiment, Headline, NoFlags, Rows};
use crate::runner::Scale;

/// The fan experiment.
pub struct Fan;

impl Experiment for Fan {
    type Args = NoFlags;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Fan-in (4 producers, 1 consumer) and fan-out (1 producer, 32 workers); ns per message.";
    const RUN: Rows<Settings> = run;
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);
    const NOTES: &'static [&'static str] = &["Median nanoseconds per message from the producers' start to the last one handled; lower is better."];
    const KEYS: &'static [&'static str] = &["producers", "receivers"];
    const HEADLINE: Option<Headline> = Headline::new(
        "ns per message, 4 producers to 1 actor",
        Lower,
        ns_per_msg,
        |r| r.variant.ends_with("fan-in-4"),
    );

    fn settings(&self, _: NoFlags, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(Settings::for_scale(scale))
    }
}

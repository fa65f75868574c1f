//! Ping-pong as an [`Experiment`]: its flag, its peers' rows and its chart.

use clap::Args;

use super::{peer, run, rust_peers, Settings, EXPERIMENT};
use crate::experiments::{ns_per_msg, Better::Lower, Experiment, Headline, Rows};
use crate::pairing::runtime;
use crate::report::Row;
use crate::runner::Scale;
use crate::site::charts::{self, Bar};

/// The ping-pong experiment.
pub struct PingPong;

/// Ping-pong's own flags.
#[derive(Debug, Args)]
pub struct PingPongArgs {
    /// Round trips per run for every row, instead of the scale's sizes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    repetitions: Option<u64>,
}

impl Experiment for PingPong {
    type Args = PingPongArgs;
    type Settings = Settings;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Ping-pong: two parties bounce a message; reports ns per one-way hop.";
    const RUN: Rows<Settings> = run;
    const PEER: Option<Rows<Settings>> = Some(peer::rows);
    const RUST_PEERS: Option<Rows<Settings>> = Some(rust_peers::rows);
    const NOTES: &'static [&'static str] =
        &["Median nanoseconds per one-way message; lower is better."];
    // The many-pairs rows are another workload than the single pair.
    const KEYS: &'static [&'static str] = &["pairs", "balls"];
    const HEADLINE: Option<Headline> =
        Headline::new("ns per one-way hop, one pair", Lower, ns_per_msg, |r| {
            !r.params.contains_key("pairs") && !r.variant.contains("pairs")
        });

    fn settings(&self, args: PingPongArgs, scale: Scale, _: bool) -> Result<Settings, String> {
        Ok(match args.repetitions {
            Some(n) => Settings::uniform(n),
            None => Settings::for_scale(scale),
        })
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        let bars: Vec<Bar> = rows
            .iter()
            .map(|r| Bar {
                label: r.variant.clone(),
                runtime: runtime(r).to_string(),
                value: r.ns_per_msg,
            })
            .collect();
        vec![charts::bars(
            "ping-pong: ns per message (median)",
            "ns/msg",
            &bars,
        )]
    }
}

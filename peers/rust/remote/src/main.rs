//! The benchmark's remote experiment on ractor_cluster, ractor's TCP
//! remoting, run by troupe-bench as a side-by-side peer of troupe-remote:
//! `troupe-rust-peers-remote ractor remote --in-flight N --msgs N --size B`.
//!
//! This process drives; it starts this binary again as the echo process
//! (`ractor remote-echo`, see `echo`), which serves until its standard
//! input closes. Both are ractor_cluster nodes (a `NodeServer` each, on
//! 127.0.0.1 only); the driver connects with `client_connect` and finds the
//! echo actor through ractor's process-group registry, as ractor_cluster's
//! own examples do (see `node`). The RESULT line and the protocol (warm-up,
//! measured runs, every answer checked) are those of the local peers
//! (peers/rust), whose `args`, `harness` and `steady` modules this binary
//! compiles as its own: one implementation of the protocol for every Rust
//! peer.
//!
//! Why a binary and a workspace of its own: see Cargo.toml (ractor_cluster
//! turns on ractor's `cluster` feature, which the local ractor rows must
//! not get).

// The local peers' modules, shared as source; some of their items
// (the latch, the one-thread setting) only the local experiments use.
#[allow(dead_code)]
#[path = "../../src/args.rs"]
mod args;
#[allow(dead_code)]
#[path = "../../src/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "../../src/steady.rs"]
mod steady;

mod drive;
mod echo;
mod node;

use std::process::ExitCode;

use serde_json::{json, Map, Value};

use crate::args::Args;

const USAGE: &str = "usage: troupe-rust-peers-remote ractor <remote|remote-echo> [--key value]...";

fn run(words: &[String]) -> Result<Option<Map<String, Value>>, String> {
    let [library, experiment, options @ ..] = words else {
        return Err(USAGE.into());
    };
    if library != "ractor" {
        // kameo's remoting (libp2p) and actix (none) have no remote rows:
        // docs/experiments.md says why.
        return Err(format!(
            "{library}: no remote experiment (only ractor, with ractor_cluster)\n{USAGE}"
        ));
    }
    let args = Args::parse(options)?;
    match experiment.as_str() {
        "remote" => {
            let mut result = drive::run(&args)?;
            result.insert("library".into(), json!("ractor"));
            result.insert("remoting".into(), json!("ractor_cluster"));
            Ok(Some(result))
        }
        "remote-echo" => echo::serve(&args).map(|()| None),
        other => Err(format!("unknown experiment {other}\n{USAGE}")),
    }
}

fn main() -> ExitCode {
    let words: Vec<String> = std::env::args().skip(1).collect();
    match run(&words) {
        Ok(Some(result)) => {
            println!("RESULT {}", Value::Object(result.clone()));
            if result.contains_key("failure") {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("troupe-rust-peers-remote: {why}");
            ExitCode::FAILURE
        }
    }
}

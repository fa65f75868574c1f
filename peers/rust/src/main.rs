//! The benchmark's experiments on three Rust actor libraries, kameo,
//! ractor and actix, run by troupe-bench as side-by-side peers:
//! `troupe-rust-peers <kameo|ractor|actix> <experiment> --key value ...`.
//!
//! Each run prints exactly one line `RESULT {json}` on stdout; when a check
//! failed the line has a `failure` field and the exit status is 1. A run
//! that cannot finish (a timeout, a library error) prints no RESULT, says
//! why on stderr and exits 1. The protocol (warm-up, measured runs) is the
//! bench's own, see `steady`; peers/README.md lists the experiments.

mod actix_system;
mod args;
mod ask;
mod chameneos;
mod delayed;
mod fan;
mod harness;
mod pingpong;
mod spawn;
mod steady;
mod trading;

use std::process::ExitCode;

use serde_json::{json, Map, Value};

use crate::args::Args;

/// The libraries, each written from its own documentation and examples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Library {
    /// kameo 0.22, on tokio.
    Kameo,
    /// ractor 0.16, on tokio.
    Ractor,
    /// actix 0.13, on its System and Arbiters.
    Actix,
}

impl Library {
    /// Every library, in the order the bench runs them.
    pub const ALL: [Library; 3] = [Library::Kameo, Library::Ractor, Library::Actix];

    /// Its name on the command line and in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Library::Kameo => "kameo",
            Library::Ractor => "ractor",
            Library::Actix => "actix",
        }
    }

    fn parse(name: &str) -> Option<Library> {
        Library::ALL.into_iter().find(|l| l.name() == name)
    }
}

const USAGE: &str = "usage: troupe-rust-peers <kameo|ractor|actix> <pingpong|chameneos|ask|spawn|fan|delayed|trading> [--key value]...";

const REMOTE: &str = "the remote experiment (ractor on ractor_cluster) is the binary of \
peers/rust/remote, troupe-rust-peers-remote, a workspace of its own (see its Cargo.toml)";

fn run(words: &[String]) -> Result<Map<String, Value>, String> {
    let [library, experiment, options @ ..] = words else {
        return Err(USAGE.into());
    };
    let library =
        Library::parse(library).ok_or_else(|| format!("unknown library {library}\n{USAGE}"))?;
    let args = Args::parse(options)?;
    let one_thread = match args.text("one-thread", "multi") {
        "current" => true,
        "multi" => false,
        other => return Err(format!("--one-thread {other}: current or multi")),
    };
    let _ = harness::ONE_THREAD_CURRENT.set(one_thread);
    let mut result = match experiment.as_str() {
        "pingpong" => pingpong::run(library, &args)?,
        "chameneos" => chameneos::run(library, &args)?,
        "ask" => ask::run(library, &args)?,
        "spawn" => spawn::run(library, &args)?,
        "fan" => fan::run(library, &args)?,
        "delayed" => delayed::run(library, &args)?,
        "trading" => trading::run(library, &args)?,
        // ractor_cluster needs ractor's `cluster` feature, which the local
        // rows must not be built with: a binary of its own.
        "remote" => return Err(REMOTE.into()),
        other => return Err(format!("unknown experiment {other}\n{USAGE}")),
    };
    result.insert("library".into(), json!(library.name()));
    Ok(result)
}

fn main() -> ExitCode {
    let words: Vec<String> = std::env::args().skip(1).collect();
    match run(&words) {
        Ok(result) => {
            println!("RESULT {}", Value::Object(result.clone()));
            if result.contains_key("failure") {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(why) => {
            eprintln!("troupe-rust-peers: {why}");
            ExitCode::FAILURE
        }
    }
}

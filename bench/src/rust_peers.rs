//! kameo, ractor and actix as side-by-side peers: the cargo project in
//! `peers/rust` (a workspace of its own, so that troupe's `cargo test
//! --workspace` never compiles three actor libraries) implements the
//! experiments on each library with the same parameters and checks as
//! troupe's rows. This module builds its binary when a run needs it
//! (`cargo build --release --locked`, into `target/rust-peers`; cargo
//! itself decides whether anything changed; `TROUPE_PEERS_PROFILE` names
//! another cargo profile, e.g. `ci`), runs it after troupe's rows
//! and turns each `RESULT {json}` line into a row with `params.runtime`
//! naming the library and `params.peer_of` the troupe row it is compared
//! with, exactly as the Pekko peer's ([`crate::peer`]): the same warm-up
//! rule, every measured run kept, a failed check a failed row.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::peer;
use crate::runner::WorkloadError;

/// The libraries, in the order their rows run; each is a row's `runtime`.
pub const LIBRARIES: [&str; 3] = ["kameo", "ractor", "actix"];

/// Whether `runtime` is one of the Rust peers.
pub fn is_rust_peer(runtime: &str) -> bool {
    LIBRARIES.contains(&runtime)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The peers' cargo project.
pub fn project_dir() -> PathBuf {
    repo().join("peers/rust")
}

/// Where the peers build: their own target directory, under the
/// repository's, whatever `CARGO_TARGET_DIR` says for troupe's build.
fn target_dir() -> PathBuf {
    repo().join("target/rust-peers")
}

/// The environment variable naming the cargo profile the peers build
/// with instead of `release`: `ci` builds them as the workspace's `ci`
/// profile builds troupe (binaries that check outcomes, built faster),
/// for a smoke run with the peers; published runs leave it unset, so that
/// the peers are compiled like troupe's `--release` build.
pub const PROFILE_VAR: &str = "TROUPE_PEERS_PROFILE";

/// The cargo profile the peers build with: `release` unless
/// [`PROFILE_VAR`] names another.
fn profile() -> String {
    std::env::var(PROFILE_VAR)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "release".to_string())
}

fn binary() -> PathBuf {
    // Cargo puts a profile's output in a directory of the profile's name.
    target_dir().join(profile()).join("troupe-rust-peers")
}

/// Builds the peers' binary (once per process; a no-op for cargo when
/// nothing changed). `Err` says why the peers cannot run.
pub fn ensure_built() -> Result<(), String> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build(&project_dir(), "rust peers"))
        .clone()
}

/// The remote experiment's peer (ractor_cluster): a cargo workspace of its
/// own inside the peers' project, because ractor_cluster turns on ractor's
/// `cluster` feature, which the local ractor rows must not be built with
/// (see its Cargo.toml). It builds into the same target directory.
pub fn remote_project_dir() -> PathBuf {
    project_dir().join("remote")
}

/// Builds the remote peer's binary (once per process), as [`ensure_built`].
pub fn ensure_remote_built() -> Result<(), String> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build(&remote_project_dir(), "rust peers (remote)"))
        .clone()
}

/// `cargo build --profile <profile()> --locked` of the project in `dir`
/// into the peers' target directory; `what` names it in progress lines and
/// errors.
fn cargo_build(dir: &Path, what: &str) -> Result<(), String> {
    // The cargo that runs this bench when there is one, else the PATH's.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = dir.join("Cargo.toml");
    let profile = profile();
    eprintln!(
        "{what}: cargo build --profile {profile} --locked --manifest-path {} --target-dir {}",
        manifest.display(),
        target_dir().display()
    );
    let started = Instant::now();
    let status = Command::new(&cargo)
        .args([
            "build",
            "--profile",
            &profile,
            "--locked",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir())
        .status()
        .map_err(|e| format!("cannot run cargo ({}): {e}", cargo.to_string_lossy()))?;
    if !status.success() {
        return Err(format!(
            "building {} failed ({status}); see the cargo output above",
            dir.display()
        ));
    }
    eprintln!(
        "{what}: ready after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The fields of a RESULT that every Rust peer row keeps: the warm-up
/// protocol's figures, the failure and the CPU the run used.
const PROTOCOL: [&str; 7] = [
    "samples",
    "warmup_samples",
    "warmup_ns_per_msg",
    "protocol",
    "failure",
    "cpus_busy",
    "cpu_ns_per_msg",
];

/// The fields `keys` of a RESULT and the ones every Rust peer row keeps
/// (the protocol's figures, the failure, the CPU used), as a row's params;
/// see [`peer::params`].
pub fn params(result: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    let mut p = peer::params(result, keys);
    p.extend(peer::params(result, &PROTOCOL));
    p
}

/// Runs one experiment of `library` (with the warm-up rule) and returns its
/// RESULT object; see [`peer::run_child`].
pub fn run(library: &str, args: &[&str]) -> Result<Map<String, Value>, WorkloadError> {
    ensure_built().map_err(WorkloadError::new)?;
    let mut command = Command::new(binary());
    command.arg(library);
    peer::run_child(library, command, args)
}

/// Runs the remote peer (ractor on ractor_cluster) with `args`, as [`run`].
pub fn run_remote(args: &[&str]) -> Result<Map<String, Value>, WorkloadError> {
    ensure_remote_built().map_err(WorkloadError::new)?;
    let mut command = Command::new(
        target_dir()
            .join(profile())
            .join("troupe-rust-peers-remote"),
    );
    command.arg("ractor");
    peer::run_child("ractor_cluster", command, args)
}

/// A row of a library (its first argument, the row's `runtime`) from its
/// RESULT's fields: the Pekko peer's rows are built the same way.
pub use crate::peer::row_of as row;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_peer_row_keeps_the_fields_asked_for_and_the_protocols() {
        let result = serde_json::json!({
            "threads": 2, "jobs": 10, "samples": [1.0], "warmup_samples": [2.0],
            "warmup_ns_per_msg": 2.0, "protocol": "warm-up", "failure": "late",
            "cpus_busy": 1.5, "cpu_ns_per_msg": 3.0, "not_asked": 1,
        });
        let p = params(result.as_object().unwrap(), &["threads"]);
        let keys: Vec<&str> = p.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "cpu_ns_per_msg",
                "cpus_busy",
                "failure",
                "protocol",
                "samples",
                "threads",
                "warmup_ns_per_msg",
                "warmup_samples"
            ]
        );
    }
}

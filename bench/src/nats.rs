//! The nats-server the remote and distributed experiments run: the one
//! named by `NATS_SERVER` or found on `PATH`, else the pinned one that this
//! checkout's `scripts/nats-server.sh` installs. The benchmark is a tool of
//! the repository (it builds `peers/pekko` from it too), so falling back on
//! the checkout's script is its to do; the library and the trading
//! launcher only take a path.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use troupe_remote::launcher::find_binary;

use crate::runner::WorkloadError;

/// The script that installs the pinned server, relative to the repository.
const SCRIPT: &str = "scripts/nats-server.sh";

/// The server's binary, looked for once per process.
pub fn binary() -> Result<PathBuf, String> {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BINARY
        .get_or_init(|| find_binary(None).or_else(|_| from_script()))
        .clone()
}

/// Whether an experiment that needs a nats-server can run: `Ok(true)` if
/// there is one; in `all` (`in_all`) a missing server skips the experiment
/// (`Ok(false)`, said on stderr) so that the other experiments still run;
/// its own command fails with the reason.
pub fn for_experiment(experiment: &str, in_all: bool) -> Result<bool, WorkloadError> {
    match binary() {
        Ok(_) => Ok(true),
        Err(why) if in_all => {
            eprintln!("{experiment}: skipped, no nats-server: {why}");
            Ok(false)
        }
        Err(why) => Err(WorkloadError::new(format!("no nats-server: {why}"))),
    }
}

fn from_script() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(SCRIPT);
    let output = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {SCRIPT} ({}): {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().last().map(str::trim) {
        Some(path) if output.status.success() && !path.is_empty() => Ok(PathBuf::from(path)),
        _ => Err(format!(
            "no nats-server: NATS_SERVER is unset, none is on PATH, and {SCRIPT} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

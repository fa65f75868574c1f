//! Test support, feature `testing` (which this crate's own tests turn on
//! through a dev-dependency on itself; it is not part of the library a
//! user builds): throw-away nats-servers for tests, and the echo protocol
//! the tests and the example node process share.
//!
//! [`NatsServer::start`] runs the [`launcher`](crate::launcher)'s server
//! with the pinned nats-server found through `scripts/nats-server.sh` of
//! the checkout this crate is built from (which installs it with
//! `go install` into the repository's git-ignored `.tools/bin` on first
//! use): tests run from a checkout, so that layout is theirs to rely on.

pub mod echo;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

pub use crate::launcher::NatsServer;

/// The script that provides the server, relative to the repository root.
pub const SCRIPT: &str = "scripts/nats-server.sh";

/// The pinned nats-server binary: asks `scripts/nats-server.sh` once per
/// process (it installs the server when missing).
pub fn nats_server_binary() -> Result<PathBuf, String> {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BINARY.get_or_init(find_binary).clone()
}

fn find_binary() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join(SCRIPT);
    let output = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {SCRIPT} ({}): {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let path = stdout.lines().last().unwrap_or("").trim();
    if output.status.success() && !path.is_empty() {
        return Ok(PathBuf::from(path));
    }
    Err(format!(
        "no nats-server for the remote tests: {SCRIPT} failed ({}). It installs the \
         pinned nats-server with Go; install Go, or run {SCRIPT} by hand, or set \
         NATS_SERVER to a nats-server binary of the pinned version. Its output:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    ))
}

impl NatsServer {
    /// Starts the pinned server with JetStream and no authentication.
    pub fn start() -> Result<NatsServer, String> {
        NatsServer::start_with(&[])
    }

    /// Starts the pinned server with extra command-line options (e.g.
    /// `["--user", "u", "--pass", "p"]`).
    pub fn start_with(extra: &[&str]) -> Result<NatsServer, String> {
        NatsServer::launch(&nats_server_binary()?, extra)
    }

    /// Starts `n` pinned servers joined as one NATS cluster (see
    /// [`NatsServer::launch_cluster`]).
    pub fn start_cluster(n: usize) -> Result<Vec<NatsServer>, String> {
        NatsServer::launch_cluster(&nats_server_binary()?, n)
    }
}

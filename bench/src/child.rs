//! The bench's child processes of this same binary, started one way:
//! [`this_binary`] is the command every one of them starts from.
//!
//! - a probe ([`probe`]): a hidden subcommand run in a fresh process, which
//!   answers with one JSON object on stdout (a fresh process is what a probe
//!   is for: its resident memory and its actor count start from nothing);
//! - a helper ([`Child`]): a hidden subcommand talked to in lines on its
//!   standard input and output, and told to leave by closing its standard
//!   input, so it never outlives the bench (the remote experiment's echo
//!   and extra clients);
//! - `--processes N` (the `processes` module): the same command run again in
//!   fresh processes.
//!
//! The peers' programs (the Pekko jar, the Rust peers' binary) are not this
//! binary; `peer::run_child` runs them.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::runner::WorkloadError;

/// This binary, as a command to start again with other arguments.
pub fn this_binary() -> Result<Command, WorkloadError> {
    let exe = std::env::current_exe()
        .map_err(|e| WorkloadError::new(format!("cannot find this binary: {e}")))?;
    Ok(Command::new(exe))
}

/// Runs `troupe-bench <args>` in a fresh process and reads the JSON object it
/// prints on stdout. The child's stderr goes to ours, so its progress and
/// errors stay visible.
pub fn probe<T: DeserializeOwned>(what: &str, args: &[String]) -> Result<T, WorkloadError> {
    let output = this_binary()?
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| WorkloadError::new(format!("cannot start the {what}: {e}")))?;
    if !output.status.success() {
        return Err(WorkloadError::new(format!(
            "the {what} failed ({})",
            output.status
        )));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| WorkloadError::new(format!("bad {what} output: {e}")))
}

/// A running helper; dropping it closes its stdin and reaps it (killing
/// it if it has not left within five seconds).
pub struct Child {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// How errors name it ("the troupe echo process").
    what: String,
}

impl Child {
    /// Starts this binary with `args`.
    pub fn start(args: &[&str], what: &str) -> Result<Child, WorkloadError> {
        let mut child = this_binary()?
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| WorkloadError::new(format!("cannot start {what}: {e}")))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Child {
            stdin: child.stdin.take(),
            child,
            lines,
            what: what.to_string(),
        })
    }

    /// Writes `line` to its stdin.
    pub fn say(&mut self, line: &str) -> Result<(), WorkloadError> {
        let stdin = self.stdin.as_mut().expect("open until dropped");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| WorkloadError::new(format!("{}: {e}", self.what)))
    }

    /// Waits up to `patience` for its next line.
    pub fn line(&mut self, patience: Duration) -> Result<String, WorkloadError> {
        self.lines.recv_timeout(patience).map_err(|_| {
            WorkloadError::new(format!("{} said nothing within {patience:?}", self.what))
        })
    }

    /// Waits up to `patience` for its next line, which must be `word`.
    pub fn expect(&mut self, word: &str, patience: Duration) -> Result<(), WorkloadError> {
        match self.lines.recv_timeout(patience) {
            Ok(line) if line == word => Ok(()),
            Ok(line) => Err(WorkloadError::new(format!("{}: {line}", self.what))),
            Err(_) => Err(WorkloadError::new(format!(
                "{} did not say {word} within {patience:?}",
                self.what
            ))),
        }
    }

    /// Kills it at once (SIGKILL, no chance to leave cleanly) and reaps it:
    /// the fault the cluster experiments inject.
    pub fn kill(&mut self) -> Result<(), WorkloadError> {
        self.child
            .kill()
            .and_then(|()| self.child.wait().map(drop))
            .map_err(|e| WorkloadError::new(format!("cannot kill {}: {e}", self.what)))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        drop(self.stdin.take());
        // It leaves when its stdin closes; one that hangs is killed.
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

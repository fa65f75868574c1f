//! Helpers several experiments share: the guard that stops an actor system
//! when a row is done with it, the child-process probe (a hidden subcommand
//! of this same binary, run in a fresh process and answering with one JSON
//! object) and thousands separators for tables and lines.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde::de::DeserializeOwned;
use troupe::ActorSystem;

use crate::runner::WorkloadError;

/// Shuts the system down when a row's closure is dropped.
pub struct SystemGuard(pub ActorSystem);

impl Drop for SystemGuard {
    fn drop(&mut self) {
        self.0.shutdown();
        if let Err(e) = self.0.await_termination_timeout(Duration::from_secs(60)) {
            eprintln!("troupe-bench: the actor system did not stop: {e}");
        }
    }
}

/// Runs `troupe-bench <args>` in a fresh process and reads the JSON object it
/// prints on stdout. A fresh process is what a probe is for: its resident
/// memory and its actor count start from nothing. The child's stderr goes to
/// ours, so its progress and errors stay visible.
pub fn probe<T: DeserializeOwned>(what: &str, args: &[String]) -> Result<T, WorkloadError> {
    let exe = std::env::current_exe().map_err(|e| WorkloadError::new(e.to_string()))?;
    let output = Command::new(exe)
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

/// Writes `n` with a comma every three digits (1,000,000).
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(12_345_678), "12,345,678");
    }
}

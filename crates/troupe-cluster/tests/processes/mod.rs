//! What the cross-process tests share: starting a node process of this
//! crate (a `testing` bin) with its stdout read line by line, tagged with
//! the node's name, and signalling it.

// Each test file uses a part of it; its items are test scaffolding, not API.
#![allow(dead_code, missing_docs)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// A node process and the lines it prints.
pub struct NodeProcess {
    pub name: String,
    pub child: Child,
}

/// Everything the processes print, tagged with the node's name.
pub type Lines = mpsc::Receiver<(String, String)>;

/// Starts `binary <url> <name>`; its stdout lines go to `lines`.
pub fn spawn(
    binary: &str,
    url: &str,
    name: &str,
    lines: &mpsc::Sender<(String, String)>,
) -> NodeProcess {
    spawn_with(binary, url, name, &[], lines)
}

/// Starts `binary <url> <name> <extra...>`; its stdout lines go to
/// `lines`.
pub fn spawn_with(
    binary: &str,
    url: &str,
    name: &str,
    extra: &[&str],
    lines: &mpsc::Sender<(String, String)>,
) -> NodeProcess {
    let mut child = Command::new(binary)
        .args([url, name])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {binary}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let (tag, lines) = (name.to_string(), lines.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send((tag.clone(), line));
        }
    });
    NodeProcess {
        name: name.to_string(),
        child,
    }
}

/// Sends `sig` (`-KILL`, `-STOP`, `-CONT`) to the process.
pub fn signal(process: &NodeProcess, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &process.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {}", process.name);
}

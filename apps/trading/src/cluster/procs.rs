//! Node processes as a launcher sees them: the command that starts one,
//! its `ready` and `result` lines, its clean leave and its SIGKILL. A
//! node process dropped without either is told to leave (so an early
//! return or an interrupt leaves no process behind), and every wait here
//! ends early once the launcher is interrupted.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::interrupt;

/// How to start a node: a program and the arguments before the node's own
/// (`trading node`, or the benchmark's hidden node command); both parse
/// [`NodeArgs`](super::args::NodeArgs).
#[derive(Clone, Debug)]
pub struct NodeCommand {
    /// The program.
    pub program: PathBuf,
    /// Arguments before the node's own.
    pub args: Vec<String>,
}

impl NodeCommand {
    /// This very binary with `subcommand` (`node` for `trading`).
    pub fn this_binary(subcommand: &str) -> Result<NodeCommand, String> {
        Ok(NodeCommand {
            program: std::env::current_exe().map_err(|e| format!("own binary: {e}"))?,
            args: vec![subcommand.to_string()],
        })
    }
}

/// A node process and what it printed.
pub struct Proc {
    /// The node's name.
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Waited for: nothing left to do when dropped.
    reaped: bool,
}

impl Proc {
    /// Starts node `name` with `command` and `args`.
    pub fn spawn(command: &NodeCommand, name: &str, args: &[String]) -> Result<Proc, String> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .args(["--name", name])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start node {name}: {e}"))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.to_string(),
            stdin: child.stdin.take(),
            child,
            lines,
            reaped: false,
        })
    }

    /// Waits for a line starting with `prefix`; returns the rest.
    pub fn expect(&mut self, prefix: &str, within: Duration) -> Result<String, String> {
        let deadline = Instant::now() + within;
        loop {
            if interrupt::interrupted() {
                return Err(interrupt::INTERRUPTED_ERROR.into());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(interrupt::POLL)) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return Ok(rest.trim().to_string());
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    return Err(format!(
                        "node {} printed no '{prefix}' within {within:?} (exit status: {status:?})",
                        self.name
                    ));
                }
            }
        }
    }

    /// SIGKILLs the process and reaps it.
    pub fn kill(mut self) -> Result<(), String> {
        self.child
            .kill()
            .map_err(|e| format!("SIGKILL {}: {e}", self.name))?;
        let _ = self.child.wait();
        self.reaped = true;
        Ok(())
    }

    /// Closes stdin: the node leaves (see [`Proc::finish`]).
    pub fn tell_to_leave(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes stdin (the node leaves) and waits up to 10 s, then kills.
    pub fn finish(mut self) {
        self.leave();
    }

    fn leave(&mut self) {
        self.tell_to_leave();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.reaped = true;
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !self.reaped {
            self.leave();
        }
    }
}

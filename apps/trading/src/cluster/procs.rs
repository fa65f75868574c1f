//! Node processes as a launcher sees them: the command that starts one,
//! the lines it prints (`ready`, `acked <percent>`, `result`, `fail-stop
//! <why>`), its clean leave, its SIGKILL, its pause (SIGSTOP) and resume
//! (SIGCONT), and whether it ended on its own. A node process dropped
//! without a leave or a kill is resumed and told to leave (so an early
//! return or an interrupt leaves no process behind), and every wait here
//! ends early once the launcher is interrupted.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::interrupt;

/// How long a node told to leave has before it is killed: its own
/// shutdown is bounded by the remote config's `shutdown_timeout` (5 s),
/// with time to spare for a loaded machine.
pub const LEAVE_WITHIN: Duration = Duration::from_secs(10);

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
    /// Stopped by SIGSTOP and not resumed yet: it must be resumed before
    /// it can leave.
    paused: bool,
}

/// How a node process ended on its own.
#[derive(Clone, Debug)]
pub struct Ended {
    /// Its exit status.
    pub status: ExitStatus,
    /// What it said on its `fail-stop` line, if it printed one.
    pub why: Option<String>,
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
            paused: false,
        })
    }

    /// Waits for a line starting with `prefix`; returns the rest.
    pub fn expect(&mut self, prefix: &str, within: Duration) -> Result<String, String> {
        self.expect_first(&format!("'{prefix}'"), within, |line| {
            line.strip_prefix(prefix)
                .map(|rest| rest.trim().to_string())
        })
    }

    /// Waits for the first line that `pick` takes (`what` names it in the
    /// error if none comes within `within`); the lines before it are
    /// dropped.
    pub fn expect_first<T>(
        &mut self,
        what: &str,
        within: Duration,
        mut pick: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + within;
        loop {
            if interrupt::interrupted() {
                return Err(interrupt::INTERRUPTED_ERROR.into());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(interrupt::POLL)) {
                Ok(line) => {
                    if let Some(picked) = pick(&line) {
                        return Ok(picked);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    return Err(format!(
                        "node {} printed no {what} within {within:?} (exit status: {status:?})",
                        self.name
                    ));
                }
            }
        }
    }

    /// Sends `signal` (a name `kill -s` knows, such as STOP) to the
    /// process. Through the `kill` command, so that this crate needs no
    /// unsafe code of its own for it.
    fn signal(&self, signal: &str) -> Result<(), String> {
        let status = Command::new("kill")
            .args(["-s", signal, "--", &self.child.id().to_string()])
            .status()
            .map_err(|e| format!("kill -s {signal} {}: {e}", self.name))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -s {signal} {}: {status}", self.name))
        }
    }

    /// SIGSTOPs the process: it does nothing, not even heartbeats, until
    /// [`Proc::resume`].
    pub fn pause(&mut self) -> Result<(), String> {
        self.signal("STOP")?;
        self.paused = true;
        Ok(())
    }

    /// SIGCONTs a paused process.
    pub fn resume(&mut self) -> Result<(), String> {
        self.signal("CONT")?;
        self.paused = false;
        Ok(())
    }

    /// How the process ended, if it has ended (on its own: a process this
    /// launcher killed or told to leave is not asked). Its last lines are
    /// read for a `fail-stop` reason.
    pub fn ended(&mut self) -> Option<Ended> {
        let status = self.child.try_wait().ok().flatten()?;
        self.reaped = true;
        // The reader thread ends once the pipe is closed (at exit, unless
        // a grandchild holds it): wait for that, but not forever.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut why = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("fail-stop ") {
                        why = Some(rest.trim().to_string());
                    }
                }
                Err(_) => break,
            }
        }
        Some(Ended { status, why })
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

    /// Closes stdin (the node leaves) and waits up to [`LEAVE_WITHIN`],
    /// then kills.
    pub fn finish(self) {
        self.finish_by(Instant::now() + LEAVE_WITHIN);
    }

    /// [`Proc::finish`] with a deadline shared by several nodes leaving
    /// together: nodes that hang are killed together at it, not one
    /// [`LEAVE_WITHIN`] after another.
    pub fn finish_by(mut self, deadline: Instant) {
        self.leave_by(deadline);
    }

    fn leave_by(&mut self, deadline: Instant) {
        if self.paused {
            // A stopped process cannot read its closed stdin.
            let _ = self.resume();
        }
        self.tell_to_leave();
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
            self.leave_by(Instant::now() + LEAVE_WITHIN);
        }
    }
}

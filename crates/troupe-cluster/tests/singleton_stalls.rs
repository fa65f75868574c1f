//! A node process that held a singleton stalls (SIGSTOP, then SIGCONT)
//! past the heartbeat timeout: the other node takes the singleton over,
//! and the stalled one comes back by itself as a new incarnation. That
//! stall belongs to its old incarnation: once the holder leaves, the
//! renewed node must hold the singleton again, without a restart.

mod processes;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use troupe_remote::testing::NatsServer;

use processes::{signal, Lines, NodeProcess};

const WAIT: Duration = Duration::from_secs(20);

/// Ends the node processes, even stopped ones, when the test ends.
struct Guard(Vec<NodeProcess>);

impl Drop for Guard {
    fn drop(&mut self) {
        for p in &mut self.0 {
            if p.child.try_wait().ok().flatten().is_none() {
                let pid = p.child.id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-CONT", &pid])
                    .status();
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

/// Waits for `node` to print a line starting with `prefix`; the line.
fn await_line(lines: &Lines, node: &str, prefix: &str) -> String {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok((n, line)) if n == node && line.starts_with(prefix) => return line,
            Ok(other) => seen.push(other),
            Err(_) => panic!("{node} never printed `{prefix}` within {WAIT:?}; seen: {seen:?}"),
        }
    }
}

#[test]
fn a_renewed_node_holds_the_singleton_again() {
    let server = NatsServer::start().unwrap();
    let url = server.url();
    let (tx, lines) = mpsc::channel();
    let binary = env!("CARGO_BIN_EXE_troupe-singleton-node");
    let mut nodes = Guard(vec![processes::spawn(binary, &url, "a", &tx)]);
    await_line(&lines, "a", "status holding");
    nodes.0.push(processes::spawn(binary, &url, "b", &tx));
    await_line(&lines, "b", "status following a");

    // The stall itself (not a wait for an outcome): a second past the
    // nodes' heartbeat timeout of 1 s.
    signal(&nodes.0[0], "-STOP");
    std::thread::sleep(Duration::from_secs(2));
    signal(&nodes.0[0], "-CONT");
    await_line(&lines, "b", "status holding");
    await_line(&lines, "a", "status following b");

    // b leaves (its stdin closes), releasing the lease: the renewed a
    // acquires it.
    drop(nodes.0[1].child.stdin.take());
    let line = await_line(&lines, "a", "status holding");
    println!("a after the stall and b's leave: {line}");
}

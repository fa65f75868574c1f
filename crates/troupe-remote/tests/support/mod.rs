//! Shared set-up of the remote tests: a server per test, systems and nodes.
//! Each test file uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use troupe::ActorSystem;
use troupe_remote::testing::NatsServer;
use troupe_remote::{DeadLetterReason, Node, RemoteConfig};

/// A fresh nats-server for one test (installed on first use).
pub fn server() -> NatsServer {
    NatsServer::start().unwrap_or_else(|e| panic!("{e}"))
}

/// A small actor system.
pub fn system() -> ActorSystem {
    ActorSystem::builder().threads(1).build().unwrap()
}

/// A node on `server`.
pub async fn node(system: &ActorSystem, server: &NatsServer, name: &str) -> Node {
    Node::start(system, RemoteConfig::new(server.url(), name))
        .await
        .unwrap_or_else(|e| panic!("node {name}: {e}"))
}

/// A node on `server` whose writer lingers up to `linger` for company.
pub async fn node_lingering(
    system: &ActorSystem,
    server: &NatsServer,
    name: &str,
    linger: Duration,
) -> Node {
    let mut config = RemoteConfig::new(server.url(), name);
    config.batch_linger = linger;
    Node::start(system, config)
        .await
        .unwrap_or_else(|e| panic!("node {name}: {e}"))
}

/// A probe that receives every dead-letter reason of `node`.
pub fn dead_letter_probe(node: &Node) -> mpsc::Receiver<DeadLetterReason> {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    node.on_dead_letter(move |letter| {
        let _ = tx.lock().unwrap().send(letter.reason);
    });
    rx
}

/// The next reason from a probe, or a panic after a generous deadline.
pub fn next_reason(probe: &mpsc::Receiver<DeadLetterReason>) -> DeadLetterReason {
    probe
        .recv_timeout(Duration::from_secs(10))
        .expect("no dead letter within 10 s")
}

/// Shuts a system down and waits for it.
pub fn stop(system: ActorSystem) {
    system.shutdown();
    system.await_termination().unwrap();
}

/// Waits (up to 20 s) for `want` among a node's member events.
pub async fn await_member_event(
    events: &mut tokio::sync::broadcast::Receiver<troupe_remote::MemberEvent>,
    want: troupe_remote::MemberEvent,
) {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match events.recv().await {
                Ok(event) if event == want => return,
                Ok(_) => {}
                Err(e) => panic!("member events: {e}"),
            }
        }
    })
    .await;
    assert!(found.is_ok(), "no {want:?} within 20 s");
}

/// Starts an echo node process publishing `published`, and waits for its
/// "ready" line (the name is published).
pub fn spawn_echo(url: &str, node_name: &str, published: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe-remote-echo"))
        .args([url, node_name, published])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the echo node process");
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let line = BufReader::new(stdout).lines().next();
        let _ = ready_tx.send(line.and_then(Result::ok));
    });
    let ready = ready_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the echo node did not report ready");
    assert_eq!(ready.as_deref(), Some("ready"));
    child
}

/// Closes the child's stdin (it leaves) and checks that it exits cleanly.
pub fn finish(mut child: Child) {
    drop(child.stdin.take());
    let (exit_tx, exit_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });
    let status = exit_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the echo node did not exit")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// An echo node process whose standard output is read line by line (see
/// the `stats` command of `troupe-remote-echo`).
pub struct EchoProcess {
    pub child: Child,
    lines: mpsc::Receiver<String>,
}

impl EchoProcess {
    /// Starts `troupe-remote-echo` with `args` and waits for its "ready".
    pub fn start(args: &[&str]) -> EchoProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_troupe-remote-echo"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the echo node process");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let process = EchoProcess { child, lines };
        assert_eq!(process.line(), "ready");
        process
    }

    /// The next line it prints (60 s at most).
    pub fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(60))
            .expect("no line from the echo node within 60 s")
    }

    /// Its `stats` line: `total=<n> <Reason>=<n>… members=<n> …`, as pairs.
    pub fn stats(&mut self) -> std::collections::HashMap<String, u64> {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "stats").unwrap();
        stdin.flush().unwrap();
        self.line()
            .split_whitespace()
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
            .collect()
    }

    /// Its resident set now and at its peak, in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc/<pid>/status"))
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Closes its stdin (it leaves) and checks that it exits cleanly.
    pub fn finish(self) {
        finish(self.child);
    }
}

//! The trading system across real processes (`trading cluster`): a
//! nats-server, two engine nodes, a receivers node and a clients node.
//! The primaries' process is SIGKILLed mid-load (once a share of the
//! orders is acknowledged) and a fresh engine node joins after it; then the standbys' process is killed instead. Each run
//! checks itself (see `trading::cluster::launch`); here the JSON it writes
//! is read back and the guarantees are asserted on it: every acknowledged
//! order in the surviving primary's log exactly once, nothing applied
//! twice, the books equal to a replay of the log, the fresh standby equal
//! to its primary. The one-way variant (primary and standby each tell the
//! client) is killed the same way, and so is a whole simulated host (a
//! node with its NATS server, of three). Last, the launcher is interrupted as by
//! Ctrl-C and must leave no process and no log directory behind.

use std::process::Command;

use serde_json::Value;

mod common;

use common::{assert_exactly_once, nats_server, run_cluster, ONE_AT_A_TIME};

#[test]
fn primaries_killed_mid_load_lose_no_acknowledged_order() {
    let outcome = run_cluster(6000, &["--kill-at-acked", "30", "--restart-killed"]);
    assert_exactly_once(&outcome);
    // The standbys took over: engines 0..2 (the books the scenario uses)
    // each have a new primary that accepted orders after the kill.
    let failovers = outcome["failover_ms"].as_array().unwrap();
    assert_eq!(failovers.len(), 3, "{outcome:#}");
    // The fresh node caught up and follows every engine.
    let standbys = outcome["engines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["report"]["role"] == "standby" && e["report"]["node"] == "engines-c")
        .count();
    assert_eq!(standbys, 10);
}

#[test]
fn pipelined_clients_lose_nothing_when_the_primaries_are_killed() {
    // 32 orders in flight per client: resent orders arrive after later
    // ones of the same client, and still apply once.
    let outcome = run_cluster(
        90_000,
        &[
            "--window",
            "32",
            "--kill-at-acked",
            "20",
            "--restart-killed",
        ],
    );
    assert_exactly_once(&outcome);
    assert!(
        outcome["rounds"][0]["retries"].as_u64() > Some(0),
        "{outcome:#}"
    );
    assert_eq!(outcome["failover_ms"].as_array().unwrap().len(), 3);
}

#[test]
fn standbys_killed_mid_load_leave_the_primaries_going_alone() {
    let outcome = run_cluster(6000, &["--kill-at-acked", "30", "--kill-standby"]);
    assert_exactly_once(&outcome);
    let primaries: Vec<&Value> = outcome["engines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["report"]["role"] == "primary")
        .collect();
    assert_eq!(primaries.len(), 10);
    assert!(primaries.iter().all(|e| e["report"]["node"] == "engines-a"));
    // The engines the scenario's books live on (0..2) could only finish
    // their clients' orders by going on alone: no standby left.
    assert!(primaries
        .iter()
        .filter(|e| e["index"].as_u64() < Some(3))
        .all(|e| e["report"]["standby_epoch"].is_null()));
}

#[test]
fn one_way_orders_survive_the_primaries_and_then_the_standbys_killed() {
    // Primary and standby each tell the client; a kill loses the answers
    // in flight, and the retried orders are confirmed by both again.
    let outcome = run_cluster(
        60_000,
        &[
            "--variant",
            "one-way",
            "--window",
            "16",
            "--kill-at-acked",
            "20",
            "--restart-killed",
        ],
    );
    assert_exactly_once(&outcome);
    assert_eq!(outcome["failover_ms"].as_array().unwrap().len(), 3);
    assert!(outcome["rounds"][0]["retries"].as_u64() > Some(0));
    let outcome = run_cluster(
        6000,
        &[
            "--variant",
            "one-way",
            "--kill-at-acked",
            "30",
            "--kill-standby",
        ],
    );
    assert_exactly_once(&outcome);
}

#[test]
fn a_lost_host_takes_its_nats_server_with_it_and_the_standbys_take_over() {
    // Three NATS servers, one per simulated host; the lease bucket has a
    // copy on each. The primaries' process and its server die together:
    // the remaining two servers still decide the leases.
    let outcome = run_cluster(
        6000,
        &[
            "--servers",
            "3",
            "--kill-host",
            "--kill-at-acked",
            "30",
            "--restart-killed",
        ],
    );
    assert_exactly_once(&outcome);
    assert_eq!(outcome["failover_ms"].as_array().unwrap().len(), 3);
}

/// The processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(cmdline);
            }
        }
    }
    found
}

/// Starts `trading cluster` in a process group of its own with a private
/// temporary directory, waits until its clients place orders, sends
/// `signal` to `whom` (`group`: every process of it, as a terminal's Ctrl-C
/// does; `launcher`: the launcher alone), and checks that everything
/// stopped and nothing is left.
fn interrupt_cluster(signal: &str, whom: &str) {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_trading"))
        .env("NATS_SERVER", nats_server())
        .args(["cluster", "--clients", "10", "--txlog", "buffered"])
        .args(["--orders", "100000000"])
        .env("TMPDIR", tmp.path())
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start trading cluster");
    let pid = launcher.id().to_string();
    let stderr = launcher.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no clients placing orders; stderr: {seen:#?}"));
        let placing = line.contains("clients placing");
        seen.push(line);
        if placing {
            break;
        }
    }
    assert!(
        !processes_mentioning(&tmp.path().display().to_string()).is_empty(),
        "the nodes run with logs under the private temporary directory"
    );
    let target = if whom == "group" {
        format!("-{pid}")
    } else {
        pid
    };
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), "--", &target])
        .status()
        .unwrap();
    assert!(sent.success());
    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(launcher.wait());
    });
    let status = done
        .recv_timeout(Duration::from_secs(60))
        .expect("the launcher stops within 60 s")
        .unwrap();
    seen.extend(lines.try_iter());
    assert_eq!(status.code(), Some(130), "ends as Ctrl-C ends a process");
    assert!(
        seen.iter().any(|l| l.contains("interrupted")),
        "says why it stopped: {seen:#?}"
    );
    // Every node and the server are gone; the logs and the server's store
    // (both under the private temporary directory) are removed.
    let left = processes_mentioning(&tmp.path().display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:#?}");
    let files: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(files.is_empty(), "files left behind: {files:?}");
}

#[test]
fn ctrl_c_stops_every_process_and_removes_the_logs() {
    interrupt_cluster("INT", "group");
    interrupt_cluster("TERM", "launcher");
}

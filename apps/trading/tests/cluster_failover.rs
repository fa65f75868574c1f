//! The trading system across real processes (`trading cluster`): a
//! nats-server, two engine nodes, a receivers node and a clients node.
//! The primaries' process is SIGKILLed mid-load and a fresh engine node
//! joins after it; then the standbys' process is killed instead. Each run
//! checks itself (see `trading::cluster::launch`); here the JSON it writes
//! is read back and the guarantees are asserted on it: every acknowledged
//! order in the surviving primary's log exactly once, nothing applied
//! twice, the books equal to a replay of the log, the fresh standby equal
//! to its primary.

use std::process::Command;

use serde_json::Value;

/// One cluster at a time: two at once on a 2-core machine can starve a
/// node's heartbeats past the 1 s timeout and fail over for no kill.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_cluster(orders: u32, extra: &[&str]) -> Value {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("outcome.json");
    let output = Command::new(env!("CARGO_BIN_EXE_trading"))
        .args(["cluster", "--clients", "10", "--txlog", "buffered"])
        .args(["--orders", &orders.to_string()])
        .args(["--retry-ms", "300", "--log-dir"])
        .arg(dir.path().join("logs"))
        .arg("--json")
        .arg(&json)
        .args(extra)
        .output()
        .expect("run trading cluster");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "trading cluster failed:\n{text}");
    println!("{text}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn assert_exactly_once(outcome: &Value) {
    assert_eq!(outcome["problems"], Value::Array(vec![]), "{outcome:#}");
    assert_eq!(outcome["applied_twice"], 0);
    assert_eq!(outcome["acked_missing"], 0);
    let clients = &outcome["rounds"][0];
    assert_eq!(clients["acked"], clients["orders"], "no order given up");
}

#[test]
fn primaries_killed_mid_load_lose_no_acknowledged_order() {
    let outcome = run_cluster(6000, &["--kill-after-ms", "400", "--restart-killed"]);
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
            "--kill-after-ms",
            "300",
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
    let outcome = run_cluster(6000, &["--kill-after-ms", "400", "--kill-standby"]);
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

//! What the tests that run `trading cluster` as real processes share: one
//! run (a nats-server of its own, the JSON outcome read back) and the
//! exactly-once check every run's outcome must pass.

use std::process::Command;

use serde_json::Value;

/// One cluster at a time (per test binary): two at once on a 2-core machine can starve a
/// node's heartbeats past the 1 s timeout and fail over for no kill.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn run_cluster(orders: u32, extra: &[&str]) -> Value {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("outcome.json");
    // Buffered logs unless the caller names a mode.
    let txlog: &[&str] = if extra.contains(&"--txlog") {
        &[]
    } else {
        &["--txlog", "buffered"]
    };
    let output = Command::new(env!("CARGO_BIN_EXE_trading"))
        .env("NATS_SERVER", nats_server())
        .args(["cluster", "--clients", "10"])
        .args(txlog)
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

pub fn assert_exactly_once(outcome: &Value) {
    assert_eq!(outcome["problems"], Value::Array(vec![]), "{outcome:#}");
    assert_eq!(outcome["applied_twice"], 0);
    assert_eq!(outcome["acked_missing"], 0);
    let clients = &outcome["rounds"][0];
    assert_eq!(clients["acked"], clients["orders"], "no order given up");
}

/// The pinned nats-server of this checkout, which `trading cluster` runs
/// (through `NATS_SERVER`).
pub fn nats_server() -> std::path::PathBuf {
    troupe_remote::testing::nats_server_binary().expect("the pinned nats-server")
}

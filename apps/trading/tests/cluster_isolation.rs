//! A primary isolated across real processes: a nats-server of its own, two
//! engine nodes, a receivers node and a clients node. Once 30% of the
//! orders are acknowledged the primaries' node is isolated for 3 s, three
//! times the 1 s heartbeat timeout: paused (`--pause-primary-ms`: SIGSTOP,
//! then SIGCONT) or cut off the network (`--partition-primary-ms`: the
//! engine nodes run in network namespaces of their own, and the primaries'
//! link goes down, then up; needs root and iproute2). The standbys take
//! the leases over meanwhile, and the isolated node must end by itself
//! once it can see that (its leases moved) without a single acknowledged
//! order lost or applied twice. The run checks itself over the surviving
//! node; here its JSON is read back and asserted on. Last, the verifier is
//! shown telling a node that ended on its own (recorded) from one alive
//! that does not answer (an error).

use std::time::Duration;

use serde_json::Value;
use trading::cluster::client::RetryPolicy;
use trading::cluster::node::NodeDispatcher;
use trading::cluster::wire::AckMode;
use trading::cluster::{Cluster, ClusterOptions, NodeCommand};
use trading::{Pattern, Scenario, TxLog};

mod common;

use common::{assert_exactly_once, nats_server, run_cluster, ONE_AT_A_TIME};

/// Three heartbeat timeouts of `trading cluster`'s default (1 s).
const PAUSE_MS: &str = "3000";

/// A run whose primaries' node is isolated (`fault`: the flag) for
/// `PAUSE_MS` once 30% of the orders are acknowledged.
fn run_isolated(fault: &str, orders: u32, extra: &[&str]) -> Value {
    let mut args = vec!["--kill-at-acked", "30", fault, PAUSE_MS];
    args.extend_from_slice(extra);
    run_cluster(orders, &args)
}

fn run_paused(orders: u32, extra: &[&str]) -> Value {
    run_isolated("--pause-primary-ms", orders, extra)
}

fn run_partitioned(orders: u32, extra: &[&str]) -> Value {
    run_isolated("--partition-primary-ms", orders, extra)
}

/// Nothing acknowledged is lost or doubled, the primaries' node ended on
/// its own because its leases moved, and the standbys' node serves every
/// engine. `fault` is the outcome's field that times the isolation.
fn assert_isolated_primary_fail_stopped(outcome: &Value, fault: &str) {
    assert_exactly_once(outcome);
    assert!(outcome[fault].is_u64(), "{outcome:#}");
    let stopped = outcome["fail_stopped"].as_array().unwrap();
    assert_eq!(stopped.len(), 1, "{outcome:#}");
    assert_eq!(stopped[0]["node"], "engines-a");
    assert_eq!(stopped[0]["status"], 3);
    // It learns of the move either from its watch of the lease ("lease
    // engine-<i> moved to engines-b") or, if it first takes the standbys
    // for gone, from the compare-and-set that would let it go on alone
    // ("... moved on from revision ...: Some((\"engines-b\", ...))").
    let why = stopped[0]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("moved") && why.contains("engines-b"),
        "fail-stopped because its lease moved: {why}"
    );
    let engines = outcome["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 10, "one live report per engine: {outcome:#}");
    assert!(engines
        .iter()
        .all(|e| e["report"]["role"] == "primary" && e["report"]["node"] == "engines-b"));
    // The engines the scenario's books live on (0..2) changed hands.
    assert_eq!(outcome["failover_ms"].as_array().unwrap().len(), 3);
}

#[test]
fn a_primary_paused_past_the_heartbeat_timeout_fail_stops_and_loses_nothing() {
    let outcome = run_paused(6000, &["--window", "8"]);
    assert_isolated_primary_fail_stopped(&outcome, "paused_at_ns");
}

#[test]
fn one_way_orders_survive_a_paused_primary() {
    // Primary and standby each tell the client: answers the paused
    // primary owed are lost with it, and the retries are answered by the
    // new primary alone.
    let outcome = run_paused(6000, &["--variant", "one-way", "--window", "8"]);
    assert_isolated_primary_fail_stopped(&outcome, "paused_at_ns");
}

#[test]
fn a_primary_cut_off_the_network_fail_stops_and_loses_nothing() {
    let outcome = run_partitioned(6000, &["--window", "8"]);
    assert_isolated_primary_fail_stopped(&outcome, "partitioned_at_ns");
}

#[test]
fn one_way_orders_survive_a_partitioned_primary() {
    let outcome = run_partitioned(6000, &["--variant", "one-way", "--window", "8"]);
    assert_isolated_primary_fail_stopped(&outcome, "partitioned_at_ns");
}

#[test]
fn a_node_alive_that_does_not_answer_fails_the_verifier() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let options = ClusterOptions {
        node_command: NodeCommand {
            program: env!("CARGO_BIN_EXE_trading").into(),
            args: vec!["node".into()],
        },
        clients: 10,
        orders: 1000,
        window: 1,
        mode: AckMode::RequestReply,
        pattern: Pattern::Seed,
        txlog: TxLog::Off,
        log_dir: None,
        kill_at_acked: None,
        kill_after: None,
        pause_primary: None,
        partition_primary: None,
        kill_standby: false,
        kill_host: false,
        servers: 1,
        nats_server: Some(nats_server()),
        restart_killed: false,
        restart_all: false,
        broker_outage: None,
        dispatcher: NodeDispatcher::Shared,
        threads: 1,
        snapshot_every: trading::cluster::engine::SNAPSHOT_EVERY,
        retry: RetryPolicy {
            retry_after: Duration::from_millis(300),
            give_up_after: Duration::from_secs(30),
        },
        heartbeat: (Duration::from_millis(200), Duration::from_secs(1)),
        timeout: Duration::from_secs(120),
        // Short: the last check expects the verifier to give up.
        settle_within: Duration::from_secs(5),
    };
    let mut cluster = Cluster::start(&options, &mut |_| {}).unwrap();
    let scenario = Scenario::new(10, 1000).unwrap();
    let clients = cluster
        .start_round(scenario, 1, AckMode::RequestReply)
        .unwrap();
    cluster.finish_round(clients).unwrap();
    let outcome = cluster.verify().unwrap();
    assert!(outcome.verified(), "{:?}", outcome.problems);
    assert!(outcome.fail_stopped.is_empty());
    // Stopped, not ended: the verifier must not take it for a fail-stop.
    let paused = cluster.pause().unwrap();
    let error = cluster.verify().unwrap_err();
    assert!(
        error.contains(&paused) && error.contains("alive and does not answer"),
        "{error}"
    );
    cluster.resume(&paused).unwrap();
    cluster.stop();
}

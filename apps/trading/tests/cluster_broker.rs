//! The trading cluster's NATS server restarted under it: `trading
//! cluster --broker-outage-ms` SIGKILLs the server mid-load and starts it
//! again on the same port and store. No node is killed, so every node
//! must reconnect and go on: every acknowledged order exactly once, every
//! engine with its primary and a standby equal to it, no node ended on its
//! own (the run's own checks, `verify.rs`). And the launcher's server
//! syncs every JetStream write (the lease bucket's) before acknowledging
//! it (`launch/broker.rs`).

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{assert_exactly_once, nats_server, run_cluster};
use trading::cluster::launch::ServerConfig;
use trading::topology::ENGINES;
use troupe_remote::launcher::NatsServer;

/// `GET path` on the server's monitoring port, the body as text.
fn monitor(port: u16, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut stream) => {
                write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
                let mut text = String::new();
                stream.read_to_string(&mut text).unwrap();
                return text;
            }
            Err(e) => assert!(Instant::now() < deadline, "no monitoring port: {e}"),
        }
        std::thread::yield_now();
    }
}

#[test]
fn the_launchers_server_syncs_every_jetstream_write() {
    let config = ServerConfig::write().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let path = config.path().display().to_string();
    let port_arg = port.to_string();
    let _server = NatsServer::launch(&nats_server(), &["-c", &path, "-m", &port_arg])
        .unwrap_or_else(|e| panic!("{e}"));
    let varz = monitor(port, "/varz");
    assert!(
        varz.contains("\"sync_always\": true"),
        "the server does not sync every write: {varz}"
    );
}

#[test]
fn a_broker_restart_loses_no_acknowledged_order_and_every_node_goes_on() {
    // Down for 1.5 s: longer than the 1 s heartbeat timeout.
    for variant in ["request-reply", "one-way"] {
        let outcome = run_cluster(
            6000,
            &[
                "--variant",
                variant,
                "--kill-at-acked",
                "30",
                "--broker-outage-ms",
                "1500",
            ],
        );
        assert_exactly_once(&outcome);
        assert_eq!(outcome["fail_stopped"], serde_json::json!([]));
        assert!(
            outcome["broker_restarted_at_ns"].as_u64() > outcome["broker_killed_at_ns"].as_u64()
        );
        let standbys = outcome["engines"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["report"]["role"] == "standby")
            .count();
        assert_eq!(
            standbys, ENGINES,
            "every engine keeps its standby ({variant})"
        );
    }
}

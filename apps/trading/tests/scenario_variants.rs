//! Every variant runs a small scenario of each pattern to completion and
//! verifies: the trades are half the orders, the resting orders are what
//! the pattern leaves, the standbys equal their primaries (digests
//! included), every order's latency was recorded, and the clock started
//! before the first order was sent.

use std::time::Duration;

use trading::{run, Pattern, RunConfig, RunError, Scenario, TxLog, Variant};

fn config(variant: Variant, clients: usize, pattern: Pattern) -> RunConfig {
    RunConfig {
        variant,
        scenario: Scenario::new(clients, 6_000).unwrap().with_pattern(pattern),
        txlog: TxLog::Off,
        log_root: None,
        threads: 2,
        stealing: troupe::Stealing::default(),
        window: 1,
        timeout: Duration::from_secs(120),
    }
}

#[test]
fn every_variant_verifies_with_one_and_many_clients() {
    for variant in Variant::ALL {
        for (clients, pattern) in [
            (1, Pattern::Seed),
            (7, Pattern::Seed),
            (7, Pattern::Resting),
        ] {
            let config = config(variant, clients, pattern);
            let result = run(&config).unwrap();
            let case = format!("{variant} {pattern} x{clients}");
            assert!(result.verified(), "{case}: {:?}", result.problems);
            let orders = result.orders();
            assert_eq!(result.trades, orders / 2, "{case}");
            assert_eq!(result.resting, config.scenario.resting(), "{case}");
            assert_eq!(result.latency_ns.len(), orders, "{case}");
            assert_eq!(result.engines.len(), 10);
            // The scenario only uses engines A, B and C.
            assert!(result.engines[3..].iter().all(|(p, _)| p.orders == 0));
        }
    }
}

#[test]
fn a_log_mode_without_a_directory_is_refused() {
    let mut c = config(Variant::OneWay, 1, Pattern::Seed);
    c.txlog = TxLog::Buffered;
    assert!(matches!(run(&c), Err(RunError::NoLogDirectory)));
}

#[test]
fn clients_with_many_orders_in_flight_verify_and_time_every_order() {
    for variant in [Variant::RequestReply, Variant::OneWay] {
        for (window, pattern, txlog) in [
            (16, Pattern::Seed, TxLog::Off),
            (64, Pattern::Resting, TxLog::Off),
            (32, Pattern::Seed, TxLog::GroupCommit),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut config = config(variant, 7, pattern);
            config.window = window;
            config.txlog = txlog;
            config.log_root = Some(dir.path().to_path_buf());
            let result = run(&config).unwrap();
            let case = format!("{variant} {pattern} {txlog} window {window}");
            assert!(result.verified(), "{case}: {:?}", result.problems);
            assert_eq!(result.trades, result.orders() / 2, "{case}");
            assert_eq!(result.resting, config.scenario.resting(), "{case}");
            // Every order ended once and was timed from its own send.
            assert_eq!(result.latency_ns.len(), result.orders(), "{case}");
        }
    }
}

#[test]
fn a_window_for_the_sync_variant_is_refused() {
    let mut c = config(Variant::Sync, 1, Pattern::Seed);
    c.window = 2;
    assert!(matches!(run(&c), Err(RunError::WindowNeedsActors)));
}

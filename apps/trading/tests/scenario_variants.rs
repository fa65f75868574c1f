//! Every variant runs a small seed scenario to completion and verifies: the
//! trades are half the orders, the standbys equal their primaries, every
//! order's latency was recorded.

use std::time::Duration;

use trading::{run, RunConfig, RunError, Scenario, TxLog, Variant};

fn config(variant: Variant, clients: usize) -> RunConfig {
    RunConfig {
        variant,
        scenario: Scenario::new(clients, 6_000).unwrap(),
        txlog: TxLog::Off,
        log_root: None,
        threads: 2,
        timeout: Duration::from_secs(120),
    }
}

#[test]
fn every_variant_verifies_with_one_and_many_clients() {
    for variant in Variant::ALL {
        for clients in [1, 7] {
            let result = run(&config(variant, clients)).unwrap();
            assert!(
                result.verified(),
                "{variant} x{clients}: {:?}",
                result.problems
            );
            let orders = result.orders();
            assert_eq!(result.trades, orders / 2, "{variant} x{clients}");
            assert_eq!(result.latency_ns.len(), orders, "{variant} x{clients}");
            assert_eq!(result.engines.len(), 10);
            // The scenario only uses engines A, B and C.
            assert!(result.engines[3..].iter().all(|(p, _)| p.orders == 0));
        }
    }
}

#[test]
fn a_log_mode_without_a_directory_is_refused() {
    let mut c = config(Variant::OneWay, 1);
    c.txlog = TxLog::Buffered;
    assert!(matches!(run(&c), Err(RunError::NoLogDirectory)));
}

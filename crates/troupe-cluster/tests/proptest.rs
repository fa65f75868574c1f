//! Property: whatever commands a ledger gets (single and batched appends,
//! snapshots, restarts in between), a restart recovers exactly the fold of
//! the events the journal acknowledged, whatever the snapshot interval.

mod common;

use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    Add(u64),
    AddAll(Vec<u64>),
    Snapshot,
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => any::<u64>().prop_map(Step::Add),
        2 => proptest::collection::vec(any::<u64>(), 0..5).prop_map(Step::AddAll),
        1 => Just(Step::Snapshot),
        1 => Just(Step::Restart),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn restart_recovers_the_acknowledged_events(
        steps in proptest::collection::vec(step(), 0..40),
        snapshot_every in prop_oneof![Just(None), (1u64..6).prop_map(Some)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let journal = journal(dir.path());
        let system = system();
        // Each start takes the next fencing token, as a lease revision
        // would: the newest activation is the one that writes. (With no
        // token each activation takes the highest plus one when it
        // acquires, so two started back to back could acquire in the other
        // order, and the one the test talks to be fenced by its elder.)
        let tokens = std::cell::Cell::new(0u64);
        let start = || {
            tokens.set(tokens.get() + 1);
            let (journal, token) = (journal.clone(), tokens.get());
            let props = troupe::Props::new(move || {
                let ledger = Ledger { id: "p".into(), reports: None };
                let p = troupe_cluster::persistence::Persistent::new(ledger, journal.clone())
                    .fencing_token(token);
                match snapshot_every {
                    Some(n) => p.snapshot_every(n),
                    None => p,
                }
            });
            spawn(&system, props).0
        };
        let mut ledger = start();
        let mut acknowledged = Vec::new();
        for s in steps {
            match s {
                Step::Add(n) => {
                    ledger.ask(|r| Cmd::AddAsk(n, r), WAIT).wait().unwrap();
                    acknowledged.push(n);
                }
                Step::AddAll(ns) => {
                    ledger.ask(|r| Cmd::AddAll(ns.clone(), r), WAIT).wait().unwrap();
                    acknowledged.extend(ns);
                }
                Step::Snapshot => {
                    ledger.ask(Cmd::Snapshot, WAIT).wait().unwrap();
                }
                Step::Restart => {
                    ledger = start();
                }
            }
        }
        let recovered = get(&start());
        stop(system);
        drop(journal);
        prop_assert_eq!(&recovered, &acknowledged);
        // And from a reopened journal too.
        let journal = common::journal(dir.path());
        let system = common::system();
        let (ledger, _) = spawn(&system, props("p", &journal, None, None));
        prop_assert_eq!(get(&ledger), acknowledged);
        stop(system);
    }
}

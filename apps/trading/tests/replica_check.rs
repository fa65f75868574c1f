//! The replica check catches a standby that is not a replica: a standby
//! behind a relay that swaps every two orders the primary forwards gets
//! the same orders in another order. In the seed pattern its books end
//! empty like the primary's and every count agrees (what the check compared
//! before the digests); the per-book digests of processing order and
//! trades differ, and the check says which books. With the relay passing
//! orders straight through, the check passes.

use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Duration;

use trading::engine::{Engine, Redo, Role};
use trading::engine_core::EngineSummary;
use trading::messages::{ClientMsg, Completion, EngineMsg, Token};
use trading::txlog::LogSpec;
use trading::verify::compare_pair;
use trading::{Pattern, Scenario};
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};

const PATIENCE: Duration = Duration::from_secs(10);

/// Stands between a primary and its standby; swaps every two forwarded
/// orders if `swap`, and lets anything else through (after the order it
/// holds, so a summary sees every order).
struct Relay {
    standby: ActorRef<EngineMsg>,
    swap: bool,
    held: Option<EngineMsg>,
}

impl Actor for Relay {
    type Msg = EngineMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: EngineMsg) {
        match msg {
            EngineMsg::Replicate { .. } if self.swap => match self.held.take() {
                None => self.held = Some(msg),
                Some(earlier) => {
                    self.standby.tell(msg);
                    self.standby.tell(earlier);
                }
            },
            other => {
                if let Some(earlier) = self.held.take() {
                    self.standby.tell(earlier);
                }
                self.standby.tell(other);
            }
        }
    }
}

/// Passes every completion to the test thread.
struct Probe(Sender<()>);

impl Actor for Probe {
    type Msg = ClientMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        if let ClientMsg::Completed { .. } = msg {
            let _ = self.0.send(());
        }
    }
}

/// Engine 0's orders of two clients' first loops, interleaved, through a
/// primary whose standby sits behind a relay; the pair's summaries.
fn run_pair(pattern: Pattern, swap: bool) -> (EngineSummary, EngineSummary) {
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let standby = system
        .spawn(Props::new(|| {
            Engine::new(Role::Standby, LogSpec::off(), Redo::default())
        }))
        .unwrap();
    let relay = system
        .spawn(Props::new(move || Relay {
            standby: standby.clone(),
            swap,
            held: None,
        }))
        .unwrap();
    let role = Role::Primary {
        standby: relay.clone(),
    };
    let primary = system
        .spawn(Props::new(move || {
            Engine::new(role.clone(), LogSpec::off(), Redo::default())
        }))
        .unwrap();
    let (tx, done) = mpsc::channel();
    let probe = system.spawn(Props::new(move || Probe(tx.clone()))).unwrap();

    let scenario = Scenario::new(2, 60).unwrap().with_pattern(pattern);
    let orders: Vec<_> = (0..30)
        .flat_map(|n| [scenario.order(0, n), scenario.order(1, n)])
        .filter(|o| o.book.0 < 10) // engine 0: books A1..A10
        .collect();
    assert_eq!(orders.len(), 20);
    for order in &orders {
        // Each order its own token, so every completion can be counted.
        let token = Arc::new(Token::new(probe.clone()));
        primary.tell(EngineMsg::Order {
            order: *order,
            completion: Completion::Token(token.arm(order.id)),
        });
    }
    for n in 0..orders.len() {
        done.recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("only {n} of {} orders completed", orders.len()));
    }
    let ask = |e: &ActorRef<EngineMsg>| e.ask(EngineMsg::Summary, PATIENCE).wait().unwrap();
    // Asked through the relay, after any order it still holds.
    let summaries = (ask(&primary), ask(&relay));
    system.shutdown();
    system.await_termination().unwrap();
    summaries
}

/// What the check compared before per-book digests.
fn counts_and_books(s: &EngineSummary) -> (u64, u64, u64, u64, u64) {
    (s.orders, s.trades, s.rejected, s.resting, s.fingerprint)
}

#[test]
fn a_standby_fed_in_order_passes_the_check() {
    for pattern in Pattern::ALL {
        let (primary, standby) = run_pair(pattern, false);
        assert_eq!(compare_pair(0, &primary, &standby), None, "{pattern}");
        assert_eq!(primary, standby, "{pattern}");
    }
}

#[test]
fn a_reordered_standby_is_caught_by_the_digests_alone_in_the_seed_pattern() {
    let (primary, standby) = run_pair(Pattern::Seed, true);
    // Every count, and the (empty) books, agree: the old check passed.
    assert_eq!(primary.resting, 0);
    assert_eq!(counts_and_books(&primary), counts_and_books(&standby));
    // The digests do not, in every book the swaps touched.
    let problem = compare_pair(0, &primary, &standby).expect("the reordering is caught");
    assert!(problem.contains("A1"), "{problem}");
}

#[test]
fn a_reordered_standby_in_the_resting_pattern_has_other_books_too() {
    let (primary, standby) = run_pair(Pattern::Resting, true);
    assert_eq!(
        primary.resting, 5,
        "2 asks in each of A1..A5, one of each rests"
    );
    assert_eq!(
        (primary.orders, primary.trades),
        (standby.orders, standby.trades)
    );
    assert_ne!(primary.fingerprint, standby.fingerprint);
    assert!(compare_pair(0, &primary, &standby).is_some());
}

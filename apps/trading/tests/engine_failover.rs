//! Failover: a primary engine that panics is restarted by its supervisor,
//! rebuilds its books from its own transaction log, and no acknowledged
//! order is lost: its books after the restart equal its books before, the
//! bids placed afterwards trade against the asks placed before, and the
//! standby still mirrors it exactly. Under load too: with two thousand
//! orders in flight, a primary or a standby that fails in the middle of
//! them completes every order exactly once, and the books end as if
//! nothing had failed.

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use trading::engine_core::EngineSummary;

use trading::messages::{ClientMsg, Completion, EngineMsg, Token};
use trading::{spawn_pairs, summaries, RunConfig, Scenario, TxLog, Variant};
use trading_engine::{BookId, NewOrder, OrderKind, Side};
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};

const PATIENCE: Duration = Duration::from_secs(10);

/// Stands in for a client: passes every completion to the test thread.
struct Probe(Sender<()>);

impl Actor for Probe {
    type Msg = ClientMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        if let ClientMsg::Completed { .. } = msg {
            let _ = self.0.send(());
        }
    }
}

fn order(id: u64, book: u32, side: Side) -> NewOrder {
    NewOrder {
        id,
        book: BookId(book),
        side,
        price: 99 - u64::from(book),
        qty: 1000,
        kind: OrderKind::Limit,
    }
}

/// Places `order` on `primary` and waits until it is acknowledged.
fn place(
    primary: &ActorRef<EngineMsg>,
    probe: &ActorRef<ClientMsg>,
    done: &Receiver<()>,
    order: NewOrder,
) {
    primary.tell(EngineMsg::Order {
        order,
        completion: Completion::Reply(probe.clone()),
    });
    done.recv_timeout(PATIENCE)
        .expect("the order is acknowledged");
}

fn summary(engine: &ActorRef<EngineMsg>) -> EngineSummary {
    engine.ask(EngineMsg::Summary, PATIENCE).wait().unwrap()
}

/// Engine crashes requested so far (their panics are not printed).
static CRASHES: AtomicUsize = AtomicUsize::new(0);

/// The tests count crashes, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn quiet_panics() -> MutexGuard<'static, ()> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.to_string().contains("engine crash requested") {
                CRASHES.fetch_add(1, Ordering::SeqCst);
            } else {
                default(info);
            }
        }));
    });
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A system with the engine pairs of `variant` logging under a fresh
/// directory named after `case`, and a probe that reports completions.
struct Rig {
    root: std::path::PathBuf,
    system: ActorSystem,
    pairs: trading::Pairs,
    probe: ActorRef<ClientMsg>,
    done: Receiver<()>,
}

impl Rig {
    fn start(variant: Variant, txlog: TxLog, case: &str) -> Self {
        let root = std::env::temp_dir().join(format!(
            "trading-failover-{}-{txlog}-{case}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let config = RunConfig {
            variant,
            scenario: Scenario::new(1, 30).unwrap(),
            txlog,
            log_root: Some(root.clone()),
            threads: 2,
            stealing: troupe::Stealing::default(),
            window: 1,
            timeout: PATIENCE,
        };
        let system = ActorSystem::builder().threads(2).build().unwrap();
        let pairs = spawn_pairs(&system, &config).unwrap();
        let (tx, done) = mpsc::channel();
        let probe = system.spawn(Props::new(move || Probe(tx.clone()))).unwrap();
        Rig {
            root,
            system,
            pairs,
            probe,
            done,
        }
    }

    /// Shuts down and removes the logs; returns the probe's channel, for
    /// checks after the end.
    fn finish(self) -> Receiver<()> {
        self.system.shutdown();
        self.system.await_termination().unwrap();
        std::fs::remove_dir_all(&self.root).unwrap();
        self.done
    }
}

#[test]
fn a_restarted_primary_rebuilds_its_books_from_its_log() {
    let _serial = quiet_panics();
    for txlog in [TxLog::Buffered, TxLog::GroupCommit] {
        let rig = Rig::start(Variant::RequestReply, txlog, "idle");
        let (pairs, probe, done) = (&rig.pairs, &rig.probe, &rig.done);
        let primary = &pairs.primaries[0];

        // Asks on A1..A5 (engine 0), all acknowledged.
        for book in 0..5 {
            place(primary, probe, done, order(book.into(), book, Side::Sell));
        }
        let before = summary(primary);
        assert_eq!((before.orders, before.resting, before.trades), (5, 5, 0));

        primary.tell(EngineMsg::Crash);
        let after = summary(primary);
        assert_eq!(
            after, before,
            "{txlog}: the restarted primary has its books back"
        );

        // The bids meet the asks that were placed before the crash.
        for book in 0..5 {
            place(
                primary,
                probe,
                done,
                order(100 + u64::from(book), book, Side::Buy),
            );
        }
        let end = summarise(pairs);
        assert_eq!(
            (end.0.orders, end.0.trades, end.0.resting),
            (10, 5, 0),
            "{txlog}"
        );
        assert_eq!(end.0, end.1, "{txlog}: the standby mirrors the primary");
        rig.finish();
    }
}

/// Which engine of pair 0 fails.
#[derive(Clone, Copy, Debug)]
enum Failing {
    Primary,
    Standby,
}

#[test]
fn an_engine_failing_under_load_loses_and_duplicates_no_order() {
    let _serial = quiet_panics();
    const ROUNDS: u64 = 200;
    for txlog in [TxLog::Buffered, TxLog::GroupCommit] {
        for failing in [Failing::Primary, Failing::Standby] {
            let rig = Rig::start(Variant::OneWay, txlog, &format!("load-{failing:?}"));
            let (pairs, probe, done) = (&rig.pairs, &rig.probe, &rig.done);
            let primary = &pairs.primaries[0];
            let crashes = CRASHES.load(Ordering::SeqCst);
            let victim = match failing {
                Failing::Primary => primary,
                Failing::Standby => &pairs.standbys[0],
            };
            // Every order is sent without waiting: an ask and a bid at the
            // same price on each of A1..A5 per round, so every bid trades.
            // Each order has its own token, so completions can be counted.
            let mut id = 0;
            let mut send = |book: u32, side: Side| {
                let token = Arc::new(Token::new(probe.clone()));
                primary.tell(EngineMsg::Order {
                    order: order(id, book, side),
                    completion: Completion::Token(token.arm(id)),
                });
                id += 1;
            };
            for round in 0..ROUNDS {
                if round == ROUNDS / 2 {
                    victim.tell(EngineMsg::Crash);
                }
                for side in [Side::Sell, Side::Buy] {
                    for book in 0..5 {
                        send(book, side);
                    }
                }
            }
            let orders = ROUNDS * 10;
            for n in 0..orders {
                done.recv_timeout(PATIENCE).unwrap_or_else(|_| {
                    panic!("{txlog}/{failing:?}: only {n} of {orders} orders completed")
                });
            }
            assert_eq!(
                CRASHES.load(Ordering::SeqCst) - crashes,
                1,
                "{txlog}/{failing:?}: the engine failed once"
            );
            let end = summarise(pairs);
            assert_eq!(
                (end.0.orders, end.0.trades, end.0.resting),
                (orders, orders / 2, 0),
                "{txlog}/{failing:?}: every order once, every bid traded"
            );
            assert_eq!(end.0, end.1, "{txlog}/{failing:?}: the standby mirrors");
            // No completion beyond one per order, even after the end.
            let done = rig.finish();
            assert!(
                done.try_recv().is_err(),
                "{txlog}/{failing:?}: an order completed twice"
            );
        }
    }
}

fn summarise(pairs: &trading::Pairs) -> (EngineSummary, EngineSummary) {
    summaries(pairs).unwrap()[0]
}

//! Failover: a primary engine that panics is restarted by its supervisor,
//! rebuilds its books from its own transaction log, and no acknowledged
//! order is lost: its books after the restart equal its books before, the
//! bids placed afterwards trade against the asks placed before, and the
//! standby still mirrors it exactly.

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use trading::engine_core::EngineSummary;
use trading::messages::{ClientMsg, Completion, EngineMsg};
use trading::{spawn_pairs, summaries, RunConfig, Scenario, TxLog, Variant};
use trading_engine::{BookId, NewOrder, OrderKind, Side};
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};

const PATIENCE: Duration = Duration::from_secs(10);

/// Stands in for a client: passes every completion to the test thread.
struct Probe(Sender<()>);

impl Actor for Probe {
    type Msg = ClientMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        if let ClientMsg::Completed = msg {
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

fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains("engine crash requested") {
            default(info);
        }
    }));
}

#[test]
fn a_restarted_primary_rebuilds_its_books_from_its_log() {
    quiet_panics();
    for txlog in [TxLog::Buffered, TxLog::GroupCommit] {
        let root =
            std::env::temp_dir().join(format!("trading-failover-{}-{txlog}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let config = RunConfig {
            variant: Variant::RequestReply,
            scenario: Scenario::new(1, 30).unwrap(),
            txlog,
            log_root: Some(root.clone()),
            threads: 2,
            timeout: PATIENCE,
        };
        let system = ActorSystem::builder().threads(2).build().unwrap();
        let pairs = spawn_pairs(&system, &config).unwrap();
        let (tx, done) = mpsc::channel();
        let probe = system.spawn(Props::new(move || Probe(tx.clone()))).unwrap();
        let primary = &pairs.primaries[0];

        // Asks on A1..A5 (engine 0), all acknowledged.
        for book in 0..5 {
            place(primary, &probe, &done, order(book.into(), book, Side::Sell));
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
                &probe,
                &done,
                order(100 + u64::from(book), book, Side::Buy),
            );
        }
        let end = summarise(&pairs);
        assert_eq!(
            (end.0.orders, end.0.trades, end.0.resting),
            (10, 5, 0),
            "{txlog}"
        );
        assert_eq!(end.0, end.1, "{txlog}: the standby mirrors the primary");

        system.shutdown();
        system.await_termination().unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }
}

fn summarise(pairs: &trading::Pairs) -> (EngineSummary, EngineSummary) {
    summaries(pairs).unwrap()[0]
}

//! A failure inside processing, one-way variant, with real clients (each
//! reuses one completion token for all its orders): the log refuses an
//! order's record after the order was matched in memory. The engine is
//! restarted, rebuilds its books from its log (which lacks the order) and
//! redoes the order before anything else, so every order still completes
//! exactly once and the standby stays a replica. An order that fails again
//! after the restart is given up: its client is told it failed and goes on
//! with its next order (no token left waiting); if it was the standby that
//! gave up, the standby lacks an order its primary has, and verification
//! says so. With a file that refuses every write (the log's segment is a
//! memory file sealed against growing, see `full_segment`), every order of
//! that engine is failed, in both log modes, and no client is left
//! waiting. A late completion for a failed
//! order never counts towards the client's next order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver as Channel};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::Duration;

use trading::client::{Answer, Client, ClientReport, Receiver};
use trading::messages::{ClientMsg, EngineMsg, Token};
use trading::verify::compare_pair;
use trading::{spawn_pairs, summaries, Pairs, RunConfig, Scenario, TxLog, Variant};
use troupe::{Actor, ActorRef, ActorSystem, Context, Props};

const PATIENCE: Duration = Duration::from_secs(20);

/// Appends refused on purpose so far (their panics, and those of the full
/// disk's failed appends, are not printed).
static REFUSED: AtomicUsize = AtomicUsize::new(0);

/// The tests count refusals, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn quiet_panics() -> MutexGuard<'static, ()> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = info.to_string();
            if text.contains("injected on purpose") {
                REFUSED.fetch_add(1, Ordering::SeqCst);
            } else if !text.contains("transaction log") {
                default(info);
            }
        }));
    });
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy, Debug)]
enum Victim {
    Primary,
    Standby,
}

/// What the clients and engines ended with.
struct Outcome {
    reports: Vec<ClientReport>,
    pairs: Vec<(
        trading::engine_core::EngineSummary,
        trading::engine_core::EngineSummary,
    )>,
    refused: usize,
}

/// How engine 0's victim fails.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Its next `n` appends are refused (injected).
    Refuse(u32),
    /// Its log's segment refuses every write, for good (`full_segment`).
    FullDisk,
}

/// Makes `dir` a journal whose only segment refuses every write, for good:
/// a memory file holding a new segment's header, sealed against growing
/// (the kernel refuses any write past its end, with `EPERM`, as a full
/// disk refuses one with `ENOSPC`), linked in as segment 0 through
/// `/proc/self/fd`. (`/dev/full` cannot be a segment: it reads as an empty
/// file, and the journal refuses a segment without its header.)
fn full_segment(dir: &std::path::Path) -> std::fs::File {
    use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};
    use std::io::Write;
    use std::os::fd::AsRawFd;

    let scratch = dir.with_extension("scratch");
    let options = troupe_journal::Options::default();
    drop(troupe_journal::Journal::open(&scratch, options).unwrap());
    let header = std::fs::read(scratch.join("00000000000000000000.log")).unwrap();
    std::fs::remove_dir_all(&scratch).unwrap();
    let mut file =
        std::fs::File::from(memfd_create("full-segment", MemfdFlags::ALLOW_SEALING).unwrap());
    file.write_all(&header).unwrap();
    fcntl_add_seals(&file, SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL).unwrap();
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    std::os::unix::fs::symlink(link, dir.join("00000000000000000000.log")).unwrap();
    file
}

/// Runs `scenario` on one-way actors with engine 0's `victim` failing as
/// `fault` says, and waits for every client.
fn run(txlog: TxLog, victim: Victim, fault: Fault, scenario: Scenario) -> Outcome {
    let root = std::env::temp_dir().join(format!(
        "trading-processing-failure-{}-{txlog}-{victim:?}-{fault:?}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    // Kept open until the run is over: the segment lives as long as it.
    let _full_segment = if let Fault::FullDisk = fault {
        let half = match victim {
            Victim::Primary => "primary",
            Victim::Standby => "standby",
        };
        let dir = root.join(format!("engine-0-{half}"));
        std::fs::create_dir_all(&dir).unwrap();
        Some(full_segment(&dir))
    } else {
        None
    };
    let config = RunConfig {
        variant: Variant::OneWay,
        scenario,
        txlog,
        log_root: Some(root.clone()),
        threads: 2,
        stealing: troupe::Stealing::default(),
        window: 1,
        timeout: PATIENCE,
    };
    let refused_before = REFUSED.load(Ordering::SeqCst);
    let system = ActorSystem::builder().threads(2).build().unwrap();
    let pairs: Pairs = spawn_pairs(&system, &config).unwrap();
    let engine = match victim {
        Victim::Primary => &pairs.primaries[0],
        Victim::Standby => &pairs.standbys[0],
    };
    if let Fault::Refuse(n) = fault {
        // Queued before any order: the victim's first appends are refused.
        engine.tell(EngineMsg::FailAppends(n));
    }

    let primaries: Arc<[ActorRef<EngineMsg>]> = pairs.primaries.clone().into();
    let receiver = system
        .spawn(Props::new(move || Receiver {
            primaries: primaries.clone(),
        }))
        .unwrap();
    let (tx, reports): (_, Channel<ClientReport>) = mpsc::channel();
    let clients: Vec<ActorRef<ClientMsg>> = (0..scenario.clients)
        .map(|i| {
            let (receiver, tx) = (receiver.clone(), tx.clone());
            system
                .spawn(Props::new(move || {
                    Client::new(i, receiver.clone(), Answer::Token, scenario, 1, tx.clone())
                }))
                .unwrap()
        })
        .collect();
    for c in &clients {
        c.tell(ClientMsg::Start);
    }
    let reports: Vec<ClientReport> = (0..clients.len())
        .map(|n| {
            reports.recv_timeout(PATIENCE).unwrap_or_else(|_| {
                panic!(
                    "{txlog}/{victim:?}/{fault:?}: only {n} of {} clients finished: \
                     a token was never completed",
                    clients.len()
                )
            })
        })
        .collect();
    let summaries = summaries(&pairs).unwrap();
    system.shutdown();
    system.await_termination().unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    Outcome {
        reports,
        pairs: summaries,
        refused: REFUSED.load(Ordering::SeqCst) - refused_before,
    }
}

fn scenario() -> Scenario {
    Scenario::new(3, 3 * 90).unwrap()
}

#[test]
fn an_order_whose_append_fails_is_redone_and_completes_once() {
    let _serial = quiet_panics();
    let scenario = scenario();
    for txlog in [TxLog::Buffered, TxLog::GroupCommit] {
        for victim in [Victim::Primary, Victim::Standby] {
            let out = run(txlog, victim, Fault::Refuse(1), scenario);
            let case = format!("{txlog}/{victim:?}");
            assert_eq!(out.refused, 1, "{case}: one append was refused");
            let completed: u64 = out.reports.iter().map(|r| r.latency_ns.len()).sum();
            let failed: u64 = out.reports.iter().map(|r| r.failed).sum();
            assert_eq!(
                (completed, failed),
                (scenario.orders(), 0),
                "{case}: every order completed, none failed"
            );
            let orders: u64 = out.pairs.iter().map(|(p, _)| p.orders).sum();
            let trades: u64 = out.pairs.iter().map(|(p, _)| p.trades).sum();
            assert_eq!(
                (orders, trades),
                (scenario.orders(), scenario.trades()),
                "{case}: each order matched once"
            );
            for (i, (p, s)) in out.pairs.iter().enumerate() {
                assert_eq!(compare_pair(i, p, s), None, "{case}");
            }
        }
    }
}

#[test]
fn an_order_that_fails_again_after_the_restart_is_reported_failed() {
    let _serial = quiet_panics();
    let scenario = scenario();
    for victim in [Victim::Primary, Victim::Standby] {
        let out = run(TxLog::Buffered, victim, Fault::Refuse(2), scenario);
        let case = format!("{victim:?}");
        assert_eq!(out.refused, 2, "{case}: the order and its redo refused");
        let completed: u64 = out.reports.iter().map(|r| r.latency_ns.len()).sum();
        let failed: u64 = out.reports.iter().map(|r| r.failed).sum();
        assert_eq!(
            (completed, failed),
            (scenario.orders() - 1, 1),
            "{case}: one order failed, its client was told and went on"
        );
        let (p, s) = &out.pairs[0];
        match victim {
            // The primary gave up before forwarding: neither engine has it.
            Victim::Primary => {
                assert_eq!(compare_pair(0, p, s), None);
                // Engines A, B and C get a third of the orders each.
                assert_eq!(p.orders + 1, scenario.orders() / 3);
            }
            // The primary has it, the standby does not: the limit that
            // docs/semantics.md states, and verification reports it.
            Victim::Standby => {
                assert_eq!(p.orders, s.orders + 1);
                assert!(compare_pair(0, p, s).is_some());
            }
        }
    }
}

#[test]
fn a_disk_that_refuses_every_write_fails_that_engines_orders_and_strands_no_client() {
    let _serial = quiet_panics();
    let scenario = scenario();
    // Engine 0 gets a third of the orders; each one fails, once.
    let engine_0 = scenario.orders() / 3;
    for txlog in [TxLog::Buffered, TxLog::GroupCommit] {
        let out = run(txlog, Victim::Primary, Fault::FullDisk, scenario);
        let completed: u64 = out.reports.iter().map(|r| r.latency_ns.len()).sum();
        let failed: u64 = out.reports.iter().map(|r| r.failed).sum();
        assert_eq!(
            (completed, failed),
            (scenario.orders() - engine_0, engine_0),
            "{txlog}"
        );
        if txlog == TxLog::Buffered {
            // Each order was given up by the primary before it forwarded
            // it: neither engine has any.
            let (p, s) = &out.pairs[0];
            assert_eq!((p.orders, s.orders), (0, 0));
        }
    }
}

/// Passes every client message to the test thread, in order.
struct Recorder(mpsc::Sender<&'static str>);

impl Actor for Recorder {
    type Msg = ClientMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        let _ = self.0.send(match msg {
            ClientMsg::Start => "marker",
            ClientMsg::Completed { id: 1 } => "completed 1",
            ClientMsg::Completed { .. } => "completed",
            ClientMsg::Failed { id: 1 } => "failed 1",
            ClientMsg::Failed { .. } => "failed",
        });
    }
}

#[test]
fn a_late_completion_for_a_failed_order_does_not_count_for_the_next_one() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let client = system
        .spawn(Props::new(move || Recorder(tx.clone())))
        .unwrap();
    let token = Arc::new(Token::new(client.clone()));
    let first = token.arm(1);
    first.fail(); // the primary gave the order up
    let second = token.arm(2); // the client goes on with its next order
    first.complete(); // the standby's completion of the first, late
    second.complete(); // one of the second order's two
    client.tell(ClientMsg::Start); // a marker: nothing may come before it
    second.complete(); // the other one
    let seen: Vec<_> = (0..3).map(|_| rx.recv_timeout(PATIENCE).unwrap()).collect();
    // Each end names its own order.
    assert_eq!(seen, ["failed 1", "marker", "completed"]);
    system.shutdown();
    system.await_termination().unwrap();
    assert!(rx.try_recv().is_err(), "nothing more");
}

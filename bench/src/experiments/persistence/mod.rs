//! Persistent actors (troupe-cluster's `persistence`) on the local
//! journal, in a temporary directory on the disk the bench runs from:
//!
//! - `persist-100-entities`: 100 entities each persist their share of the
//!   events, one command (one event) at a time as the API promises (an
//!   entity's next command waits for its previous append's fsync); all
//!   share the journal's group commit. `msgs_per_s` is events acknowledged
//!   per second.
//! - `recover-snapshot-tail`: one entity with `events` events, the last
//!   snapshot at 90% of them: a fresh activation takes its token (one
//!   fsync), loads the snapshot, replays the last 10% and answers. Time
//!   from spawn to its first answer, per recovered event.
//! - `recover-full-replay`: the same entity with its snapshot removed: all
//!   `events` replayed.
//! - `snapshot`: an entity whose state is `state_entries` numbers saves a
//!   snapshot on demand; time per snapshot until it is durable (encode,
//!   write, fsync, rename, directory fsync).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::prelude::*;
use troupe_cluster::persistence::{
    self, Effect, Journal, LocalJournal, Persistent, PersistentActor, PersistentContext,
};

mod experiment;

pub use experiment::Persistence;

use crate::report::Row;
use crate::runner::{self, expect_eq, RunOptions, Scale, Workload, WorkloadError};
use crate::shared::{run_experiment, SystemGuard};

/// The experiment's name in tables and JSON.
pub const EXPERIMENT: &str = "persistence";

const WAIT: Duration = Duration::from_secs(120);

/// Sizes of the persistence benchmarks.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Entities persisting at once.
    pub entities: usize,
    /// Events each entity persists per run.
    pub events_per_entity: u64,
    /// Events of the recovered entity.
    pub replay_events: u64,
    /// Numbers in the snapshotted state.
    pub state_entries: usize,
    /// Snapshots per run.
    pub snapshots: u64,
}

impl Settings {
    /// The sizes for a scale (the 1,000,000 events by default).
    pub fn for_scale(scale: Scale) -> Self {
        match scale {
            Scale::Quick => Settings {
                entities: 100,
                events_per_entity: 100,
                replay_events: 100_000,
                state_entries: 10_000,
                snapshots: 10,
            },
            Scale::Default | Scale::Full => Settings {
                entities: 100,
                events_per_entity: 1_000,
                replay_events: 1_000_000,
                state_entries: 10_000,
                snapshots: 50,
            },
        }
    }
}

fn err(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::new(e.to_string())
}

/// Counts acknowledged commands down to zero.
#[derive(Default)]
struct Countdown {
    left: Mutex<u64>,
    zero: Condvar,
}

impl Countdown {
    fn set(&self, n: u64) {
        *self.left.lock().unwrap_or_else(|e| e.into_inner()) = n;
    }
    fn tick(&self) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        *left -= 1;
        if *left == 0 {
            self.zero.notify_all();
        }
    }
    fn wait(&self) -> Result<(), WorkloadError> {
        let left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        let (left, timeout) = self
            .zero
            .wait_timeout_while(left, WAIT, |n| *n > 0)
            .unwrap_or_else(|e| e.into_inner());
        if timeout.timed_out() {
            return Err(err(format!("{} commands unacknowledged after {WAIT:?}", *left)));
        }
        Ok(())
    }
}

enum Cmd {
    /// Persist one deposit; tick the countdown once durable.
    Deposit(u64),
    /// Persist `n` deposits in one append.
    DepositMany(u64, ReplyTo<()>),
    /// Save a snapshot; answer once it is queued.
    Snapshot(ReplyTo<()>),
    /// The event count and balance.
    Get(ReplyTo<(u64, u64)>),
}

#[derive(Serialize, Deserialize)]
struct Deposited(u64);

/// An account whose state may carry a list of numbers (the snapshot row's
/// state size).
#[derive(Default, Serialize, Deserialize)]
struct Balance {
    events: u64,
    total: u64,
    entries: Vec<u64>,
}

struct Account {
    id: String,
    done: Arc<Countdown>,
}

impl PersistentActor for Account {
    type Command = Cmd;
    type Event = Deposited;
    type State = Balance;

    fn persistence_id(&self) -> String {
        self.id.clone()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        state: &Balance,
        cmd: Cmd,
    ) -> Effect<Self> {
        match cmd {
            Cmd::Deposit(n) => {
                let done = self.done.clone();
                Effect::persist(Deposited(n)).then(move |_| done.tick())
            }
            Cmd::DepositMany(n, r) => {
                Effect::persist_all((0..n).map(Deposited)).then_reply(r, |_| ())
            }
            Cmd::Snapshot(r) => Effect::none().and_snapshot().then(move |_| {
                r.reply(());
            }),
            Cmd::Get(r) => Effect::reply(r, (state.events, state.total)),
        }
    }

    fn apply(state: &mut Balance, Deposited(n): &Deposited) {
        state.events += 1;
        state.total += n;
    }
}

/// A journal in a fresh directory on the disk the bench runs from.
fn journal() -> Result<(tempfile::TempDir, Arc<LocalJournal>), WorkloadError> {
    let dir = tempfile::tempdir().map_err(err)?;
    let journal = Arc::new(LocalJournal::open(dir.path()).map_err(err)?);
    Ok((dir, journal))
}

fn system(name: &str) -> Result<SystemGuard, WorkloadError> {
    Ok(SystemGuard(
        ActorSystem::builder().name(name).build().map_err(err)?,
    ))
}

fn props(id: String, journal: &Arc<LocalJournal>, done: &Arc<Countdown>) -> Props<Persistent<Account>> {
    let journal: Arc<dyn Journal> = journal.clone();
    let done = done.clone();
    Props::new(move || {
        Persistent::new(
            Account {
                id: id.clone(),
                done: done.clone(),
            },
            journal.clone(),
        )
    })
}

fn persist_workload(s: Settings) -> Workload {
    Workload::with_setup("persist-100-entities", move || {
        let (dir, journal) = journal()?;
        let guard = system("persist")?;
        let done = Arc::new(Countdown::default());
        let entities = (0..s.entities)
            .map(|i| persistence::spawn(&guard.0, props(format!("acct-{i}"), &journal, &done)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        Ok(move || {
            let _keep = (&dir, &guard);
            let events = s.entities as u64 * s.events_per_entity;
            done.set(events);
            let clock = runner::Stopwatch::start();
            for n in 0..s.events_per_entity {
                for e in &entities {
                    e.tell(Cmd::Deposit(n));
                }
            }
            done.wait()?;
            let sample = clock.stop(events);
            expect_eq("stash drops", 0, journal.counters().stash_dropped())?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("entities", s.entities)
    .param("events", s.entities as u64 * s.events_per_entity)
    .param("durability", "group commit")
}

/// Writes `events` events for one entity, with a snapshot at 90%.
fn recovery_setup(events: u64) -> Result<(tempfile::TempDir, Arc<LocalJournal>), WorkloadError> {
    let (dir, journal) = journal()?;
    let guard = system("recovery-setup")?;
    let done = Arc::new(Countdown::default());
    let account = persistence::spawn(&guard.0, props("big".into(), &journal, &done)).map_err(err)?;
    let batch = 1_000;
    let snapshot_at = events / 10 * 9;
    let mut written = 0;
    while written < events {
        let n = batch.min(events - written);
        account
            .ask(|r| Cmd::DepositMany(n, r), WAIT)
            .wait()
            .map_err(err)?;
        written += n;
        if written == snapshot_at {
            account.ask(Cmd::Snapshot, WAIT).wait().map_err(err)?;
        }
    }
    journal.flush_snapshots();
    drop(guard);
    Ok((dir, journal))
}

fn recover_workload(s: Settings, keep_snapshot: bool) -> Workload {
    let variant = if keep_snapshot {
        "recover-snapshot-tail"
    } else {
        "recover-full-replay"
    };
    Workload::with_setup(variant, move || {
        let (dir, journal) = recovery_setup(s.replay_events)?;
        if !keep_snapshot {
            std::fs::remove_file(dir.path().join("snapshots/big.snap")).map_err(err)?;
        }
        let guard = system("recover")?;
        let done = Arc::new(Countdown::default());
        Ok(move || {
            let _keep = &dir;
            let clock = Instant::now();
            let account = persistence::spawn(&guard.0, props("big".into(), &journal, &done))
                .map_err(err)?;
            let (events, _) = account.ask(Cmd::Get, WAIT).wait().map_err(err)?;
            let elapsed = clock.elapsed();
            expect_eq("recovered events", s.replay_events, events)?;
            Ok(runner::Sample {
                msgs: s.replay_events,
                elapsed,
            })
        })
    })
    .param("runtime", "troupe")
    .param("entities", 1)
    .param("events", s.replay_events)
    .param(
        "snapshot",
        if keep_snapshot { "at 90%" } else { "none" },
    )
}

/// An actor whose state is a list of numbers, to snapshot.
struct Big;

#[derive(Serialize, Deserialize)]
struct Filled(u64);

enum BigCmd {
    Fill(u64, ReplyTo<()>),
    Snapshot(ReplyTo<()>),
}

impl PersistentActor for Big {
    type Command = BigCmd;
    type Event = Filled;
    type State = Balance;

    fn persistence_id(&self) -> String {
        "snapshotted".into()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        _state: &Balance,
        cmd: BigCmd,
    ) -> Effect<Self> {
        match cmd {
            BigCmd::Fill(n, r) => Effect::persist(Filled(n)).then_reply(r, |_| ()),
            BigCmd::Snapshot(r) => Effect::none().and_snapshot().then(move |_| {
                r.reply(());
            }),
        }
    }

    fn apply(state: &mut Balance, Filled(n): &Filled) {
        state.events += 1;
        state.entries.extend(0..*n);
    }
}

fn snapshot_workload(s: Settings) -> Workload {
    Workload::with_setup("snapshot", move || {
        let (dir, journal) = journal()?;
        let guard = system("snapshot")?;
        let shared: Arc<dyn Journal> = journal.clone();
        let big = persistence::spawn(
            &guard.0,
            Props::new(move || Persistent::new(Big, shared.clone())),
        )
        .map_err(err)?;
        let entries = s.state_entries as u64;
        big.ask(|r| BigCmd::Fill(entries, r), WAIT).wait().map_err(err)?;
        Ok(move || {
            let _keep = (&dir, &guard);
            let mut elapsed = Duration::ZERO;
            for _ in 0..s.snapshots {
                // One empty event first, so each snapshot is newer than the
                // last (an older or equal one is not written); not timed.
                big.ask(|r| BigCmd::Fill(0, r), WAIT).wait().map_err(err)?;
                let clock = Instant::now();
                big.ask(BigCmd::Snapshot, WAIT).wait().map_err(err)?;
                journal.flush_snapshots();
                elapsed += clock.elapsed();
            }
            Ok(runner::Sample {
                msgs: s.snapshots,
                elapsed,
            })
        })
    })
    .param("runtime", "troupe")
    .param("entities", 1)
    .param("state_entries", s.state_entries)
    .param("events", s.snapshots)
}

/// Runs the persistence benchmarks.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let workloads = vec![
        persist_workload(*settings),
        recover_workload(*settings, true),
        recover_workload(*settings, false),
        snapshot_workload(*settings),
    ];
    run_experiment(EXPERIMENT, workloads, options)
}

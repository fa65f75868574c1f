//! Persistent actors (troupe-cluster's `persistence`) on the local
//! journal, in a temporary directory on the disk the bench runs from, and
//! on the JetStream journal, on a nats-server of the bench's own (rows
//! `jetstream-*`, smaller: every append waits for the server's
//! acknowledgement, one in flight per entity):
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
//! - `recover-full-replay`: the same entity without a snapshot: all
//!   `events` replayed.
//! - `snapshot`: an entity whose state is `state_entries` numbers saves a
//!   snapshot on demand; time per snapshot until it is durable (encode,
//!   write, fsync, rename, directory fsync).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::prelude::*;
use troupe_cluster::persistence::{
    self, Effect, JetStreamJournal, Journal, LocalJournal, Persistent, PersistentActor,
    PersistentContext,
};
use troupe_remote::launcher::NatsServer;

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
    /// Events each entity persists per run on JetStream.
    pub jetstream_events_per_entity: u64,
    /// Events of the entity recovered from JetStream.
    pub jetstream_replay_events: u64,
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
                jetstream_events_per_entity: 10,
                jetstream_replay_events: 10_000,
            },
            Scale::Default | Scale::Full => Settings {
                entities: 100,
                events_per_entity: 1_000,
                replay_events: 1_000_000,
                state_entries: 10_000,
                snapshots: 50,
                jetstream_events_per_entity: 100,
                jetstream_replay_events: 100_000,
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
    /// As `Deposit`, without holding back the next commands
    /// (`persist_async`).
    DepositAsync(u64),
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
            Cmd::DepositAsync(n) => {
                let done = self.done.clone();
                Effect::persist_async(Deposited(n)).then(move |_| done.tick())
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

/// Which journal a row uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Local,
    JetStream,
}

impl Kind {
    /// The row's name: `base` for the local journal, `jetstream-base`.
    fn variant(self, base: &str) -> String {
        match self {
            Kind::Local => base.to_string(),
            Kind::JetStream => format!("jetstream-{base}"),
        }
    }
}

/// A row's journal and what it lives in (dropped together: the journal
/// first, then its runtime, then the server or the directory).
struct Store {
    journal: Arc<dyn Journal>,
    local: Option<Arc<LocalJournal>>,
    _runtime: Option<tokio::runtime::Runtime>,
    _server: Option<NatsServer>,
    _dir: Option<tempfile::TempDir>,
}

impl Store {
    /// A fresh local journal in a temporary directory, or a JetStream
    /// journal on a fresh nats-server.
    fn open(kind: Kind) -> Result<Store, WorkloadError> {
        match kind {
            Kind::Local => {
                let dir = tempfile::tempdir().map_err(err)?;
                let local = Arc::new(LocalJournal::open(dir.path()).map_err(err)?);
                Ok(Store {
                    journal: local.clone(),
                    local: Some(local),
                    _runtime: None,
                    _server: None,
                    _dir: Some(dir),
                })
            }
            Kind::JetStream => {
                let server = crate::nats::binary()
                    .and_then(|b| NatsServer::launch(&b, &[]))
                    .map_err(|why| WorkloadError::new(format!("no nats-server: {why}")))?;
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .map_err(err)?;
                let journal = runtime.block_on(async {
                    let client = async_nats::connect(server.url()).await.map_err(err)?;
                    JetStreamJournal::open(client, "bench", 1).await.map_err(err)
                })?;
                Ok(Store {
                    journal: Arc::new(journal),
                    local: None,
                    _runtime: Some(runtime),
                    _server: Some(server),
                    _dir: None,
                })
            }
        }
    }

    /// Waits until the snapshot of `id` at `seq_nr` is durable.
    fn settle_snapshot(&self, id: &str, seq_nr: u64) -> Result<(), WorkloadError> {
        if let Some(local) = &self.local {
            local.flush_snapshots();
            return Ok(());
        }
        // The JetStream journal acknowledges a snapshot's write to the
        // actor, not to us: look until it is stored (a round trip each).
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if self.journal.load_snapshot(id).map_err(err)?.map(|s| s.seq_nr) == Some(seq_nr) {
                return Ok(());
            }
        }
        Err(WorkloadError::new(format!("the snapshot of {id} at {seq_nr} was not stored")))
    }
}

fn system(name: &str) -> Result<SystemGuard, WorkloadError> {
    Ok(SystemGuard(
        ActorSystem::builder().name(name).build().map_err(err)?,
    ))
}

fn props(id: String, journal: &Arc<dyn Journal>, done: &Arc<Countdown>) -> Props<Persistent<Account>> {
    let journal = journal.clone();
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

/// How the persist rows' commands persist.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Persist {
    /// `Effect::persist`: an entity's next command waits for the append.
    Waiting,
    /// `Effect::persist_async`: an entity's commands go on while its
    /// appends are in flight.
    Pipelined,
}

fn persist_workload(s: Settings, kind: Kind, persist: Persist) -> Workload {
    let per_entity = match kind {
        Kind::Local => s.events_per_entity,
        Kind::JetStream => s.jetstream_events_per_entity,
    };
    let events = s.entities as u64 * per_entity;
    let base = match persist {
        Persist::Waiting => "persist-100-entities",
        Persist::Pipelined => "persist-async-100-entities",
    };
    Workload::with_setup(kind.variant(base), move || {
        let store = Store::open(kind)?;
        let guard = system("persist")?;
        let done = Arc::new(Countdown::default());
        let entities = (0..s.entities)
            .map(|i| persistence::spawn(&guard.0, props(format!("acct-{i}"), &store.journal, &done)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        Ok(move || {
            // The whole store, not only its journal: its directory or its
            // server must live as long as the row (closures capture the
            // fields they name, and would drop the rest).
            let _keep = (&guard, &store);
            done.set(events);
            let clock = runner::Stopwatch::start();
            for n in 0..per_entity {
                for e in &entities {
                    e.tell(match persist {
                        Persist::Waiting => Cmd::Deposit(n),
                        Persist::Pipelined => Cmd::DepositAsync(n),
                    });
                }
            }
            done.wait()?;
            let sample = clock.stop(events);
            expect_eq("stash drops", 0, store.journal.counters().stash_dropped())?;
            Ok(sample)
        })
    })
    .param("runtime", "troupe")
    .param("journal", format!("{kind:?}").to_lowercase())
    .param(
        "persist",
        match persist {
            Persist::Waiting => "persist",
            Persist::Pipelined => "persist_async",
        },
    )
    .param("entities", s.entities)
    .param("events", events)
    .param(
        "durability",
        match kind {
            Kind::Local => "group commit",
            Kind::JetStream => "JetStream ack (file store, 1 replica)",
        },
    )
}

/// Writes `events` events for one entity, with a snapshot at 90% if
/// `snapshot`.
fn recovery_setup(events: u64, kind: Kind, snapshot: bool) -> Result<Store, WorkloadError> {
    let store = Store::open(kind)?;
    let guard = system("recovery-setup")?;
    let done = Arc::new(Countdown::default());
    let account =
        persistence::spawn(&guard.0, props("big".into(), &store.journal, &done)).map_err(err)?;
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
        if snapshot && written == snapshot_at {
            account.ask(Cmd::Snapshot, WAIT).wait().map_err(err)?;
            store.settle_snapshot("big", snapshot_at)?;
        }
    }
    drop(guard);
    Ok(store)
}

fn recover_workload(s: Settings, kind: Kind, keep_snapshot: bool) -> Workload {
    let variant = kind.variant(if keep_snapshot {
        "recover-snapshot-tail"
    } else {
        "recover-full-replay"
    });
    let events = match kind {
        Kind::Local => s.replay_events,
        Kind::JetStream => s.jetstream_replay_events,
    };
    Workload::with_setup(variant, move || {
        let store = recovery_setup(events, kind, keep_snapshot)?;
        let guard = system("recover")?;
        let done = Arc::new(Countdown::default());
        Ok(move || {
            let _keep = &store;
            let clock = Instant::now();
            let account = persistence::spawn(&guard.0, props("big".into(), &store.journal, &done))
                .map_err(err)?;
            let (recovered, _) = account.ask(Cmd::Get, WAIT).wait().map_err(err)?;
            let elapsed = clock.elapsed();
            expect_eq("recovered events", events, recovered)?;
            Ok(runner::Sample {
                msgs: events,
                elapsed,
            })
        })
    })
    .param("runtime", "troupe")
    .param("journal", format!("{kind:?}").to_lowercase())
    .param("entities", 1)
    .param("events", events)
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
        let store = Store::open(Kind::Local)?;
        let guard = system("snapshot")?;
        let shared = store.journal.clone();
        let big = persistence::spawn(
            &guard.0,
            Props::new(move || Persistent::new(Big, shared.clone())),
        )
        .map_err(err)?;
        let entries = s.state_entries as u64;
        big.ask(|r| BigCmd::Fill(entries, r), WAIT).wait().map_err(err)?;
        Ok(move || {
            let _keep = (&guard, &store);
            let mut elapsed = Duration::ZERO;
            for _ in 0..s.snapshots {
                // One empty event first, so each snapshot is newer than the
                // last (an older or equal one is not written); not timed.
                big.ask(|r| BigCmd::Fill(0, r), WAIT).wait().map_err(err)?;
                let clock = Instant::now();
                big.ask(BigCmd::Snapshot, WAIT).wait().map_err(err)?;
                if let Some(local) = &store.local {
                    local.flush_snapshots();
                }
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
    let mut workloads = vec![
        persist_workload(*settings, Kind::Local, Persist::Waiting),
        persist_workload(*settings, Kind::Local, Persist::Pipelined),
        recover_workload(*settings, Kind::Local, true),
        recover_workload(*settings, Kind::Local, false),
        snapshot_workload(*settings),
    ];
    // The JetStream rows need a nats-server: without one they are left
    // out, said so, as the remote experiment is.
    match crate::nats::binary() {
        Ok(_) => workloads.extend([
            persist_workload(*settings, Kind::JetStream, Persist::Waiting),
            persist_workload(*settings, Kind::JetStream, Persist::Pipelined),
            recover_workload(*settings, Kind::JetStream, true),
            recover_workload(*settings, Kind::JetStream, false),
        ]),
        Err(why) => eprintln!("persistence: JetStream rows skipped, no nats-server: {why}"),
    }
    run_experiment(EXPERIMENT, workloads, options)
}

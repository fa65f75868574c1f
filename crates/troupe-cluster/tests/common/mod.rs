//! The test actor shared by the persistence tests: a ledger whose state is
//! the list of values it was given, so a test can see order and exactness,
//! not only a total.

// Each test file uses a part of it; its items are test scaffolding, not API.
#![allow(dead_code, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use troupe::{ActorRef, ActorSystem, Props, ReplyTo};
use troupe_cluster::persistence::{
    self, Effect, Journal, LocalJournal, Msg, PersistenceError, Persistent, PersistentActor,
    PersistentContext,
};

pub const WAIT: Duration = Duration::from_secs(10);

pub enum Cmd {
    /// Persist `n`; answer `(n, values after it)` to `to`.
    Add(u64, ActorRef<(u64, usize)>),
    /// Persist `n`, answer the new length.
    AddAsk(u64, ReplyTo<usize>),
    /// Persist several values as one unit.
    AddAll(Vec<u64>, ReplyTo<usize>),
    /// An event that cannot be serialised.
    Poison(ReplyTo<usize>),
    /// Persist a blob of bytes (an event of any size), answer the new
    /// length.
    AddBlob(Vec<u8>, ReplyTo<usize>),
    /// Persist `n`; answer the new length, or the error that refused or
    /// failed the event.
    AddResult(u64, ReplyTo<Result<usize, PersistenceError>>),
    /// As `AddBlob`, answering the error too.
    BlobResult(Vec<u8>, ReplyTo<Result<usize, PersistenceError>>),
    /// An event that cannot be serialised, answering the error.
    PoisonResult(ReplyTo<Result<usize, PersistenceError>>),
    /// Persist `n` without holding back the next commands
    /// (`persist_async`); answer the new length, or the error.
    AddAsync(u64, ReplyTo<Result<usize, PersistenceError>>),
    Get(ReplyTo<Vec<u64>>),
    /// Persist nothing, save a snapshot now.
    Snapshot(ReplyTo<u64>),
}

#[derive(Serialize, Deserialize, Debug)]
pub enum Event {
    Added(u64),
    Poison(#[serde(serialize_with = "refuse")] u8),
    /// Counts as a value of 0 in the state.
    Blob(Vec<u8>),
}

fn refuse<S: Serializer>(_: &u8, _: S) -> Result<S::Ok, S::Error> {
    Err(serde::ser::Error::custom("this event never serialises"))
}

/// What the ledger reports to a test: recovery and failures.
#[derive(Debug, Clone)]
pub enum Report {
    Recovered { seq_nr: u64, values: usize },
    Failed(String),
    Fenced,
}

pub struct Ledger {
    pub id: String,
    pub reports: Option<ActorRef<Report>>,
}

impl PersistentActor for Ledger {
    type Command = Cmd;
    type Event = Event;
    type State = Vec<u64>;

    fn persistence_id(&self) -> String {
        self.id.clone()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        state: &Vec<u64>,
        cmd: Cmd,
    ) -> Effect<Self> {
        match cmd {
            Cmd::Add(n, to) => {
                Effect::persist(Event::Added(n)).then(move |s: &Vec<u64>| to.tell((n, s.len())))
            }
            Cmd::AddAsk(n, r) => Effect::persist(Event::Added(n)).then_reply(r, Vec::len),
            Cmd::AddAll(ns, r) => {
                Effect::persist_all(ns.into_iter().map(Event::Added)).then_reply(r, Vec::len)
            }
            Cmd::Poison(r) => Effect::persist(Event::Poison(0)).then_reply(r, Vec::len),
            Cmd::AddBlob(b, r) => Effect::persist(Event::Blob(b)).then_reply(r, Vec::len),
            Cmd::AddResult(n, r) => Effect::persist(Event::Added(n)).then_reply_result(r, Vec::len),
            Cmd::BlobResult(b, r) => Effect::persist(Event::Blob(b)).then_reply_result(r, Vec::len),
            Cmd::PoisonResult(r) => {
                Effect::persist(Event::Poison(0)).then_reply_result(r, Vec::len)
            }
            Cmd::AddAsync(n, r) => {
                Effect::persist_async(Event::Added(n)).then_reply_result(r, Vec::len)
            }
            Cmd::Get(r) => Effect::reply(r, state.clone()),
            Cmd::Snapshot(r) => {
                let len = state.len() as u64;
                Effect::none().and_snapshot().then(move |_| {
                    r.reply(len);
                })
            }
        }
    }

    fn apply(state: &mut Vec<u64>, event: &Event) {
        match event {
            Event::Added(n) => state.push(*n),
            Event::Blob(_) => state.push(0),
            Event::Poison(_) => {}
        }
    }

    fn recovered(&mut self, state: &Vec<u64>, seq_nr: u64) {
        if let Some(r) = &self.reports {
            r.tell(Report::Recovered {
                seq_nr,
                values: state.len(),
            });
        }
    }

    fn failed(&mut self, error: &PersistenceError) {
        if let Some(r) = &self.reports {
            r.tell(match error {
                PersistenceError::Fenced { .. } => Report::Fenced,
                other => Report::Failed(other.to_string()),
            });
        }
    }
}

pub fn journal(dir: &std::path::Path) -> Arc<dyn Journal> {
    Arc::new(LocalJournal::open(dir).unwrap())
}

/// A ledger that restarts through its supervisor after a failed write
/// (`restart_on_failure`), with a short backoff.
pub fn restarting_props(
    id: &str,
    journal: &Arc<dyn Journal>,
    reports: Option<ActorRef<Report>>,
) -> Props<Persistent<Ledger>> {
    let (id, journal) = (id.to_string(), journal.clone());
    Props::new(move || {
        let ledger = Ledger {
            id: id.clone(),
            reports: reports.clone(),
        };
        Persistent::new(ledger, journal.clone()).restart_on_failure()
    })
    .supervisor(
        troupe::SupervisorStrategy::restart()
            .with_backoff(Duration::from_millis(10), Duration::from_millis(100)),
    )
}

pub fn props(
    id: &str,
    journal: &Arc<dyn Journal>,
    reports: Option<ActorRef<Report>>,
    snapshot_every: Option<u64>,
) -> Props<Persistent<Ledger>> {
    let (id, journal) = (id.to_string(), journal.clone());
    Props::new(move || {
        let ledger = Ledger {
            id: id.clone(),
            reports: reports.clone(),
        };
        let p = Persistent::new(ledger, journal.clone());
        match snapshot_every {
            Some(n) => p.snapshot_every(n),
            None => p,
        }
    })
}

/// Spawns a ledger and returns its command ref and its own ref.
pub fn spawn(
    system: &ActorSystem,
    props: Props<Persistent<Ledger>>,
) -> (ActorRef<Cmd>, ActorRef<Msg<Cmd>>) {
    let actor = system.spawn(props).unwrap();
    (persistence::command_ref(system, &actor), actor)
}

/// A tokio runtime for a node's NATS client and journal (two workers).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A journal call's answer, as [`start`] hands it over.
pub type Answer<T> = std::sync::mpsc::Receiver<Result<T, PersistenceError>>;

/// Starts a callback-style journal call; its answer comes on the receiver.
pub fn start<T: Send + 'static>(
    call: impl FnOnce(Box<dyn FnOnce(Result<T, PersistenceError>) + Send>),
) -> Answer<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    call(Box::new(move |r| {
        let _ = tx.send(r);
    }));
    rx
}

pub fn system() -> ActorSystem {
    ActorSystem::builder().threads(2).build().unwrap()
}

pub fn get(ledger: &ActorRef<Cmd>) -> Vec<u64> {
    ledger.ask(Cmd::Get, WAIT).wait().unwrap()
}

pub fn stop(system: ActorSystem) {
    troupe_testkit::terminate(&system, WAIT);
}

/// Waits (up to 30 s) until each of `nodes` hears all of them (the
/// sharding tests' three nodes in one process).
pub async fn hear_each_other(nodes: &[&troupe_remote::Node]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while nodes.iter().any(|n| n.members().len() < nodes.len()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the nodes did not hear each other"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

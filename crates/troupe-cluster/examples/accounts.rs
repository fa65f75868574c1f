//! Bank accounts with event sourcing, in one process: deposits,
//! withdrawals and transfers between persistent accounts on a local
//! journal; then the system is stopped and started again, and every
//! balance comes back from the journal (a snapshot every 100 events plus
//! the tail).
//!
//! Run: `cargo run -p troupe-cluster --example accounts [directory]`
//! (a temporary directory by default; give one to see the balances
//! survive between runs).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{ActorRef, ActorSystem, Props, ReplyTo};
use troupe_cluster::persistence::{
    self, Effect, Journal, LocalJournal, Persistent, PersistentActor, PersistentContext,
};

const T: Duration = Duration::from_secs(10);

enum Command {
    Deposit(u64, ReplyTo<u64>),
    Withdraw(u64, ReplyTo<Result<u64, String>>),
    Balance(ReplyTo<u64>),
}

#[derive(Debug, Serialize, Deserialize)]
enum Event {
    Deposited(u64),
    Withdrawn(u64),
}

#[derive(Default, Serialize, Deserialize)]
struct State {
    balance: u64,
    operations: u64,
}

struct Account {
    number: u32,
}

impl PersistentActor for Account {
    type Command = Command;
    type Event = Event;
    type State = State;

    fn persistence_id(&self) -> String {
        format!("account-{}", self.number)
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        state: &State,
        command: Command,
    ) -> Effect<Self> {
        match command {
            Command::Deposit(n, reply) => {
                Effect::persist(Event::Deposited(n)).then_reply(reply, |s: &State| s.balance)
            }
            Command::Withdraw(n, reply) if n > state.balance => Effect::reply(
                reply,
                Err(format!("insufficient funds: balance {}", state.balance)),
            ),
            Command::Withdraw(n, reply) => {
                Effect::persist(Event::Withdrawn(n)).then_reply(reply, |s: &State| Ok(s.balance))
            }
            Command::Balance(reply) => Effect::reply(reply, state.balance),
        }
    }

    fn apply(state: &mut State, event: &Event) {
        state.operations += 1;
        match event {
            Event::Deposited(n) => state.balance += n,
            Event::Withdrawn(n) => state.balance -= n,
        }
    }

    fn recovered(&mut self, state: &State, seq_nr: u64) {
        if seq_nr > 0 {
            println!(
                "account-{} recovered: balance {} after {} events",
                self.number, state.balance, seq_nr
            );
        }
    }
}

fn open_accounts(system: &ActorSystem, journal: &Arc<dyn Journal>) -> Vec<ActorRef<Command>> {
    (0..3)
        .map(|number| {
            let journal = journal.clone();
            let props = Props::new(move || {
                Persistent::new(Account { number }, journal.clone()).snapshot_every(100)
            })
            .name(format!("account-{number}"));
            persistence::spawn(system, props).expect("spawn an account")
        })
        .collect()
}

/// A transfer: withdraw (durable) then deposit (durable). A crash between
/// the two would lose the money in flight; a real ledger would persist the
/// transfer itself first and complete it on recovery.
fn transfer(from: &ActorRef<Command>, to: &ActorRef<Command>, amount: u64) -> Result<(), String> {
    from.ask(|r| Command::Withdraw(amount, r), T)
        .wait()
        .map_err(|e| e.to_string())??;
    to.ask(|r| Command::Deposit(amount, r), T)
        .wait()
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn balances(accounts: &[ActorRef<Command>]) -> Vec<u64> {
    accounts
        .iter()
        .map(|a| a.ask(Command::Balance, T).wait().expect("balance"))
        .collect()
}

fn main() {
    let temporary = tempfile::tempdir().expect("a temporary directory");
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| temporary.path().to_path_buf(), Into::into);
    let journal: Arc<dyn Journal> = Arc::new(LocalJournal::open(&dir).expect("open the journal"));

    let system = ActorSystem::builder().build().expect("an actor system");
    let accounts = open_accounts(&system, &journal);
    println!("balances at start: {:?}", balances(&accounts));
    for a in &accounts {
        a.ask(|r| Command::Deposit(1_000, r), T)
            .wait()
            .expect("deposit");
    }
    for i in 0..300u64 {
        let (from, to) = (
            &accounts[(i % 3) as usize],
            &accounts[((i + 1) % 3) as usize],
        );
        if let Err(why) = transfer(from, to, 1 + i % 7) {
            println!("transfer {i} refused: {why}");
        }
    }
    if let Err(why) = transfer(&accounts[0], &accounts[1], 1_000_000) {
        println!("a large transfer is refused: {why}");
    }
    let before = balances(&accounts);
    println!("balances before the stop: {before:?}");
    system.shutdown();
    system.await_termination().expect("stopped");

    let system = ActorSystem::builder().build().expect("an actor system");
    let accounts = open_accounts(&system, &journal);
    let after = balances(&accounts);
    println!("balances after recovery:  {after:?}");
    assert_eq!(before, after, "recovery must give the same balances");
    println!(
        "fenced: {}, stash drops: {}, failures: {}",
        journal.counters().fenced(),
        journal.counters().stash_dropped(),
        journal.counters().failures()
    );
    system.shutdown();
    system.await_termination().expect("stopped");
}

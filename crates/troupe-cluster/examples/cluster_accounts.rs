//! Sharded bank accounts with event sourcing, on three nodes: each account
//! is an entity of the `account` type, started on the node that owns its
//! shard when its first command arrives, with its events in a JetStream
//! journal that every node reads. Deposits and withdrawals go in through
//! all three nodes; then one node leaves, its shards move to the other
//! two, and its accounts come back there from the journal with the same
//! balances.
//!
//! The three nodes run in this process (each its own actor system and
//! troupe-remote node), so the example runs alone; in production each is
//! its own process or host, with the same code.
//!
//! Run: `cargo run -p troupe-cluster --example cluster_accounts [nats url]`.
//! Without a URL it starts a nats-server of its own (JetStream on): the
//! binary `NATS_SERVER` names, or the first on `PATH`; in this repository,
//! `NATS_SERVER=$(scripts/nats-server.sh)` gives it the pinned one.
//!
//! In a crate of your own (this file as `src/main.rs`) it needs
//! troupe-remote's feature `launcher`, for that server: guide page 14
//! (`docs/guide/`) gives the dependency lines.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, ReplyTo};
use troupe_cluster::persistence::{
    Effect, JetStreamJournal, Journal, PersistentActor, PersistentContext, PersistentSettings,
};
use troupe_cluster::sharding::{ShardRegion, ShardingSettings};
use troupe_remote::{Node, RemoteConfig, RemoteMessage};

const T: Duration = Duration::from_secs(10);

/// What an account is asked, from any node: it crosses the network, so it
/// is serialisable, reply handles included.
#[derive(Serialize, Deserialize)]
enum AccountCmd {
    Deposit(u64, ReplyTo<u64>),
    Withdraw(u64, ReplyTo<Result<u64, String>>),
    /// The balance and the node the account runs on.
    Balance(ReplyTo<(u64, String)>),
}

impl RemoteMessage for AccountCmd {
    const TAG: &'static str = "example.AccountCmd";
}

#[derive(Serialize, Deserialize)]
enum Event {
    Deposited(u64),
    Withdrawn(u64),
}

struct Account {
    id: String,
    node: String,
}

impl PersistentActor for Account {
    type Command = AccountCmd;
    type Event = Event;
    type State = u64;

    fn persistence_id(&self) -> String {
        self.id.clone()
    }

    fn handle(
        &mut self,
        _ctx: &mut PersistentContext<'_, Self>,
        balance: &u64,
        cmd: AccountCmd,
    ) -> Effect<Self> {
        match cmd {
            AccountCmd::Deposit(n, reply) => {
                Effect::persist(Event::Deposited(n)).then_reply(reply, |b: &u64| *b)
            }
            AccountCmd::Withdraw(n, reply) if n > *balance => {
                Effect::reply(reply, Err(format!("{} has only {balance}", self.id)))
            }
            AccountCmd::Withdraw(n, reply) => {
                Effect::persist(Event::Withdrawn(n)).then_reply(reply, |b: &u64| Ok(*b))
            }
            AccountCmd::Balance(reply) => Effect::reply(reply, (*balance, self.node.clone())),
        }
    }

    fn apply(balance: &mut u64, event: &Event) {
        match event {
            Event::Deposited(n) => *balance += n,
            Event::Withdrawn(n) => *balance -= n,
        }
    }
}

/// One node: its actor system, its NATS node and its region of accounts.
struct Member {
    system: ActorSystem,
    node: Arc<Node>,
    accounts: ShardRegion<AccountCmd>,
}

async fn join(url: &str, name: &str) -> Result<Member, Box<dyn std::error::Error>> {
    let system = ActorSystem::builder().threads(1).build()?;
    let node = Arc::new(Node::start(&system, RemoteConfig::new(url, name)).await?);
    // One journal per node, on the shared JetStream stream of the type:
    // an account recovers on whichever node its shard moves to. (A
    // node-local journal is refused here: the other nodes could not see
    // its events.)
    let journal: Arc<dyn Journal> =
        Arc::new(JetStreamJournal::open(node.nats_client(), "account", 1).await?);
    let here = name.to_string();
    let mut settings = ShardingSettings::new("account");
    settings.shards = 30;
    // Account ids are `acct-<number>`: anything else is refused before an
    // account starts (and so before anything is written for it).
    let settings = settings.validate(|id| match id.strip_prefix("acct-") {
        Some(n) if n.parse::<u32>().is_ok() => Ok(()),
        _ => Err(format!("{id:?} is not acct-<number>")),
    });
    // The region runs each account as a `Persistent` on the journal, with
    // the shard's lease revision as its fencing token: an activation on a
    // node that lost the shard cannot write after the new one.
    let accounts = ShardRegion::start_persistent(
        node.clone(),
        &system,
        settings,
        journal,
        PersistentSettings::default(),
        move |entity| Account {
            id: entity.id.clone(),
            node: here.clone(),
        },
    )
    .await?;
    Ok(Member {
        system,
        node,
        accounts,
    })
}

async fn balances(
    via: &Member,
    ids: &[String],
) -> Result<BTreeMap<String, (u64, String)>, Box<dyn std::error::Error>> {
    let mut out = BTreeMap::new();
    for id in ids {
        let answer = via
            .accounts
            .entity_ref(id.as_str())
            .ask(AccountCmd::Balance, T)
            .await?;
        out.insert(id.clone(), answer);
    }
    Ok(out)
}

fn per_node(balances: &BTreeMap<String, (u64, String)>) -> BTreeMap<&str, usize> {
    let mut count = BTreeMap::new();
    for (_, node) in balances.values() {
        *count.entry(node.as_str()).or_insert(0) += 1;
    }
    count
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A NATS URL from the command line, or a server of our own.
    let (_server, url) = match std::env::args().nth(1) {
        Some(url) => (None, url),
        None => {
            let binary = troupe_remote::launcher::find_binary(None)?;
            let server = troupe_remote::launcher::NatsServer::launch(&binary, &[])?;
            let url = server.url();
            (Some(server), url)
        }
    };
    let mut members = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        members.push(join(&url, name).await?);
    }
    // Let every node hear the others, so the shards spread over three.
    while members.iter().any(|m| m.node.members().len() < 3) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // 60 accounts, each given 100 and then 10..=69 taken out, through the
    // three nodes in turn: whichever node a command enters, it reaches the
    // one activation of its account.
    let ids: Vec<String> = (0..60).map(|i| format!("acct-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let entry = &members[i % 3].accounts;
        entry
            .entity_ref(id.as_str())
            .ask(|r| AccountCmd::Deposit(100, r), T)
            .await?;
        let left = members[(i + 1) % 3]
            .accounts
            .entity_ref(id.as_str())
            .ask(|r| AccountCmd::Withdraw(10 + i as u64, r), T)
            .await??;
        assert_eq!(left, 90 - i as u64);
    }
    // Overdrawing is refused, and changes nothing.
    let refused = members[0]
        .accounts
        .entity_ref("acct-0")
        .ask(|r| AccountCmd::Withdraw(1_000, r), T)
        .await?;
    println!("overdraw: {}", refused.unwrap_err());
    // An id that is not an account is refused at once, with the reason.
    let junk = members[0]
        .accounts
        .entity_ref("acct-x")
        .ask(AccountCmd::Balance, T)
        .await;
    println!("acct-x: {}", junk.unwrap_err());
    let before = balances(&members[0], &ids).await?;
    println!("accounts per node: {:?}", per_node(&before));

    // node-b leaves: its shards are handed to node-a and node-c (its
    // accounts stopped first); they recover from the journal there.
    let leaving = members.remove(1);
    leaving.accounts.leave().await;
    leaving.node.shutdown().await;
    leaving.system.shutdown();
    leaving.system.await_termination()?;
    let after = balances(&members[0], &ids).await?;
    println!(
        "after node-b left, accounts per node: {:?}",
        per_node(&after)
    );
    for id in &ids {
        assert_eq!(before[id].0, after[id].0, "{id} recovered with its balance");
        assert_ne!(after[id].1, "node-b");
    }
    let total: u64 = after.values().map(|(b, _)| b).sum();
    println!(
        "every balance recovered; total {total} (expected {})",
        (0..60).map(|i| 90 - i).sum::<u64>()
    );

    for m in members {
        m.accounts.leave().await;
        m.node.shutdown().await;
        m.system.shutdown();
        m.system.await_termination()?;
    }
    Ok(())
}

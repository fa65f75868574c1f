//! Cluster singletons across three nodes in this process, on a nats-server
//! of the test's own: exactly one instance runs and every node's proxy
//! reaches it; a holder that leaves hands over to another node, with a
//! larger fencing token, and never two instances at once. (Crashed and
//! paused holders are in `singleton_processes.rs`, with real processes.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
use troupe_cluster::singleton::{Singleton, SingletonSettings, SingletonStatus};
use troupe_remote::testing::NatsServer;
use troupe_remote::{Node, RemoteConfig};

/// Asks the instance where it runs.
#[derive(serde::Serialize, serde::Deserialize)]
enum WhereMsg {
    Ask(ReplyTo<(String, u64)>),
}

impl troupe_remote::RemoteMessage for WhereMsg {
    const TAG: &'static str = "troupe-cluster.test.Where";
}

/// How many instances are alive now, and the most ever alive at once
/// (all three nodes are in this process, so one count sees them all).
#[derive(Default)]
struct Life {
    alive: AtomicUsize,
    most: AtomicUsize,
    started: AtomicUsize,
}

struct Where {
    node: String,
    token: u64,
    life: Arc<Life>,
}

impl Actor for Where {
    type Msg = WhereMsg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        let now = self.life.alive.fetch_add(1, Ordering::SeqCst) + 1;
        self.life.most.fetch_max(now, Ordering::SeqCst);
        self.life.started.fetch_add(1, Ordering::SeqCst);
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, WhereMsg::Ask(reply): WhereMsg) {
        reply.reply((self.node.clone(), self.token));
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.life.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One node of the test cluster.
struct Member {
    name: String,
    system: ActorSystem,
    node: Arc<Node>,
    singleton: Singleton<WhereMsg>,
}

impl Member {
    async fn start(server: &NatsServer, name: &str, life: &Arc<Life>) -> Member {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let mut config = RemoteConfig::new(server.url(), name);
        // Handovers here are graceful (leave, then release): no test step
        // waits on the timeout, so a generous one keeps a busy test machine
        // from declaring a live holder down.
        config.heartbeat_interval = Duration::from_millis(200);
        config.heartbeat_timeout = Duration::from_secs(5);
        let node = Arc::new(Node::start(&system, config).await.unwrap());
        let (here, life) = (name.to_string(), life.clone());
        let singleton = Singleton::start(
            node.clone(),
            &system,
            SingletonSettings::new("where"),
            move |token| {
                let (node, life) = (here.clone(), life.clone());
                Props::new(move || Where {
                    node: node.clone(),
                    token,
                    life: life.clone(),
                })
            },
        )
        .await
        .unwrap();
        Member {
            name: name.to_string(),
            system,
            node,
            singleton,
        }
    }

    async fn stop(self) {
        self.singleton.leave().await;
        self.node.shutdown().await;
        self.system.shutdown();
        self.system.await_termination().unwrap();
    }
}

/// Waits (up to 30 s) until one member holds and every other follows it;
/// returns the holder's index and token.
async fn settled(members: &[Member]) -> (usize, u64) {
    let mut changes: Vec<_> = members
        .iter()
        .map(|m| m.singleton.status_changes())
        .collect();
    let wait = async {
        loop {
            // Read each view and mark it seen: a change after this wakes
            // the wait below.
            let statuses: Vec<SingletonStatus> = changes
                .iter_mut()
                .map(|c| c.borrow_and_update().clone())
                .collect();
            let holders: Vec<(usize, u64)> = statuses
                .iter()
                .enumerate()
                .filter_map(|(i, s)| match s {
                    SingletonStatus::Holding { token } => Some((i, *token)),
                    _ => None,
                })
                .collect();
            if let [(h, token)] = holders[..] {
                let following = SingletonStatus::Following {
                    node: members[h].name.clone(),
                };
                if statuses
                    .iter()
                    .enumerate()
                    .all(|(i, s)| i == h || *s == following)
                {
                    return (h, token);
                }
            }
            // Wake on the next change of any member's view.
            let _ =
                futures_util::future::select_all(changes.iter_mut().map(|c| Box::pin(c.changed())))
                    .await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("no single holder followed by every other node within 30 s")
}

/// Asks the instance through every member's proxy: each must answer
/// `instance` (its node and token).
async fn every_proxy_reaches(members: &[Member], instance: (String, u64)) {
    for m in members {
        let answer = m
            .singleton
            .proxy()
            .ask(WhereMsg::Ask, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(answer, instance, "via {}", m.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_runs_and_every_proxy_reaches_it_then_a_leaving_holder_hands_over() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let life = Arc::new(Life::default());
    let mut members = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        members.push(Member::start(&server, name, &life).await);
    }
    let (holder, token) = settled(&members).await;
    every_proxy_reaches(&members, (members[holder].name.clone(), token)).await;
    assert_eq!(life.started.load(Ordering::SeqCst), 1);

    // The holder leaves: it stops its instance, then releases the lease,
    // and one of the others takes over with a larger token.
    let leaving = members.remove(holder);
    leaving.stop().await;
    let (successor, new_token) = settled(&members).await;
    assert!(new_token > token, "{new_token} after {token}");
    every_proxy_reaches(&members, (members[successor].name.clone(), new_token)).await;
    assert_eq!(life.started.load(Ordering::SeqCst), 2);
    assert_eq!(
        life.most.load(Ordering::SeqCst),
        1,
        "two instances were alive at once"
    );
    for m in members {
        m.stop().await;
    }
    assert_eq!(life.alive.load(Ordering::SeqCst), 0);
}

//! Routers: round-robin spreads evenly, random reaches every routee,
//! smallest-mailbox avoids a backed-up routee, consistent hashing keeps a key
//! on one routee and moves only the keys of a removed routee, broadcast
//! reaches all, and stopping a pool stops its routees.

use std::collections::HashMap;

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorId, ActorRef, Context, Props, Router, Routing};
use troupe_testkit::{terminate, Latch, TestProbe};

#[derive(Clone)]
enum Msg {
    Job(u64),
    Hold(Latch),
}

/// Reports `(its id, job)` for every job.
struct Routee {
    seen: ActorRef<(ActorId, u64)>,
}

impl Actor for Routee {
    type Msg = Msg;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Job(j) => self.seen.tell((ctx.id(), j)),
            Msg::Hold(latch) => latch.wait(PATIENCE),
        }
    }
}

fn props(seen: &TestProbe<(ActorId, u64)>) -> Props<Routee> {
    let sender = seen.actor_ref();
    Props::new(move || Routee {
        seen: sender.clone(),
    })
}

fn counts(seen: &[(ActorId, u64)]) -> HashMap<ActorId, usize> {
    let mut c = HashMap::new();
    for (id, _) in seen {
        *c.entry(*id).or_default() += 1;
    }
    c
}

#[test]
fn round_robin_spreads_evenly() {
    let system = system();
    let seen = TestProbe::new(&system, "jobs");
    let pool = Router::pool(&system, 4, props(&seen), Routing::RoundRobin).unwrap();
    for j in 0..100 {
        pool.tell(Msg::Job(j));
    }
    let c = counts(&seen.receive_n(100, PATIENCE));
    assert_eq!(c.len(), 4);
    assert!(c.values().all(|&n| n == 25), "{c:?}");
    terminate(&system, PATIENCE);
}

#[test]
fn random_reaches_every_routee() {
    let system = system();
    let seen = TestProbe::new(&system, "jobs");
    let pool = Router::pool(&system, 4, props(&seen), Routing::Random).unwrap();
    for j in 0..1_000 {
        pool.tell(Msg::Job(j));
    }
    let c = counts(&seen.receive_n(1_000, PATIENCE));
    assert_eq!(c.len(), 4, "{c:?}");
    terminate(&system, PATIENCE);
}

#[test]
fn smallest_mailbox_avoids_a_backed_up_routee() {
    let system = system();
    let seen = TestProbe::new(&system, "jobs");
    let pool = Router::pool(&system, 4, props(&seen), Routing::SmallestMailbox).unwrap();
    let busy = pool.routees()[0].clone();
    let latch = Latch::new();
    busy.tell(Msg::Hold(latch.clone()));
    latch.expect_waiters(1, PATIENCE);
    for j in 1000..1005 {
        busy.tell(Msg::Job(j));
    }
    assert_eq!(busy.queued(), 5);
    for j in 0..10 {
        pool.tell(Msg::Job(j));
    }
    let routed = seen.receive_n(10, PATIENCE);
    latch.open();
    assert!(
        routed.iter().all(|(id, _)| *id != busy.id()),
        "a job went to the backed-up routee: {routed:?}"
    );
    seen.receive_n(5, PATIENCE);
    terminate(&system, PATIENCE);
}

#[test]
fn consistent_hashing_keeps_keys_and_moves_only_the_removed_routees_share() {
    let system = system();
    let seen = TestProbe::new(&system, "jobs");
    let routees: Vec<ActorRef<Msg>> = (0..4)
        .map(|_| system.spawn(props(&seen)).unwrap())
        .collect();
    let key = |m: &Msg| match m {
        Msg::Job(j) => j % 97,
        Msg::Hold(..) => 0,
    };
    let four = Router::group(routees.clone(), Routing::consistent_hashing(key));
    let three = Router::group(routees[..3].to_vec(), Routing::consistent_hashing(key));
    for j in 0..500 {
        four.tell(Msg::Job(j));
    }
    let mut owner_of_key = HashMap::new();
    for (id, j) in seen.receive_n(500, PATIENCE) {
        let previous = owner_of_key.insert(j % 97, id);
        assert!(previous.is_none_or(|p| p == id), "key {} moved", j % 97);
        assert_eq!(four.routee_for(&Msg::Job(j)).unwrap().id(), id);
    }
    let removed = routees[3].id();
    let mut moved = 0;
    for (k, owner) in &owner_of_key {
        let now = three.routee_for(&Msg::Job(*k)).unwrap().id();
        if *owner == removed {
            moved += 1;
        } else {
            assert_eq!(now, *owner, "key {k} moved although its routee stayed");
        }
    }
    assert!(moved > 0, "the removed routee owned no key");
    terminate(&system, PATIENCE);
}

#[test]
fn broadcast_reaches_every_routee_and_a_stopped_pool_stops_them() {
    let system = system();
    let seen = TestProbe::new(&system, "jobs");
    let pool = Router::pool(&system, 3, props(&seen), Routing::broadcast()).unwrap();
    pool.tell(Msg::Job(7));
    let c = counts(&seen.receive_n(3, PATIENCE));
    assert_eq!(c.len(), 3);
    pool.stop();
    for routee in pool.routees() {
        seen.expect_terminated(routee, PATIENCE);
    }
    terminate(&system, PATIENCE);
}

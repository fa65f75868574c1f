//! Locality on a pool dispatcher with late stealing
//! (`Stealing::Late`, and `Adaptive`, the default, which starts that way):
//! actors made runnable on a worker stay there, and another worker takes
//! them only when they would wait longer than a grace period.
//!
//! - A worker stuck in a long handler: the actor it queued before blocking
//!   is taken by the other worker and runs meanwhile (it is what unblocks
//!   the stuck handler here, so without the steal the test would fail on
//!   the latch's patience), and the pool's counters show one steal and one
//!   migration at least. Under both `Late` and `Adaptive`.
//! - A chain of small messages between two actors on a two-worker pool
//!   (each one sent from the worker the other runs on) keeps them on one
//!   worker: fewer than one migration per thousand runs. (Not none: a
//!   worker descheduled by the operating system for longer than the grace
//!   period looks stuck, and its actors are then rightly taken.)
//! - The adaptive governor tries the other way of stealing under a
//!   sustained load (its trials are counted), the pool counts every
//!   message handled, and a fixed `Eager` or `Late` pool has no governor:
//!   no trials, spreading all or none of its life.

use std::sync::Arc;

use crate::support::PATIENCE;
use troupe::{Actor, ActorRef, ActorSystem, Context, DispatcherConfig, Props, Stealing};
use troupe_testkit::{terminate, Latch, TestProbe};

/// Opens its latch when told (on whichever worker runs it).
struct Opener(Arc<Latch>);

impl Actor for Opener {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.0.open();
    }
}

/// Does nothing with what it is told.
struct Idle;

impl Actor for Idle {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
}

/// Tells the opener (which lands in this worker's slot), then the idle
/// actor (which displaces the opener into the worker's queue), then
/// blocks until the opener has run.
struct Blocker {
    opener: ActorRef<()>,
    idle: ActorRef<()>,
    latch: Arc<Latch>,
    done: ActorRef<&'static str>,
}

impl Actor for Blocker {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.opener.tell(());
        self.idle.tell(());
        self.latch.wait(PATIENCE);
        self.done.tell("unblocked");
    }
}

/// A system whose default pool has two workers and steals this way.
fn system_stealing(stealing: Stealing) -> ActorSystem {
    ActorSystem::builder()
        .dispatcher("default", DispatcherConfig::pool(2).stealing(stealing))
        .build()
        .unwrap()
}

/// A system whose default pool has two workers and steals late.
fn late_system() -> ActorSystem {
    system_stealing(Stealing::Late)
}

#[test]
fn an_actor_queued_behind_a_stuck_worker_is_taken_by_an_idle_one() {
    stuck_worker_is_rescued(late_system());
}

#[test]
fn the_adaptive_default_also_rescues_an_actor_behind_a_stuck_worker() {
    stuck_worker_is_rescued(system_stealing(Stealing::default()));
}

fn stuck_worker_is_rescued(system: ActorSystem) {
    let before = system.dispatcher_stats("default").unwrap();
    let probe = TestProbe::<&'static str>::new(&system, "done");
    let latch = Arc::new(Latch::new());
    let opener = system.spawn(Props::new({
        let latch = latch.clone();
        move || Opener(latch.clone())
    }));
    let idle = system.spawn(Props::new(|| Idle)).unwrap();
    let (opener, done) = (opener.unwrap(), probe.actor_ref());
    let blocker = system
        .spawn(Props::new(move || Blocker {
            opener: opener.clone(),
            idle: idle.clone(),
            latch: latch.clone(),
            done: done.clone(),
        }))
        .unwrap();
    blocker.tell(());
    assert_eq!(probe.expect_msg(PATIENCE), "unblocked");
    let during = system.dispatcher_stats("default").unwrap().since(&before);
    assert!(during.steals >= 1, "{during:?}");
    assert!(during.migrations >= 1, "{during:?}");
    terminate(&system, PATIENCE);
}

/// Hits its partner back `left` more times, then reports to the probe.
struct Rally {
    partner: Option<ActorRef<Shot>>,
    done: ActorRef<&'static str>,
}

enum Shot {
    Partner(ActorRef<Shot>),
    Hit(u32),
}

impl Actor for Rally {
    type Msg = Shot;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Shot) {
        match msg {
            Shot::Partner(p) => self.partner = Some(p),
            Shot::Hit(0) => self.done.tell("rally over"),
            Shot::Hit(left) => {
                if let Some(p) = &self.partner {
                    p.tell(Shot::Hit(left - 1));
                }
            }
        }
    }
}

#[test]
fn two_actors_messaging_each_other_stay_on_one_worker() {
    let system = late_system();
    let probe = TestProbe::<&'static str>::new(&system, "done");
    let rally = |done: ActorRef<&'static str>| {
        system
            .spawn(Props::new(move || Rally {
                partner: None,
                done: done.clone(),
            }))
            .unwrap()
    };
    let (a, b) = (rally(probe.actor_ref()), rally(probe.actor_ref()));
    a.tell(Shot::Partner(b.clone()));
    b.tell(Shot::Partner(a.clone()));
    // Both have their partner once each has answered a short rally.
    a.tell(Shot::Hit(1));
    assert_eq!(probe.expect_msg(PATIENCE), "rally over");
    let before = system.dispatcher_stats("default").unwrap();
    a.tell(Shot::Hit(200_000));
    assert_eq!(probe.expect_msg(PATIENCE), "rally over");
    let rally = system.dispatcher_stats("default").unwrap().since(&before);
    // The first hit comes from outside the pool and may start on either
    // worker; from then on every send is made on the worker the receiver
    // runs on next.
    assert!(rally.tasks >= 200_000, "{rally:?}");
    assert!(rally.migrations * 1000 < rally.tasks, "{rally:?}");
    terminate(&system, PATIENCE);
}

/// Counts what it is told and reports each thousandth to the probe.
struct Counter {
    seen: u64,
    done: ActorRef<u64>,
}

impl Actor for Counter {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.seen += 1;
        if self.seen.is_multiple_of(1_000) {
            self.done.tell(self.seen);
        }
    }
}

#[test]
fn the_adaptive_governor_tries_the_other_way_under_load_and_counts_messages() {
    let system = system_stealing(Stealing::Adaptive);
    let probe = TestProbe::<u64>::new(&system, "counted");
    let counters: Vec<_> = (0..4)
        .map(|_| {
            let done = probe.actor_ref();
            system
                .spawn(Props::new(move || Counter {
                    seen: 0,
                    done: done.clone(),
                }))
                .unwrap()
        })
        .collect();
    let before = system.dispatcher_stats("default").unwrap();
    // Load in rounds of 4,000 messages (each round answered by the probe)
    // until the governor has started a trial; PATIENCE bounds the wait.
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut rounds = 0u64;
    loop {
        for c in &counters {
            for _ in 0..1_000 {
                c.tell(());
            }
        }
        for _ in 0..4 {
            probe.expect_msg(PATIENCE);
        }
        rounds += 1;
        let now = system.dispatcher_stats("default").unwrap().since(&before);
        if now.probes >= 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no trial after {rounds} rounds: {now:?}"
        );
    }
    terminate(&system, PATIENCE);
    // Every message sent was handled (the probe heard each counter's last
    // thousand of each round), and counted once its run had ended, which
    // the workers' exit at termination orders before this read.
    let total = system.dispatcher_stats("default").unwrap().since(&before);
    assert!(total.messages >= rounds * 4_000, "{total:?}");
}

#[test]
fn fixed_ways_of_stealing_have_no_governor() {
    for (stealing, spreads) in [(Stealing::Eager, true), (Stealing::Late, false)] {
        let system = system_stealing(stealing);
        let probe = TestProbe::<u64>::new(&system, "counted");
        let done = probe.actor_ref();
        let counter = system
            .spawn(Props::new(move || Counter {
                seen: 0,
                done: done.clone(),
            }))
            .unwrap();
        for _ in 0..1_000 {
            counter.tell(());
        }
        assert_eq!(probe.expect_msg(PATIENCE), 1_000);
        terminate(&system, PATIENCE);
        let stats = system.dispatcher_stats("default").unwrap();
        assert_eq!(stats.probes, 0, "{stealing:?}: {stats:?}");
        assert_eq!(stats.spread_us > 0, spreads, "{stealing:?}: {stats:?}");
        assert!(stats.messages >= 1_000, "{stealing:?}: {stats:?}");
    }
}

/// Answers every ping with a pong to its sender: the actor every client
/// shares (as the trading system's engines are shared).
struct Hub;

enum HubMsg {
    Ping(ActorRef<ClientMsg>),
}

impl Actor for Hub {
    type Msg = HubMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, HubMsg::Ping(from): HubMsg) {
        from.tell(ClientMsg::Pong);
    }
}

enum ClientMsg {
    Start(ActorRef<ClientMsg>),
    Pong,
}

/// Pings the hub `left` more times, one at a time, then reports.
struct HubClient {
    hub: ActorRef<HubMsg>,
    me: Option<ActorRef<ClientMsg>>,
    left: u32,
    done: ActorRef<&'static str>,
}

impl Actor for HubClient {
    type Msg = ClientMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ClientMsg) {
        if let ClientMsg::Start(me) = msg {
            self.me = Some(me);
        }
        if self.left == 0 {
            self.done.tell("client done");
            return;
        }
        if self.left == 19_900 {
            self.done.tell("client running");
        }
        self.left -= 1;
        if let Some(me) = &self.me {
            self.hub.tell(HubMsg::Ping(me.clone()));
        }
    }
}

#[test]
fn clients_started_from_outside_the_pool_gather_on_one_worker_with_their_hub() {
    let system = late_system();
    let probe = TestProbe::<&'static str>::new(&system, "done");
    let hub = system.spawn(Props::new(|| Hub)).unwrap();
    let clients: Vec<_> = (0..10)
        .map(|_| {
            let (hub, done) = (hub.clone(), probe.actor_ref());
            system
                .spawn(Props::new(move || HubClient {
                    hub: hub.clone(),
                    me: None,
                    left: 20_000,
                    done: done.clone(),
                }))
                .unwrap()
        })
        .collect();
    let before = system.dispatcher_stats("default").unwrap();
    // Every client is started by a send from this thread (the injector), as
    // a service's requests arrive, each once the one before is busy: only
    // the home worker takes those, so the clients and the hub they share run
    // on one worker, and the hub is not pulled from one CPU to the other by
    // clients on both. (Taken by whichever worker was idle, the later
    // clients would start on the other worker.)
    for c in &clients {
        c.tell(ClientMsg::Start(c.clone()));
        assert_eq!(probe.expect_msg(PATIENCE), "client running");
    }
    for _ in 0..clients.len() {
        assert_eq!(probe.expect_msg(PATIENCE), "client done");
    }
    let run = system.dispatcher_stats("default").unwrap().since(&before);
    assert!(run.tasks >= 200_000, "{run:?}");
    // Not zero: a worker descheduled for longer than the grace period looks
    // stuck, and its actors are then rightly taken.
    assert!(run.migrations * 100 < run.tasks, "{run:?}");
    terminate(&system, PATIENCE);
}

/// Says it is blocking, then blocks until its latch opens.
struct Waiter {
    latch: Arc<Latch>,
    done: ActorRef<&'static str>,
}

impl Actor for Waiter {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.done.tell("blocking");
        self.latch.wait(PATIENCE);
        self.done.tell("unblocked");
    }
}

/// Answers every message with "pong".
struct Echo(ActorRef<&'static str>);

impl Actor for Echo {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
        self.0.tell("pong");
    }
}

#[test]
fn a_send_from_outside_is_handled_while_the_home_worker_is_stuck() {
    for stealing in [Stealing::Late, Stealing::Adaptive] {
        // The pool under test runs the echo and the waiter only; the probe
        // runs on the default pool, so that no probe task waits in the
        // stuck worker's slot (which no worker takes from another).
        let system = ActorSystem::builder()
            .dispatcher("work", DispatcherConfig::pool(2).stealing(stealing))
            .build()
            .unwrap();
        let probe = TestProbe::<&'static str>::new(&system, "done");
        let echo = system
            .spawn(
                Props::new({
                    let done = probe.actor_ref();
                    move || Echo(done.clone())
                })
                .dispatcher("work"),
            )
            .unwrap();
        // Started and idle before anything blocks.
        echo.tell(());
        assert_eq!(probe.expect_msg(PATIENCE), "pong");
        let latch = Arc::new(Latch::new());
        let waiter = system
            .spawn(
                Props::new({
                    let (latch, done) = (latch.clone(), probe.actor_ref());
                    move || Waiter {
                        latch: latch.clone(),
                        done: done.clone(),
                    }
                })
                .dispatcher("work"),
            )
            .unwrap();
        waiter.tell(());
        assert_eq!(probe.expect_msg(PATIENCE), "blocking");
        // The worker running the waiter (the home, which takes sends from
        // outside) is stuck; a send from outside must run on the other.
        echo.tell(());
        assert_eq!(probe.expect_msg(PATIENCE), "pong", "{stealing:?}");
        latch.open();
        assert_eq!(probe.expect_msg(PATIENCE), "unblocked");
        terminate(&system, PATIENCE);
    }
}

//! Locality on a pool dispatcher with late stealing
//! (`Stealing::Late`): actors made runnable on a worker stay there, and
//! another worker takes them only when they would wait longer than a grace
//! period.
//!
//! - A worker stuck in a long handler: the actor it queued before blocking
//!   is taken by the other worker and runs meanwhile (it is what unblocks
//!   the stuck handler here, so without the steal the test would fail on
//!   the latch's patience), and the pool's counters show one steal and one
//!   migration at least.
//! - A chain of small messages between two actors on a two-worker pool
//!   (each one sent from the worker the other runs on) keeps them on one
//!   worker: fewer than one migration per thousand runs. (Not none: a
//!   worker descheduled by the operating system for longer than the grace
//!   period looks stuck, and its actors are then rightly taken.)

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

/// A system whose default pool has two workers and steals late.
fn late_system() -> ActorSystem {
    ActorSystem::builder()
        .dispatcher(
            "default",
            DispatcherConfig::pool(2).stealing(Stealing::Late),
        )
        .build()
        .unwrap()
}

#[test]
fn an_actor_queued_behind_a_stuck_worker_is_taken_by_an_idle_one() {
    let system = late_system();
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

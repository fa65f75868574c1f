//! The receptionist: registration and lookup by typed key, subscriptions
//! that see every change, actors that stop leaving their listings, and a
//! receptionist asked after shutdown.

use std::time::Duration;

use crate::support::PATIENCE;
use troupe::{
    Actor, ActorId, ActorRef, ActorSystem, AskError, Context, Listing, Props, ServiceKey,
};
use troupe_testkit::{terminate, TestProbe};

struct Worker;
impl Actor for Worker {
    type Msg = u32;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _job: u32) {}
}

struct Other;
impl Actor for Other {
    type Msg = String;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: String) {}
}

/// Reports the ids in each listing it is told.
struct Watcher {
    out: ActorRef<Vec<ActorId>>,
}
impl Actor for Watcher {
    type Msg = Listing<u32>;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, listing: Listing<u32>) {
        self.out
            .tell(listing.refs().iter().map(ActorRef::id).collect());
    }
}

fn system(name: &str) -> ActorSystem {
    ActorSystem::builder()
        .name(name)
        .threads(2)
        .build()
        .unwrap()
}

fn ids<M: Send + 'static>(listing: &Listing<M>) -> Vec<ActorId> {
    listing.refs().iter().map(ActorRef::id).collect()
}

#[test]
fn registered_actors_are_found_by_name_and_type() {
    let system = system("reception-find");
    let workers = ServiceKey::<u32>::new("workers");
    let same_name_other_type = ServiceKey::<String>::new("workers");
    let a = system.spawn(Props::new(|| Worker)).unwrap();
    let b = system.spawn(Props::new(|| Worker)).unwrap();
    let o = system.spawn(Props::new(|| Other)).unwrap();
    let reception = system.receptionist();
    reception.register(&workers, a.clone());
    reception.register(&workers, a.clone()); // listed once
    reception.register(&workers, b.clone());
    reception.register(&same_name_other_type, o.clone());
    let listing = reception.find(&workers, PATIENCE).wait().unwrap();
    assert_eq!(ids(&listing), vec![a.id(), b.id()]);
    assert_eq!(listing.key(), &workers);
    let others = reception
        .find(&same_name_other_type, PATIENCE)
        .wait()
        .unwrap();
    assert_eq!(ids(&others), vec![o.id()]);
    let nobody = reception
        .find(&ServiceKey::<u32>::new("nobody"), PATIENCE)
        .wait()
        .unwrap();
    assert!(nobody.is_empty());
    // The refs found are the actors: a message through one arrives.
    listing.refs()[1].tell(7);
    reception.deregister(&workers, &a);
    let listing = reception.find(&workers, PATIENCE).wait().unwrap();
    assert_eq!(ids(&listing), vec![b.id()]);
    terminate(&system, PATIENCE);
}

#[test]
fn a_subscriber_sees_every_change_and_a_stopped_actor_leaves_the_listing() {
    let system = system("reception-subscribe");
    let workers = ServiceKey::<u32>::new("workers");
    let reception = system.receptionist();
    let listings = TestProbe::new(&system, "listings");
    let out = listings.actor_ref();
    let watcher = system
        .spawn(Props::new(move || Watcher { out: out.clone() }))
        .unwrap();
    reception.subscribe(&workers, watcher);
    assert_eq!(
        listings.expect_msg(PATIENCE),
        vec![],
        "the current listing at once"
    );
    let a = system.spawn(Props::new(|| Worker)).unwrap();
    let b = system.spawn(Props::new(|| Worker)).unwrap();
    reception.register(&workers, a.clone());
    listings.expect_msg_eq(vec![a.id()], PATIENCE);
    reception.register(&workers, b.clone());
    listings.expect_msg_eq(vec![a.id(), b.id()], PATIENCE);
    system.stop(&a);
    assert_eq!(
        listings.expect_msg(PATIENCE),
        vec![b.id()],
        "a left when it stopped"
    );
    // Lookups after the change agree.
    let found = reception.find(&workers, PATIENCE).wait().unwrap();
    assert_eq!(ids(&found), vec![b.id()]);
    terminate(&system, PATIENCE);
}

#[test]
fn a_stopped_subscriber_is_no_longer_told() {
    let system = system("reception-subscriber-stops");
    let workers = ServiceKey::<u32>::new("workers");
    let reception = system.receptionist();
    let listings = TestProbe::new(&system, "listings");
    let out = listings.actor_ref();
    let watcher = system
        .spawn(Props::new(move || Watcher { out: out.clone() }))
        .unwrap();
    reception.subscribe(&workers, watcher.clone());
    listings.expect_msg_eq(vec![], PATIENCE);
    // The receptionist watched the subscriber first, so its `Terminated`
    // is on the receptionist's system lane before this probe hears of it,
    // and system messages are handled before the register below.
    listings.watch(&watcher, PATIENCE);
    system.stop(&watcher);
    listings.expect_terminated(&watcher, PATIENCE);
    let a = system.spawn(Props::new(|| Worker)).unwrap();
    reception.register(&workers, a.clone());
    let found = reception.find(&workers, PATIENCE).wait().unwrap();
    assert_eq!(ids(&found), vec![a.id()]);
    terminate(&system, PATIENCE);
    assert_eq!(
        system.dead_letter_count(),
        0,
        "no listing went to the stopped subscriber"
    );
    assert!(listings.received().is_empty());
}

#[test]
fn after_shutdown_a_lookup_fails_instead_of_waiting() {
    let system = system("reception-shutdown");
    terminate(&system, PATIENCE);
    let answer = system
        .receptionist()
        .find(&ServiceKey::<u32>::new("workers"), Duration::from_secs(60))
        .wait();
    assert!(
        matches!(answer, Err(AskError::NoReply { .. })),
        "{answer:?}"
    );
}

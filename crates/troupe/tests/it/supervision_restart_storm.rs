//! A restart storm: an actor whose `started` panics every time is restarted
//! again and again until its restart limit, then stopped, and its parent is
//! told of every failure. Thousands of restarts in a row must cost no more
//! stack than one: each restart has to start from the run loop, not from
//! inside the failed restart.
//!
//! The failure this guards against, a stack overflow on a worker thread,
//! aborts the whole test process: if the `it` binary dies of one, run
//! `cargo test -p troupe --test it supervision_restart_storm` to see whether
//! it is this test.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorRef, Context, Directive, Props, Signal, SupervisorStrategy};
use troupe_testkit::{quiet_panics, terminate, TestProbe};

/// Restarts allowed before the storm stops; far deeper than a worker's
/// stack could take if restarts nested.
const LIMIT: u32 = 20_000;
const PANIC_TEXT: &str = "cannot start: no configuration";

/// Fails in `started`, and so in every `after_restart` (which calls it).
struct NeverStarts;

impl Actor for NeverStarts {
    type Msg = ();

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        panic!("{PANIC_TEXT}");
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
}

/// Spawns the storm and counts its failures by directive; reports the count
/// of restarts when the stop comes.
struct Parent {
    child: Props<NeverStarts>,
    restarts: u32,
    stopped: ActorRef<u32>,
}

impl Actor for Parent {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.spawn(self.child.clone()).expect("spawn the storm");
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::ChildFailed {
            directive, failure, ..
        } = signal
        {
            assert_eq!(failure.message, PANIC_TEXT);
            match directive {
                Directive::Restart => self.restarts += 1,
                Directive::Stop => self.stopped.tell(self.restarts),
                other => panic!("unexpected directive {other:?}"),
            }
        }
    }
}

#[test]
fn a_restart_storm_ends_at_the_limit_without_exhausting_the_stack() {
    // Twenty thousand expected panics would flood stderr; stay quiet about
    // those, and only those.
    quiet_panics(&[PANIC_TEXT]);

    let system = system();
    let built = Arc::new(AtomicU32::new(0));
    let child = {
        let built = built.clone();
        Props::new(move || {
            built.fetch_add(1, Ordering::SeqCst);
            NeverStarts
        })
        .supervisor(SupervisorStrategy::restart().with_limit(LIMIT, Duration::from_secs(600)))
    };
    let stopped = TestProbe::new(&system, "storm stopped");
    let out = stopped.actor_ref();
    system
        .spawn(Props::new(move || Parent {
            child: child.clone(),
            restarts: 0,
            stopped: out.clone(),
        }))
        .unwrap();

    assert_eq!(
        stopped.expect_msg(PATIENCE),
        LIMIT,
        "every restart was reported before the stop"
    );
    terminate(&system, PATIENCE);
    assert_eq!(
        built.load(Ordering::SeqCst),
        LIMIT + 1,
        "the first instance and each restart"
    );
    assert!(stopped.received().is_empty());
}

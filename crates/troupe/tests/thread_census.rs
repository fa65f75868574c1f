//! No runtime thread outlives `await_termination`: a census of the
//! process's threads (`/proc/self/task`) before and after a system with a
//! pool, a pinned actor and a scheduler shuts down.
//!
//! A binary of its own: the census counts every `troupe-` thread of the
//! process, so the systems of other tests running at the same time would
//! be counted too (a pinned actor's thread name keeps only one character of
//! the actor's name, so the census cannot tell systems apart by name).
//!
//! The timer's report goes to a `troupe_testkit::TestProbe`: its two actors
//! run on the system's pool and add no thread to the census.

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorRef, ActorSystem, Context, Props, ReplyTo, TerminationReason};
use troupe_testkit::{terminate, TestProbe};

/// How long the test waits for an outcome before it fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// Names of this process's threads whose name starts with `troupe-`. Linux
/// shows at most 15 bytes of a name, enough for the prefix.
fn troupe_threads() -> Vec<String> {
    let tasks = fs::read_dir("/proc/self/task").expect("list /proc/self/task");
    tasks
        .filter_map(|task| fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|comm| comm.trim_end().to_string())
        .filter(|comm| comm.starts_with("troupe-"))
        .collect()
}

enum Census {
    /// Reply with the name of the thread the handler runs on.
    Where(ReplyTo<String>),
    /// Report on the probe.
    Ping(ActorRef<()>),
    Nothing,
}

/// Tells where it runs.
struct WhereAmI;

impl Actor for WhereAmI {
    type Msg = Census;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Census) {
        match msg {
            Census::Where(reply) => {
                reply.reply(thread::current().name().unwrap_or("?").to_string());
            }
            Census::Ping(out) => out.tell(()),
            Census::Nothing => {}
        }
    }
}

#[test]
fn no_troupe_thread_survives_await_termination() {
    let system = ActorSystem::builder()
        .name("census")
        .threads(2)
        .build()
        .unwrap();
    let pooled = system.spawn(Props::new(|| WhereAmI)).unwrap();
    let pinned = system
        .spawn(Props::new(|| WhereAmI).name("p").dispatcher("pinned"))
        .unwrap();
    let pooled_on = pooled.ask(Census::Where, PATIENCE).wait().unwrap();
    assert!(
        pooled_on.starts_with("troupe-census-default-"),
        "{pooled_on}"
    );
    assert_eq!(
        pinned.ask(Census::Where, PATIENCE).wait().unwrap(),
        "troupe-pinned-p"
    );
    // A timer that fired shows that the scheduler thread has run (a thread
    // carries its parent's name until it first runs and names itself).
    let pinged = TestProbe::new(&system, "timer fired");
    system.scheduler().schedule_once(
        Duration::from_millis(1),
        &pooled,
        Census::Ping(pinged.actor_ref()),
    );
    pinged.expect_msg(PATIENCE);
    // A timer still pending at shutdown must not keep the scheduler alive.
    system
        .scheduler()
        .schedule_once(Duration::from_secs(3600), &pooled, Census::Nothing);
    let before = troupe_threads();
    // The census sees the runtime's threads (count kinds only: the second
    // worker may not have run yet).
    for kind in ["troupe-census-d", "troupe-census-s", "troupe-pinned-p"] {
        assert!(
            before.iter().any(|t| t == kind),
            "{kind} missing from {before:?}"
        );
    }

    assert_eq!(terminate(&system, PATIENCE), TerminationReason::Requested);
    // `await_termination` joined every thread; the kernel unlists a joined
    // thread a few microseconds after the join returns, hence the re-reads.
    let deadline = Instant::now() + PATIENCE;
    let mut left = troupe_threads();
    while !left.is_empty() && Instant::now() < deadline {
        thread::yield_now();
        left = troupe_threads();
    }
    assert!(left.is_empty(), "threads left after termination: {left:?}");
}

//! Death watch: a watcher gets exactly one `Signal::Terminated` when a
//! watched actor stops (watching twice changes nothing), gets it at once for
//! an actor that has already stopped, and gets none after `unwatch`. The
//! edges: a watch that arrives together with the stop, a `Terminated` that
//! arrives while the watcher restarts, a watcher that stops first (and must
//! then not be kept alive by the actor it watched).
//!
//! # Proving that nothing arrives
//!
//! Absence is shown without waiting for a quiet period, with a *fence*: the
//! watcher also watches a second actor that is stopped only after the first
//! one's termination has been observed elsewhere. Signals reach an actor
//! through its system lane, a FIFO that the actor drains in order; the first
//! actor's notifications are pushed (in `finalize`, before anyone can learn
//! that it stopped) before the fence is even told to stop. So by the time the
//! watcher handles the fence's `Terminated`, any `Terminated` of the first
//! actor would already have been handled. The watcher's full record is also
//! checked after termination.
//!
//! One check has no event to wait for: that a stopped watcher's cell is
//! released. It re-reads a reference count, yielding, until a deadline.

use std::sync::Arc;
use std::thread;
use std::time::Instant;

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorId, ActorRef, Context, Directive, Failure, Props, SupervisorStrategy};
use troupe_testkit::{terminate, EventLog, Latch, TestProbe};

/// An actor that does nothing; optionally holds its handler on a latch.
struct Target;

impl Actor for Target {
    type Msg = Option<Latch>;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Self::Msg) {
        if let Some(latch) = msg {
            latch.wait(PATIENCE);
        }
    }
}

fn spawn_target(system: &troupe::ActorSystem) -> ActorRef<<Target as Actor>::Msg> {
    system
        .spawn(Props::new(|| Target).dispatcher("pinned"))
        .unwrap()
}

enum WatcherMsg {
    Watch(ActorRef<<Target as Actor>::Msg>),
    Unwatch(ActorRef<<Target as Actor>::Msg>),
    /// Panic (to test a watcher that is restarting).
    Fail,
}

/// Watches and unwatches on command; reports every `Terminated` it handles
/// and acknowledges each command once it has been carried out.
struct Watcher {
    terminated: ActorRef<ActorId>,
    record: EventLog,
    acks: ActorRef<()>,
    /// Spawned in `started` when set: a child whose handler is held, which
    /// keeps a restart of this actor waiting for the child to stop.
    held_child: Option<Latch>,
}

impl Actor for Watcher {
    type Msg = WatcherMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(hold) = self.held_child.take() {
            let child = ctx
                .spawn(Props::new(|| Target).dispatcher("pinned"))
                .unwrap();
            child.tell(Some(hold));
        }
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: WatcherMsg) {
        match msg {
            WatcherMsg::Watch(target) => ctx.watch(&target),
            WatcherMsg::Unwatch(target) => ctx.unwatch(&target),
            WatcherMsg::Fail => panic!("watcher fails on purpose"),
        }
        self.acks.tell(());
    }

    fn before_restart(&mut self, _ctx: &mut Context<'_, Self>, _failure: &Failure) {
        self.acks.tell(());
    }

    fn after_restart(&mut self, _ctx: &mut Context<'_, Self>, _failure: &Failure) {
        self.record.push("restarted");
        self.acks.tell(());
    }

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: troupe::Signal) {
        if let troupe::Signal::Terminated(id, _) = signal {
            self.record.push(format!("terminated:{id}"));
            self.terminated.tell(id);
        }
    }
}

struct WatcherProbes {
    terminated: TestProbe<ActorId>,
    record: EventLog,
    acks: TestProbe<()>,
    /// Stands apart from the watcher under test: watches the same targets,
    /// to learn of their stops elsewhere.
    elsewhere: TestProbe<()>,
}

fn spawn_watcher(
    system: &troupe::ActorSystem,
    held_child: Option<Latch>,
) -> (ActorRef<WatcherMsg>, WatcherProbes) {
    let probes = WatcherProbes {
        terminated: TestProbe::new(system, "watcher's Terminated"),
        record: EventLog::new(),
        acks: TestProbe::new(system, "watcher acks"),
        elsewhere: TestProbe::new(system, "elsewhere"),
    };
    let (terminated, record, acks) = (
        probes.terminated.actor_ref(),
        probes.record.clone(),
        probes.acks.actor_ref(),
    );
    let held_child = std::sync::Mutex::new(held_child);
    let watcher = system
        .spawn(Props::new(move || Watcher {
            terminated: terminated.clone(),
            record: record.clone(),
            acks: acks.clone(),
            held_child: held_child.lock().unwrap().take(),
        }))
        .unwrap();
    (watcher, probes)
}

/// Tells the watcher `msg` and waits until it has carried it out.
fn command(watcher: &ActorRef<WatcherMsg>, probes: &WatcherProbes, msg: WatcherMsg) {
    watcher.tell(msg);
    probes.acks.expect_msg(PATIENCE);
}

fn terminated_entry(id: ActorId) -> String {
    format!("terminated:{id}")
}

#[test]
fn watching_twice_still_delivers_exactly_one_terminated() {
    let system = system();
    let (watcher, probes) = spawn_watcher(&system, None);
    let target = spawn_target(&system);
    let fence = spawn_target(&system);
    command(&watcher, &probes, WatcherMsg::Watch(target.clone()));
    command(&watcher, &probes, WatcherMsg::Watch(target.clone()));
    command(&watcher, &probes, WatcherMsg::Watch(fence.clone()));

    system.stop(&target);
    assert_eq!(probes.terminated.expect_msg(PATIENCE), target.id());
    system.stop(&fence);
    assert_eq!(
        probes.terminated.expect_msg(PATIENCE),
        fence.id(),
        "no second Terminated for the target"
    );
    terminate(&system, PATIENCE);
    assert_eq!(
        probes.record.snapshot(),
        [terminated_entry(target.id()), terminated_entry(fence.id())]
    );
}

#[test]
fn watching_an_actor_that_already_stopped_delivers_terminated_at_once() {
    let system = system();
    let target = spawn_target(&system);
    let (watcher, probes) = spawn_watcher(&system, None);
    system.stop(&target);
    probes.elsewhere.expect_terminated(&target, PATIENCE);

    watcher.tell(WatcherMsg::Watch(target.clone()));
    assert_eq!(probes.terminated.expect_msg(PATIENCE), target.id());
    terminate(&system, PATIENCE);
    assert_eq!(probes.record.snapshot(), [terminated_entry(target.id())]);
}

#[test]
fn unwatch_before_the_stop_means_no_terminated() {
    let system = system();
    let (watcher, probes) = spawn_watcher(&system, None);
    let target = spawn_target(&system);
    let fence = spawn_target(&system);
    command(&watcher, &probes, WatcherMsg::Watch(target.clone()));
    command(&watcher, &probes, WatcherMsg::Watch(fence.clone()));
    command(&watcher, &probes, WatcherMsg::Unwatch(target.clone()));
    // Watching after the watcher's watch, so it would be notified after it.
    probes.elsewhere.watch(&target, PATIENCE);

    system.stop(&target);
    probes.elsewhere.expect_terminated(&target, PATIENCE);
    system.stop(&fence);
    assert_eq!(
        probes.terminated.expect_msg(PATIENCE),
        fence.id(),
        "the fence's Terminated comes first: the target's never came"
    );
    terminate(&system, PATIENCE);
    assert_eq!(probes.record.snapshot(), [terminated_entry(fence.id())]);
}

/// Regression test: a `Watch` that reaches the target in the same batch of
/// system messages as the `Stop` that ends it, and so is handled after
/// `finalize` has notified the watchers, must still be answered.
#[test]
fn a_watch_arriving_with_the_stop_still_delivers_terminated() {
    let system = system();
    let target = spawn_target(&system);
    let fence = spawn_target(&system);
    let (watcher, probes) = spawn_watcher(&system, None);
    probes.elsewhere.watch(&target, PATIENCE);
    command(&watcher, &probes, WatcherMsg::Watch(fence.clone()));
    // Hold the target in a handler so that what follows queues up in its
    // system lane: first the Stop, then the watcher's Watch.
    let latch = Latch::new();
    target.tell(Some(latch.clone()));
    latch.expect_waiters(1, PATIENCE);
    system.stop(&target);
    command(&watcher, &probes, WatcherMsg::Watch(target.clone()));
    latch.open();
    probes.elsewhere.expect_terminated(&target, PATIENCE);
    // The late Watch is handled after `finalize` has notified `elsewhere`, so
    // its answer has no order with anything the fence does: wait for it
    // before the fence is stopped. The fence then proves it came only once.
    assert_eq!(
        probes.terminated.expect_msg(PATIENCE),
        target.id(),
        "the late Watch was never answered"
    );

    system.stop(&fence);
    assert_eq!(probes.terminated.expect_msg(PATIENCE), fence.id());
    terminate(&system, PATIENCE);
    assert_eq!(
        probes.record.snapshot(),
        [terminated_entry(target.id()), terminated_entry(fence.id())]
    );
}

/// Regression test: a `Terminated` that reaches a watcher while the watcher
/// is restarting must be delivered to the new instance, as one arriving after
/// the restart is (the fence): the watch survives the restart.
#[test]
fn a_terminated_arriving_during_the_watchers_restart_is_delivered_after_it() {
    let system = system();
    // The watcher's child is held in its handler, so the watcher's restart
    // waits (children stop first) until the latch opens.
    let latch = Latch::new();
    let (watcher, probes) = spawn_watcher(&system, Some(latch.clone()));
    latch.expect_waiters(1, PATIENCE);
    let target = spawn_target(&system);
    let fence = spawn_target(&system);
    command(&watcher, &probes, WatcherMsg::Watch(target.clone()));
    command(&watcher, &probes, WatcherMsg::Watch(fence.clone()));
    probes.elsewhere.watch(&target, PATIENCE);

    // The watcher fails: `before_restart` acks, then the restart waits for
    // the held child.
    command(&watcher, &probes, WatcherMsg::Fail);
    // The target stops; its Terminated reaches the restarting watcher
    // (pushed before the one for `elsewhere`).
    system.stop(&target);
    probes.elsewhere.expect_terminated(&target, PATIENCE);
    latch.open();
    probes.acks.expect_msg(PATIENCE); // after_restart ran

    system.stop(&fence);
    assert_eq!(
        probes.terminated.expect_msg(PATIENCE),
        target.id(),
        "the watch survives the restart, so the target's Terminated must come \
         (before the fence's)"
    );
    assert_eq!(probes.terminated.expect_msg(PATIENCE), fence.id());
    terminate(&system, PATIENCE);
    assert_eq!(
        probes.record.snapshot(),
        [
            "restarted".to_string(),
            terminated_entry(target.id()),
            terminated_entry(fence.id())
        ]
    );
}

#[test]
fn a_watcher_that_stops_first_is_not_a_problem() {
    let system = system();
    let (watcher, probes) = spawn_watcher(&system, None);
    let target = spawn_target(&system);
    command(&watcher, &probes, WatcherMsg::Watch(target.clone()));
    system.stop(&watcher);
    probes.elsewhere.expect_terminated(&watcher, PATIENCE);
    system.stop(&target);
    probes.elsewhere.expect_terminated(&target, PATIENCE);
    terminate(&system, PATIENCE);
    assert!(
        probes.record.snapshot().is_empty(),
        "a stopped watcher is told nothing"
    );
    assert_eq!(
        system.dead_letter_count(),
        0,
        "signals are not dead letters"
    );
}

/// Watches a target on command and acknowledges; reports its `stopped`.
struct ShortLived {
    acks: ActorRef<()>,
}

impl Actor for ShortLived {
    type Msg = ActorRef<<Target as Actor>::Msg>;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, target: Self::Msg) {
        ctx.watch(&target);
        self.acks.tell(());
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.acks.tell(());
    }
}

/// Whether `token` is still shared, re-checked until [`PATIENCE`] runs out:
/// the runtime lets go of a stopped actor's cell a moment after its
/// `stopped` hook (after the run returns), with no event to wait for.
fn still_shared(token: &Arc<()>) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while Arc::strong_count(token) > 1 {
        if Instant::now() >= deadline {
            return true;
        }
        thread::yield_now();
    }
    false
}

/// A watcher that stops must not stay referenced by the actors it watched
/// (in their watcher lists) until those stop: short-lived watchers of a
/// long-lived actor would leak.
///
/// The watcher's supervisor strategy holds a token; the strategy lives as
/// long as the watcher's cell, so the token's count shows whether anything
/// still holds the cell.
#[test]
fn a_stopped_watcher_is_not_kept_alive_by_the_actor_it_watched() {
    let system = system();
    let target = spawn_target(&system);
    let token = Arc::new(());
    let strategy = {
        let token = token.clone();
        SupervisorStrategy::deciding(move |_| {
            let _held = &token;
            Directive::Restart
        })
    };
    let acks = TestProbe::new(&system, "short-lived watcher");
    let out = acks.actor_ref();
    let watcher = system
        .spawn(Props::new(move || ShortLived { acks: out.clone() }).supervisor(strategy))
        .unwrap();
    watcher.tell(target.clone());
    acks.expect_msg(PATIENCE); // watching
    system.stop(&watcher);
    drop(watcher);
    acks.expect_msg(PATIENCE); // stopped

    let held_by_live_target = still_shared(&token);
    system.stop(&target);
    acks.expect_terminated(&target, PATIENCE);
    let held_after_target_stopped = still_shared(&token);
    terminate(&system, PATIENCE);
    assert!(
        !held_by_live_target,
        "the stopped watcher's cell is still referenced while the watched actor lives{}",
        if held_after_target_stopped {
            ""
        } else {
            " (and released once the watched actor stopped: its watcher list kept it)"
        }
    );
    assert!(!held_after_target_stopped);
}

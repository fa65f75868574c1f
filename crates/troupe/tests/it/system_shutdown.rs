//! Shutdown and dead letters: `shutdown` stops every actor children-first and
//! `await_termination` reports `Requested`; messages still queued when an
//! actor stops, and messages told to a stopped actor, become dead letters
//! (counted, and shown to `on_dead_letter` listeners with their type);
//! `try_tell` to a stopped actor hands the message back; and waiting for
//! termination inside an actor, which could never end, is refused. That no
//! runtime thread outlives `await_termination` is checked in a process of
//! its own, `tests/thread_census.rs`.

use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use crate::support::{system, PATIENCE};
use troupe::{
    Actor, ActorRef, ActorSystem, AwaitError, Context, DeadLetter, Props, TerminationReason,
    TrySendError,
};
use troupe_testkit::{terminate, EventLog, Latch, TestProbe};

/// A tree node that logs its `stopped` with its path.
struct Node {
    path: String,
    depth: u32,
    log: EventLog,
    ready: ActorRef<()>,
}

impl Node {
    fn props(path: String, depth: u32, log: EventLog, ready: ActorRef<()>) -> Props<Node> {
        Props::new(move || Node {
            path: path.clone(),
            depth,
            log: log.clone(),
            ready: ready.clone(),
        })
    }
}

impl Actor for Node {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if self.depth == 0 {
            self.ready.tell(());
        }
        for i in 0..if self.depth > 0 { 2 } else { 0 } {
            let props = Node::props(
                format!("{}/{i}", self.path),
                self.depth - 1,
                self.log.clone(),
                self.ready.clone(),
            );
            ctx.spawn(props).expect("spawn a child");
        }
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.push(self.path.clone());
    }
}

#[test]
fn shutdown_stops_a_three_level_tree_children_first() {
    let system = system();
    let log = EventLog::new();
    let ready = TestProbe::new(&system, "leaves started");
    for root in ["a", "b"] {
        system
            .spawn(Node::props(root.into(), 2, log.clone(), ready.actor_ref()).name(root))
            .unwrap();
    }
    ready.receive_n(8, PATIENCE);

    assert_eq!(terminate(&system, PATIENCE), TerminationReason::Requested);
    assert!(system.is_terminated());
    assert_eq!(system.top_level_count(), 0);
    let stopped = log.snapshot();
    assert_eq!(stopped.len(), 14, "every node stopped once: {stopped:?}");
    for (i, path) in stopped.iter().enumerate() {
        for descendant in stopped
            .iter()
            .filter(|p| p.starts_with(&format!("{path}/")))
        {
            let j = log.position(descendant);
            assert!(
                j < i,
                "{descendant} stopped after its ancestor {path}: {stopped:?}"
            );
        }
    }
}

/// The message type whose name the dead-letter records must show.
enum BlockerMsg {
    /// Hold the handler until the latch opens.
    Block(Latch),
    Work(u32),
}

/// Counts the work it does; blocks when told to (it runs on a pinned thread,
/// where blocking holds nobody else up).
struct Blocker {
    worked: ActorRef<u32>,
}

impl Actor for Blocker {
    type Msg = BlockerMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: BlockerMsg) {
        match msg {
            BlockerMsg::Block(latch) => latch.wait(PATIENCE),
            BlockerMsg::Work(n) => self.worked.tell(n),
        }
    }
}

/// Every dead letter of `system`, on a plain channel: a tell to a probe from
/// the listener, once the probe has stopped at shutdown, would be a dead
/// letter of its own, back to the listener, without end.
fn dead_letters(system: &ActorSystem) -> Receiver<DeadLetter> {
    let (out, letters) = mpsc::channel();
    system.on_dead_letter(move |letter| {
        let _ = out.send(letter.clone());
    });
    letters
}

/// The next `n` dead letters, each within [`PATIENCE`].
fn next_letters(letters: &Receiver<DeadLetter>, n: usize) -> Vec<DeadLetter> {
    (0..n)
        .map(|i| {
            letters.recv_timeout(PATIENCE).unwrap_or_else(|e| {
                panic!("expected {n} dead letters within {PATIENCE:?} each, {i} came: {e}")
            })
        })
        .collect()
}

#[test]
fn messages_queued_at_stop_become_counted_dead_letters() {
    const QUEUED: usize = 50;
    let system = system();
    let letters = dead_letters(&system);

    let worked = TestProbe::new(&system, "work done");
    let blocker = {
        let worked = worked.actor_ref();
        system
            .spawn(
                Props::new(move || Blocker {
                    worked: worked.clone(),
                })
                .name("blocker")
                .dispatcher("pinned"),
            )
            .unwrap()
    };
    let latch = Latch::new();
    blocker.tell(BlockerMsg::Block(latch.clone()));
    latch.expect_waiters(1, PATIENCE);
    for n in 0..QUEUED as u32 {
        blocker.tell(BlockerMsg::Work(n));
    }
    system.stop(&blocker);
    latch.open();

    let got = next_letters(&letters, QUEUED);
    for letter in &got {
        assert_eq!(letter.recipient, blocker.id());
        assert_eq!(letter.recipient_name.as_deref(), Some("blocker"));
        assert!(
            letter.message_type.ends_with("BlockerMsg"),
            "the record names the message type: {}",
            letter.message_type
        );
    }
    terminate(&system, PATIENCE);
    assert_eq!(system.dead_letter_count(), QUEUED as u64);
    let other: Vec<_> = letters.try_iter().collect();
    assert!(other.is_empty(), "no other dead letter: {other:?}");
    assert!(
        worked.received().is_empty(),
        "no queued work ran after the stop"
    );
}

/// Echoes strings back through a probe.
struct Echo {
    out: ActorRef<String>,
}

impl Actor for Echo {
    type Msg = String;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: String) {
        self.out.tell(msg);
    }
}

#[test]
fn tells_to_a_stopped_actor_become_dead_letters_and_try_tell_hands_back() {
    let system = system();
    let letters = dead_letters(&system);
    let echoed = TestProbe::new(&system, "echo");
    let echo = {
        let out = echoed.actor_ref();
        system
            .spawn(Props::new(move || Echo { out: out.clone() }).name("echo"))
            .unwrap()
    };

    assert_eq!(echo.try_tell("alive".to_string()), Ok(()));
    echoed.expect_msg_eq("alive".to_string(), PATIENCE);
    assert!(!echo.is_terminated());

    system.stop(&echo);
    echoed.expect_terminated(&echo, PATIENCE);
    assert!(echo.is_terminated(), "terminated once watchers hear of it");

    assert_eq!(
        echo.try_tell("late".to_string()),
        Err(TrySendError::Closed("late".to_string())),
        "the message is handed back"
    );
    for _ in 0..3 {
        echo.tell("too late".to_string());
    }
    let got = next_letters(&letters, 3);
    assert!(got
        .iter()
        .all(|l| l.recipient == echo.id() && l.message_type.contains("String")));
    terminate(&system, PATIENCE);
    assert_eq!(
        system.dead_letter_count(),
        3,
        "try_tell's refusal is no dead letter"
    );
    assert!(echoed.received().is_empty());
}

/// Waits for its own system's termination inside its handler.
struct Awaiter;

impl Actor for Awaiter {
    type Msg = ActorRef<Result<TerminationReason, AwaitError>>;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, out: Self::Msg) {
        // The system cannot terminate while this handler runs, so any wait
        // here could only end by timing out.
        out.tell(
            ctx.system()
                .await_termination_timeout(Duration::from_millis(200)),
        );
    }
}

fn await_inside_an_actor_on(dispatcher: &str) -> Result<TerminationReason, AwaitError> {
    let system = system();
    let awaiter = system
        .spawn(Props::new(|| Awaiter).dispatcher(dispatcher))
        .unwrap();
    let outcome = TestProbe::new(&system, "await_termination inside a handler");
    awaiter.tell(outcome.actor_ref());
    let got = outcome.expect_msg(PATIENCE);
    terminate(&system, PATIENCE);
    got
}

#[test]
fn await_termination_inside_a_pool_actor_is_refused() {
    assert_eq!(
        await_inside_an_actor_on("default"),
        Err(AwaitError::WouldDeadlock)
    );
}

/// On a pinned thread, too, the wait must be refused: it blocks the very
/// actor the system would have to stop (without a timeout, a deadlock).
#[test]
fn await_termination_inside_a_pinned_actor_is_refused() {
    assert_eq!(
        await_inside_an_actor_on("pinned"),
        Err(AwaitError::WouldDeadlock)
    );
}

//! The lifecycle of one actor: `started` runs before the first message,
//! `stopped` runs once after the actor and all its descendants have stopped
//! (deepest first), `ctx.stop()` takes effect after the current message and
//! `system.stop` from outside; and the ways a spawn is refused (a taken
//! name, an invalid name, an unknown dispatcher, a system shutting down).

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorRef, Context, Props, SpawnError};
use troupe_testkit::{await_termination, terminate, EventLog, TestProbe};

/// Logs its lifecycle under `name` and reports `stopped` on a probe.
struct Logged {
    name: String,
    log: EventLog,
    started: Option<ActorRef<String>>,
    stopped: Option<ActorRef<String>>,
    /// Stop itself (`ctx.stop()`) while handling this message.
    stop_on: Option<u32>,
}

impl Logged {
    fn props(name: &str, log: &EventLog) -> Props<Logged> {
        let (name, log) = (name.to_string(), log.clone());
        Props::new(move || Logged {
            name: name.clone(),
            log: log.clone(),
            started: None,
            stopped: None,
            stop_on: None,
        })
    }
}

impl Actor for Logged {
    type Msg = u32;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.push(format!("started:{}", self.name));
        if let Some(p) = &self.started {
            p.tell(self.name.clone());
        }
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
        self.log.push(format!("msg:{}:{n}", self.name));
        if self.stop_on == Some(n) {
            ctx.stop();
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.push(format!("stopped:{}", self.name));
        if let Some(p) = &self.stopped {
            p.tell(self.name.clone());
        }
    }
}

#[test]
fn started_runs_before_the_first_message_and_stopped_after_the_last() {
    let system = system();
    let log = EventLog::new();
    let stopped = TestProbe::new(&system, "stopped");
    let actor = {
        let (log, out) = (log.clone(), stopped.actor_ref());
        system
            .spawn(Props::new(move || Logged {
                name: "a".into(),
                log: log.clone(),
                started: None,
                stopped: Some(out.clone()),
                stop_on: Some(3),
            }))
            .unwrap()
    };
    // Sent at once, racing with the actor's first run: `started` still goes
    // first. (The actor stops itself: a `system.stop` would overtake queued
    // messages, since system messages go first.)
    for n in 1..=3 {
        actor.tell(n);
    }
    stopped.expect_msg_eq("a".to_string(), PATIENCE);
    terminate(&system, PATIENCE);
    assert_eq!(
        log.snapshot(),
        ["started:a", "msg:a:1", "msg:a:2", "msg:a:3", "stopped:a"]
    );
    assert_eq!(system.dead_letter_count(), 0);
}

/// A node of a tree: spawns `fanout` children of depth `depth - 1` when it
/// starts, and reports `ready` once it is a leaf.
struct Node {
    name: String,
    depth: u32,
    log: EventLog,
    ready: ActorRef<String>,
    stopped: ActorRef<String>,
}

impl Node {
    fn props(
        name: String,
        depth: u32,
        log: EventLog,
        ready: ActorRef<String>,
        stopped: ActorRef<String>,
    ) -> Props<Node> {
        Props::new(move || Node {
            name: name.clone(),
            depth,
            log: log.clone(),
            ready: ready.clone(),
            stopped: stopped.clone(),
        })
    }
}

impl Actor for Node {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if self.depth == 0 {
            self.ready.tell(self.name.clone());
            return;
        }
        for i in 0..2 {
            let child = format!("{}.{i}", self.name);
            let props = Node::props(
                child,
                self.depth - 1,
                self.log.clone(),
                self.ready.clone(),
                self.stopped.clone(),
            )
            .name(format!("c{i}"));
            ctx.spawn(props).expect("spawn a child");
        }
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        assert!(ctx.children().is_empty(), "children outlived {}", self.name);
        self.log.push(format!("stopped:{}", self.name));
        self.stopped.tell(self.name.clone());
    }
}

/// Asserts that in `log` every node's `stopped` comes after its children's.
fn assert_children_stop_first(log: &EventLog, names: &[&str]) {
    for name in names {
        let parent = log.position(&format!("stopped:{name}"));
        for i in 0..2 {
            let child = format!("stopped:{name}.{i}");
            assert!(
                log.position(&child) < parent,
                "{child} must precede stopped:{name}: {:?}",
                log.snapshot()
            );
        }
    }
}

#[test]
fn stopped_runs_after_all_children_and_grandchildren_stopped() {
    let system = system();
    let log = EventLog::new();
    let ready = TestProbe::new(&system, "leaves ready");
    let stopped = TestProbe::new(&system, "stopped");
    let root = system
        .spawn(
            Node::props(
                "r".into(),
                2,
                log.clone(),
                ready.actor_ref(),
                stopped.actor_ref(),
            )
            .name("root"),
        )
        .unwrap();
    ready.receive_n(4, PATIENCE);
    stopped.watch(&root, PATIENCE);

    system.stop(&root);
    let order = stopped.receive_n(7, PATIENCE);
    assert_eq!(
        order.last().map(String::as_str),
        Some("r"),
        "the root stops last: {order:?}"
    );
    assert_children_stop_first(&log, &["r", "r.0", "r.1"]);
    // `stopped` runs before the mailbox closes; watchers hear after it.
    stopped.expect_terminated(&root, PATIENCE);
    assert!(root.is_terminated());
    terminate(&system, PATIENCE);
    assert!(stopped.received().is_empty(), "each stopped hook ran once");
    // The log also has what a probe stopped at shutdown would have missed.
    assert_eq!(
        log.snapshot().len(),
        7,
        "each stopped hook ran once: {:?}",
        log.snapshot()
    );
}

#[test]
fn ctx_stop_stops_after_the_current_message() {
    let system = system();
    let log = EventLog::new();
    let stopped = TestProbe::new(&system, "stopped");
    let actor = {
        let (log, out) = (log.clone(), stopped.actor_ref());
        system
            .spawn(Props::new(move || Logged {
                name: "s".into(),
                log: log.clone(),
                started: None,
                stopped: Some(out.clone()),
                stop_on: Some(2),
            }))
            .unwrap()
    };
    for n in 1..=5 {
        actor.tell(n);
    }
    stopped.expect_msg_eq("s".to_string(), PATIENCE);
    terminate(&system, PATIENCE);
    assert_eq!(
        log.snapshot(),
        ["started:s", "msg:s:1", "msg:s:2", "stopped:s"]
    );
    assert_eq!(
        system.dead_letter_count(),
        3,
        "messages 3..=5 are dead letters"
    );
}

#[test]
fn system_stop_stops_an_actor_from_outside() {
    let system = system();
    let log = EventLog::new();
    let started = TestProbe::new(&system, "started");
    let actor = {
        let (log, out) = (log.clone(), started.actor_ref());
        system
            .spawn(Props::new(move || Logged {
                name: "x".into(),
                log: log.clone(),
                started: Some(out.clone()),
                stopped: None,
                stop_on: None,
            }))
            .unwrap()
    };
    started.watch(&actor, PATIENCE);
    // A stop sent before the actor's first run overtakes its start (system
    // messages go first), and then neither `started` nor `stopped` runs.
    started.expect_msg_eq("x".to_string(), PATIENCE);
    assert!(!actor.is_terminated());

    system.stop(&actor);
    started.expect_terminated(&actor, PATIENCE);
    assert!(actor.is_terminated());
    terminate(&system, PATIENCE);
    assert_eq!(log.snapshot(), ["started:x", "stopped:x"]);
}

/// Spawns a child for each of the given names when it starts and reports each
/// spawn's outcome.
struct Spawner {
    names: Vec<String>,
    results: ActorRef<Result<String, SpawnError>>,
}

impl Actor for Spawner {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let log = EventLog::new();
        for name in &self.names {
            let result = ctx
                .spawn(Logged::props(name, &log).name(name.clone()))
                .map(|child: ActorRef<u32>| child.name().unwrap_or_default().to_string());
            self.results.tell(result);
        }
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
}

fn spawner_results(names: &[&str]) -> Vec<Result<String, SpawnError>> {
    let system = system();
    let results = TestProbe::new(&system, "child spawn results");
    let out = results.actor_ref();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let count = names.len();
    system
        .spawn(Props::new(move || Spawner {
            names: names.clone(),
            results: out.clone(),
        }))
        .unwrap();
    let got = results.receive_n(count, PATIENCE);
    terminate(&system, PATIENCE);
    got
}

#[test]
fn a_duplicate_name_is_refused_with_name_taken() {
    let system = system();
    let log = EventLog::new();
    let first = system
        .spawn(Logged::props("w", &log).name("worker"))
        .unwrap();
    assert_eq!(first.name(), Some("worker"));
    let second = system.spawn(Logged::props("w2", &log).name("worker"));
    assert_eq!(second.err(), Some(SpawnError::NameTaken("worker".into())));
    assert_eq!(system.top_level_count(), 1);
    terminate(&system, PATIENCE);

    // Among siblings under an actor, too.
    assert_eq!(
        spawner_results(&["kid", "kid"]),
        [
            Ok("kid".to_string()),
            Err(SpawnError::NameTaken("kid".into()))
        ]
    );
}

#[test]
fn invalid_names_are_refused() {
    let system = system();
    let log = EventLog::new();
    let too_long = "n".repeat(256);
    for bad in ["", "a/b", "$x", too_long.as_str()] {
        let result = system.spawn(Logged::props("bad", &log).name(bad));
        assert_eq!(
            result.err(),
            Some(SpawnError::InvalidName(bad.to_string())),
            "top-level name {bad:?}"
        );
    }
    assert!(system
        .spawn(Logged::props("ok", &log).name("n".repeat(255)))
        .is_ok());
    assert_eq!(system.top_level_count(), 1);
    terminate(&system, PATIENCE);

    assert_eq!(
        spawner_results(&["", "a/b", "$x"]),
        [
            Err(SpawnError::InvalidName("".into())),
            Err(SpawnError::InvalidName("a/b".into())),
            Err(SpawnError::InvalidName("$x".into())),
        ]
    );
}

#[test]
fn an_unknown_dispatcher_is_refused() {
    let system = system();
    let log = EventLog::new();
    let result = system.spawn(Logged::props("d", &log).dispatcher("no-such-dispatcher"));
    assert_eq!(
        result.err(),
        Some(SpawnError::UnknownDispatcher("no-such-dispatcher".into()))
    );
    assert_eq!(system.top_level_count(), 0);
    terminate(&system, PATIENCE);
    assert!(log.snapshot().is_empty(), "nothing was started");
}

#[test]
fn spawning_after_shutdown_is_refused() {
    let system = system();
    let log = EventLog::new();
    let _running = system.spawn(Logged::props("r", &log)).unwrap();
    system.shutdown();
    assert_eq!(
        system.spawn(Logged::props("late", &log)).err(),
        Some(SpawnError::ShuttingDown),
        "refused while shutting down"
    );
    await_termination(&system, PATIENCE);
    assert_eq!(
        system.spawn(Logged::props("later", &log)).err(),
        Some(SpawnError::ShuttingDown),
        "refused after termination"
    );
    assert!(!log.snapshot().iter().any(|e| e.contains("late")));
}

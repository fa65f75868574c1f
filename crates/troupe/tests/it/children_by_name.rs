//! Children by name: `Context::child::<M>(name)` finds a live named child
//! as a ref of its message type (and nothing for a missing name, another
//! message type, or a child that has stopped, whose name a new child may
//! then take), and `Signal::Terminated` carries the stopped actor's name
//! (none for an unnamed one).

use std::sync::Arc;

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorId, ActorRef, Context, Props, Signal};
use troupe_testkit::{terminate, TestProbe};

/// Echoes what it is told to the probe, tagged with its generation.
struct Child {
    generation: u32,
    out: ActorRef<(u32, String)>,
}

impl Actor for Child {
    type Msg = String;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if self.generation == 0 {
            ctx.stop();
        }
    }
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: String) {
        if msg == "stop" {
            ctx.stop();
        } else {
            self.out.tell((self.generation, msg));
        }
    }
}

/// What the test asks the parent to do.
enum Cmd {
    Spawn {
        name: Option<&'static str>,
        generation: u32,
    },
    /// Looks `name` up as a `String` child and tells it `text`.
    Tell(&'static str, String),
    /// Looks `name` up with the wrong message type.
    LookupAsU64(&'static str),
}

/// What the parent reports.
#[derive(Debug, PartialEq)]
enum Report {
    Missing(&'static str),
    Found(&'static str),
    Terminated(ActorId, Option<Arc<str>>),
}

struct Parent {
    children: ActorRef<(u32, String)>,
    reports: ActorRef<Report>,
}

impl Actor for Parent {
    type Msg = Cmd;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, cmd: Cmd) {
        match cmd {
            Cmd::Spawn { name, generation } => {
                let out = self.children.clone();
                let props = Props::new(move || Child {
                    generation,
                    out: out.clone(),
                });
                let props = match name {
                    Some(name) => props.name(name),
                    None => props,
                };
                let child = ctx.spawn(props).unwrap();
                ctx.watch(&child);
            }
            Cmd::Tell(name, text) => match ctx.child::<String>(name) {
                Some(child) => child.tell(text),
                None => self.reports.tell(Report::Missing(name)),
            },
            Cmd::LookupAsU64(name) => self.reports.tell(match ctx.child::<u64>(name) {
                Some(_) => Report::Found(name),
                None => Report::Missing(name),
            }),
        }
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, name) = signal {
            self.reports.tell(Report::Terminated(id, name));
        }
    }
}

#[test]
fn a_child_is_found_by_name_with_its_message_type_while_it_lives() {
    let system = system();
    let children = TestProbe::new(&system, "children");
    let reports = TestProbe::new(&system, "reports");
    let (c, r) = (children.actor_ref(), reports.actor_ref());
    let parent = system
        .spawn(Props::new(move || Parent {
            children: c.clone(),
            reports: r.clone(),
        }))
        .unwrap();

    parent.tell(Cmd::Spawn {
        name: Some("ann"),
        generation: 1,
    });
    parent.tell(Cmd::Tell("ann", "hello".into()));
    children.expect_msg_eq((1, "hello".into()), PATIENCE);

    parent.tell(Cmd::Tell("bob", "hello".into()));
    reports.expect_msg_eq(Report::Missing("bob"), PATIENCE);
    parent.tell(Cmd::LookupAsU64("ann"));
    reports.expect_msg_eq(Report::Missing("ann"), PATIENCE);

    // Stopped: the parent's watch reports it with its name, the lookup
    // finds nothing, and the name is free for a new child.
    parent.tell(Cmd::Tell("ann", "stop".into()));
    let Report::Terminated(_, name) = reports.expect_msg(PATIENCE) else {
        panic!("expected ann's termination");
    };
    assert_eq!(name.as_deref(), Some("ann"));
    parent.tell(Cmd::Tell("ann", "anyone?".into()));
    reports.expect_msg_eq(Report::Missing("ann"), PATIENCE);
    parent.tell(Cmd::Spawn {
        name: Some("ann"),
        generation: 2,
    });
    parent.tell(Cmd::Tell("ann", "again".into()));
    children.expect_msg_eq((2, "again".into()), PATIENCE);
    terminate(&system, PATIENCE);
}

#[test]
fn an_unnamed_actor_terminates_without_a_name() {
    let system = system();
    let children = TestProbe::new(&system, "children");
    let reports = TestProbe::new(&system, "reports");
    let (c, r) = (children.actor_ref(), reports.actor_ref());
    let parent = system
        .spawn(Props::new(move || Parent {
            children: c.clone(),
            reports: r.clone(),
        }))
        .unwrap();
    // Generation 0 stops as soon as it starts.
    parent.tell(Cmd::Spawn {
        name: None,
        generation: 0,
    });
    let Report::Terminated(_, name) = reports.expect_msg(PATIENCE) else {
        panic!("expected the child's termination");
    };
    assert_eq!(name, None);
    terminate(&system, PATIENCE);
}

//! A chat room found through the receptionist, and a monitor on the event
//! stream: users look the room up by its service key, join, and talk; the
//! room notices a user who leaves (death watch), and the monitor hears of
//! every actor that stops.
//!
//! `cargo run -p troupe --example chat_room`

use std::sync::mpsc;
use std::time::Duration;

use troupe::prelude::*;
use troupe::{ActorEvent, ActorEventKind, ServiceKey};

enum Room {
    Join(String, ActorRef<String>),
    Say(String, String),
}

#[derive(Default)]
struct ChatRoom {
    members: Vec<(String, ActorRef<String>)>,
}

impl Actor for ChatRoom {
    type Msg = Room;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Room) {
        match msg {
            Room::Join(name, user) => {
                ctx.watch(&user);
                self.members.push((name, user));
            }
            Room::Say(from, text) => {
                for (_, member) in &self.members {
                    member.tell(format!("{from}: {text}"));
                }
            }
        }
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            self.members.retain(|(_, m)| m.id() != id);
        }
    }
}

/// A user prints what the room tells it.
struct User(&'static str, mpsc::Sender<String>);
impl Actor for User {
    type Msg = String;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, line: String) {
        self.1.send(format!("[{}] {line}", self.0)).unwrap();
    }
}

/// Hears of every actor that stops, through the event stream.
struct Monitor(mpsc::Sender<String>);
impl Actor for Monitor {
    type Msg = ActorEvent;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, event: ActorEvent) {
        if event.kind == ActorEventKind::Stopped {
            let name = event.name.unwrap_or_else(|| event.actor.to_string());
            self.0.send(format!("(monitor) {name} stopped")).unwrap();
        }
    }
}

fn main() {
    let system = ActorSystem::builder()
        .name("chat")
        .threads(2)
        .build()
        .unwrap();
    let (out, lines) = mpsc::channel();
    let next = || lines.recv_timeout(Duration::from_secs(5)).unwrap();
    let monitor = system
        .spawn(Props::new({
            let out = out.clone();
            move || Monitor(out.clone())
        }))
        .unwrap();
    system.event_stream().subscribe(monitor);

    let lobby = ServiceKey::<Room>::new("lobby");
    let room = system
        .spawn(Props::new(ChatRoom::default).name("lobby"))
        .unwrap();
    system.receptionist().register(&lobby, room);

    // A user finds the room by its key, not by a ref handed around.
    let found = system
        .receptionist()
        .find(&lobby, Duration::from_secs(5))
        .wait()
        .unwrap();
    let room = found.refs()[0].clone();
    let mut users = Vec::new();
    for name in ["alice", "bob"] {
        let out = out.clone();
        let user = system
            .spawn(Props::new(move || User(name, out.clone())).name(name))
            .unwrap();
        room.tell(Room::Join(name.to_string(), user.clone()));
        users.push(user);
    }
    room.tell(Room::Say("alice".into(), "hi bob".into()));
    let mut heard = [next(), next()];
    heard.sort();
    println!("{}\n{}", heard[0], heard[1]);

    // Bob leaves. The room watches its members, so it drops him; the
    // monitor is told after the watchers, so the room knows by then.
    system.stop(&users[1]);
    println!("{}", next());
    room.tell(Room::Say("alice".into(), "anyone?".into()));
    let alone = next();
    println!("{alone}");
    assert_eq!(alone, "[alice] alice: anyone?");
    assert_eq!(
        system.dead_letter_count(),
        0,
        "nothing was sent to bob after he left"
    );

    system.shutdown();
    system.await_termination().unwrap();
}

//! Message adapters (`Context::message_adapter`): messages of another type
//! reach the owner converted and in send order; an adapter works as the
//! reply address of an ask to an actor with another protocol; it stands for
//! its owner under death watch; once the owner has stopped its messages are
//! dead letters (and a stop sent to it does not stop the owner).

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorRef, ActorSystem, AskError, Context, Props, ReplyTo};
use troupe_testkit::{terminate, TestProbe};

/// What the owner reports to its probe.
#[derive(Debug, PartialEq)]
enum Seen {
    Direct(u32),
    Adapted(String),
    Answer(Result<u64, String>),
}

/// What the owner receives: its own messages and converted ones.
enum OwnerMsg {
    Direct(u32),
    Adapted(String),
    Answer(Result<u64, String>),
    /// Hand out an adapter that converts `u32`s.
    GiveAdapter(ActorRef<ActorRef<u32>>),
    /// Ask the doubler for `n` with the reply routed through an adapter.
    AskDoubler(ActorRef<DoublerMsg>, u64),
    Stop,
}

struct Owner {
    seen: ActorRef<Seen>,
}

impl Actor for Owner {
    type Msg = OwnerMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: OwnerMsg) {
        match msg {
            OwnerMsg::GiveAdapter(out) => {
                out.tell(ctx.message_adapter(|n: u32| OwnerMsg::Adapted(format!("#{n}"))));
            }
            OwnerMsg::AskDoubler(doubler, n) => {
                let answers = ctx.message_adapter(|r: Result<u64, AskError>| {
                    OwnerMsg::Answer(r.map_err(|e| e.to_string()))
                });
                doubler
                    .ask(|reply| DoublerMsg { n, reply }, PATIENCE)
                    .on_answer(move |r| answers.tell(r));
            }
            OwnerMsg::Stop => ctx.stop(),
            OwnerMsg::Direct(n) => self.seen.tell(Seen::Direct(n)),
            OwnerMsg::Adapted(text) => self.seen.tell(Seen::Adapted(text)),
            OwnerMsg::Answer(answer) => self.seen.tell(Seen::Answer(answer)),
        }
    }
}

/// Another protocol: answers with twice the number it is given.
struct DoublerMsg {
    n: u64,
    reply: ReplyTo<u64>,
}

struct Doubler;

impl Actor for Doubler {
    type Msg = DoublerMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: DoublerMsg) {
        msg.reply.reply(msg.n * 2);
    }
}

fn spawn_owner(system: &ActorSystem) -> (ActorRef<OwnerMsg>, TestProbe<Seen>) {
    let seen = TestProbe::new(system, "owner");
    let out = seen.actor_ref();
    let owner = system
        .spawn(Props::new(move || Owner { seen: out.clone() }))
        .unwrap();
    (owner, seen)
}

fn adapter_of(system: &ActorSystem, owner: &ActorRef<OwnerMsg>) -> ActorRef<u32> {
    let given = TestProbe::new(system, "adapter");
    owner.tell(OwnerMsg::GiveAdapter(given.actor_ref()));
    given.expect_msg(PATIENCE)
}

#[test]
fn adapted_messages_arrive_converted_and_in_send_order() {
    let system = system();
    let (owner, seen) = spawn_owner(&system);
    let adapter = adapter_of(&system, &owner);
    assert_eq!(adapter.id(), owner.id(), "an adapter has its owner's id");
    for i in 0..100 {
        if i % 2 == 0 {
            owner.tell(OwnerMsg::Direct(i));
        } else {
            adapter.tell(i);
        }
    }
    let got = seen.receive_n(100, PATIENCE);
    let want: Vec<Seen> = (0..100)
        .map(|i| {
            if i % 2 == 0 {
                Seen::Direct(i)
            } else {
                Seen::Adapted(format!("#{i}"))
            }
        })
        .collect();
    assert_eq!(got, want);
    terminate(&system, PATIENCE);
}

#[test]
fn an_adapter_is_the_reply_address_of_an_ask_to_another_protocol() {
    let system = system();
    let (owner, seen) = spawn_owner(&system);
    let doubler = system.spawn(Props::new(|| Doubler)).unwrap();
    owner.tell(OwnerMsg::AskDoubler(doubler.clone(), 21));
    seen.expect_msg_eq(Seen::Answer(Ok(42)), PATIENCE);
    // An ask the other side drops unanswered reaches the owner as an error.
    system.stop(&doubler);
    seen.expect_terminated(&doubler, PATIENCE);
    owner.tell(OwnerMsg::AskDoubler(doubler, 1));
    seen.expect_msg_matching("a failed answer", PATIENCE, |s| {
        matches!(s, Seen::Answer(Err(_)))
    });
    terminate(&system, PATIENCE);
}

#[test]
fn an_adapter_dies_with_its_owner_and_cannot_stop_it() {
    let system = system();
    let (owner, seen) = spawn_owner(&system);
    let adapter = adapter_of(&system, &owner);

    // A stop addressed to the adapter leaves the owner running.
    system.stop(&adapter);
    adapter.tell(7);
    seen.expect_msg_eq(Seen::Adapted("#7".into()), PATIENCE);
    assert!(!owner.is_terminated());

    // Watching the adapter is watching the owner: the `Terminated` the
    // probe expects carries the adapter's id, which is the owner's.
    assert_eq!(adapter.id(), owner.id());
    seen.watch(&adapter, PATIENCE);
    owner.tell(OwnerMsg::Stop);
    seen.expect_terminated(&adapter, PATIENCE);
    assert!(adapter.is_terminated());

    // Used after its owner stopped, it turns messages into dead letters (a
    // send that finds the mailbox closed drains it on the sender's thread,
    // so the count has moved when `tell` returns).
    let before = system.dead_letter_count();
    adapter.tell(8);
    adapter.tell(9);
    assert_eq!(system.dead_letter_count(), before + 2);
    terminate(&system, PATIENCE);
    assert!(
        seen.received().is_empty(),
        "nothing reaches a stopped owner"
    );
}

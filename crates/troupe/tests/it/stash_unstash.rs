//! The stash (`Context::stash`, `unstash_all`, `unstash_one`): unstashed
//! messages are handled before newer mailbox messages, in their original
//! order; stashing beyond `Props::stash_capacity` hands the message back; a
//! restart hands the stash to the fresh instance first; a stop turns it into
//! dead letters.

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorRef, Context, Props, StashFull, SupervisorStrategy};
use troupe_testkit::{quiet_panics, terminate, TestProbe};

#[derive(Debug)]
enum Msg {
    /// Handled when open, stashed when closed.
    Item(u32),
    Open,
    /// Unstash only the oldest stashed item (and stay closed).
    One,
    Close,
    /// Panics, to restart the actor.
    Crash,
    Stop,
}

/// What the actor reports.
#[derive(Debug, PartialEq)]
enum Seen {
    Handled(u32),
    Full { item: u32, capacity: usize },
    Started,
}

struct Gate {
    open: bool,
    seen: ActorRef<Seen>,
}

impl Actor for Gate {
    type Msg = Msg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.seen.tell(Seen::Started);
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Item(n) if self.open => self.seen.tell(Seen::Handled(n)),
            Msg::Item(n) => {
                if let Err(StashFull { msg, capacity }) = ctx.stash(Msg::Item(n)) {
                    let Msg::Item(item) = msg else { unreachable!() };
                    self.seen.tell(Seen::Full { item, capacity });
                }
            }
            Msg::Open => {
                self.open = true;
                ctx.unstash_all();
            }
            Msg::One => {
                // Handled once, while still closed: it is stashed again,
                // behind the rest, so only the order of the stash shows.
                self.open = true;
                ctx.unstash_one();
                self.open = false;
            }
            Msg::Close => self.open = false,
            Msg::Crash => panic!("gate crash (expected)"),
            Msg::Stop => ctx.stop(),
        }
    }
}

fn spawn_gate(system: &troupe::ActorSystem, capacity: usize) -> (ActorRef<Msg>, TestProbe<Seen>) {
    let seen = TestProbe::new(system, "gate");
    let out = seen.actor_ref();
    let gate = system
        .spawn(
            Props::new(move || Gate {
                open: false,
                seen: out.clone(),
            })
            .stash_capacity(capacity)
            .supervisor(SupervisorStrategy::restart()),
        )
        .unwrap();
    seen.expect_msg_eq(Seen::Started, PATIENCE);
    (gate, seen)
}

#[test]
fn unstashed_messages_go_first_in_their_order_then_the_mailbox() {
    let system = system();
    let (gate, seen) = spawn_gate(&system, 100);
    for n in 0..10 {
        gate.tell(Msg::Item(n));
    }
    // `Open` unstashes 0..10 while 10..20 already wait in the mailbox
    // behind it: the unstashed ones must still come first.
    gate.tell(Msg::Open);
    for n in 10..20 {
        gate.tell(Msg::Item(n));
    }
    let got = seen.receive_n(20, PATIENCE);
    let want: Vec<Seen> = (0..20).map(Seen::Handled).collect();
    assert_eq!(got, want);
    terminate(&system, PATIENCE);
}

#[test]
fn stashing_beyond_the_capacity_hands_the_message_back() {
    let system = system();
    let (gate, seen) = spawn_gate(&system, 3);
    for n in 0..5 {
        gate.tell(Msg::Item(n));
    }
    seen.expect_msg_eq(
        Seen::Full {
            item: 3,
            capacity: 3,
        },
        PATIENCE,
    );
    seen.expect_msg_eq(
        Seen::Full {
            item: 4,
            capacity: 3,
        },
        PATIENCE,
    );
    gate.tell(Msg::Open);
    assert_eq!(
        seen.receive_n(3, PATIENCE),
        vec![Seen::Handled(0), Seen::Handled(1), Seen::Handled(2)]
    );
    terminate(&system, PATIENCE);
    assert!(seen.received().is_empty(), "nothing was handled twice");
}

#[test]
fn the_default_capacity_refuses_every_stash() {
    let system = system();
    let (gate, seen) = spawn_gate(&system, 0);
    gate.tell(Msg::Item(1));
    seen.expect_msg_eq(
        Seen::Full {
            item: 1,
            capacity: 0,
        },
        PATIENCE,
    );
    terminate(&system, PATIENCE);
}

#[test]
fn unstash_one_takes_the_oldest() {
    let system = system();
    let (gate, seen) = spawn_gate(&system, 10);
    for n in 0..3 {
        gate.tell(Msg::Item(n));
    }
    // `One` makes item 0 due; it is handled closed, so it is stashed again
    // behind 1 and 2. Opening then shows the stash's order: 1, 2, 0.
    gate.tell(Msg::One);
    gate.tell(Msg::Open);
    assert_eq!(
        seen.receive_n(3, PATIENCE),
        vec![Seen::Handled(1), Seen::Handled(2), Seen::Handled(0)]
    );
    terminate(&system, PATIENCE);
}

#[test]
fn a_restart_hands_the_stash_to_the_fresh_instance_first() {
    quiet_panics(&["gate crash (expected)"]);
    let system = system();
    let (gate, seen) = spawn_gate(&system, 10);
    for n in 0..3 {
        gate.tell(Msg::Item(n));
    }
    gate.tell(Msg::Crash);
    seen.expect_msg_eq(Seen::Started, PATIENCE);
    // The fresh instance starts closed: the unstashed items are stashed
    // again, ahead of item 3 that was sent after the crash.
    gate.tell(Msg::Item(3));
    gate.tell(Msg::Open);
    assert_eq!(
        seen.receive_n(4, PATIENCE),
        (0..4).map(Seen::Handled).collect::<Vec<_>>()
    );
    terminate(&system, PATIENCE);
}

#[test]
fn a_stop_turns_the_stash_into_dead_letters() {
    let system = system();
    let (gate, seen) = spawn_gate(&system, 10);
    seen.watch(&gate, PATIENCE);
    let before = system.dead_letter_count();
    for n in 0..4 {
        gate.tell(Msg::Item(n));
    }
    gate.tell(Msg::Close);
    gate.tell(Msg::Stop);
    seen.expect_terminated(&gate, PATIENCE);
    assert_eq!(system.dead_letter_count(), before + 4);
    terminate(&system, PATIENCE);
}

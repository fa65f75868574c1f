//! Ask: request-reply with a timeout. The answer can be waited for on a
//! plain thread or awaited on a tokio runtime; no reply in time gives
//! `AskError::Timeout` and a late `reply` reports `false`; a request that is
//! dropped unanswered (the actor has stopped, or its handler dropped the
//! `ReplyTo`) gives `AskError::NoReply` at once, not after the timeout; and a
//! blocking `wait` on a pool worker is refused with
//! `AskError::WouldBlockDispatcher` (a pinned actor, owning its thread, may
//! wait).

use std::thread;
use std::time::{Duration, Instant};

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorRef, AskError, Context, Props, ReplyTo};
use troupe_testkit::{terminate, TestProbe};

/// A short timeout, for asks that are meant to time out.
const SHORT: Duration = Duration::from_millis(50);

enum Req {
    /// Reply with the number doubled.
    Double(u64, ReplyTo<u64>),
    /// Keep the reply handle without answering.
    Hold(ReplyTo<u64>),
    /// Answer the held request with this value; report what `reply` said.
    ReplyHeld(u64, ActorRef<bool>),
    /// Drop the reply handle without answering.
    Ignore(ReplyTo<u64>),
    /// Ask `other` and block on the answer, inside this handler; report it.
    WaitInside(ActorRef<Req>, ActorRef<Result<u64, AskError>>),
}

#[derive(Default)]
struct Server {
    held: Option<ReplyTo<u64>>,
}

impl Actor for Server {
    type Msg = Req;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, req: Req) {
        match req {
            Req::Double(n, reply) => {
                reply.reply(n * 2);
            }
            Req::Hold(reply) => self.held = Some(reply),
            Req::ReplyHeld(n, out) => {
                let held = self.held.take().expect("a request is held");
                out.tell(held.reply(n));
            }
            Req::Ignore(reply) => drop(reply),
            Req::WaitInside(other, out) => {
                out.tell(other.ask(|r| Req::Double(1, r), PATIENCE).wait());
            }
        }
    }
}

fn spawn_server(system: &troupe::ActorSystem) -> ActorRef<Req> {
    system.spawn(Props::new(Server::default)).unwrap()
}

#[test]
fn ask_from_a_plain_thread_waits_for_the_reply() {
    let system = system();
    let server = spawn_server(&system);
    assert_eq!(server.ask(|r| Req::Double(21, r), PATIENCE).wait(), Ok(42));
    // From several threads at once, each gets its own answer.
    let askers: Vec<_> = (0..4u64)
        .map(|i| {
            let server = server.clone();
            thread::spawn(move || {
                (0..100u64)
                    .map(|k| {
                        server
                            .ask(|r| Req::Double(i * 1000 + k, r), PATIENCE)
                            .wait()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (i, asker) in askers.into_iter().enumerate() {
        let answers = asker.join().unwrap();
        let expected: Vec<_> = (0..100u64).map(|k| Ok((i as u64 * 1000 + k) * 2)).collect();
        assert_eq!(answers, expected);
    }
    terminate(&system, PATIENCE);
}

#[test]
fn ask_awaited_on_a_tokio_runtime() {
    let system = system();
    let server = spawn_server(&system);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (single, joined, timed_out) = runtime.block_on(async {
        let single = server.ask(|r| Req::Double(5, r), PATIENCE).await;
        let joined = tokio::join!(
            server.ask(|r| Req::Double(1, r), PATIENCE),
            server.ask(|r| Req::Double(2, r), PATIENCE),
            server.ask(|r| Req::Double(3, r), PATIENCE),
        );
        // An awaited ask times out through the system's scheduler.
        let timed_out = server.ask(Req::Hold, SHORT).await;
        (single, joined, timed_out)
    });
    assert_eq!(single, Ok(10));
    assert_eq!(joined, (Ok(2), Ok(4), Ok(6)));
    assert_eq!(
        timed_out,
        Err(AskError::Timeout {
            target: server.id(),
            after: SHORT
        })
    );
    terminate(&system, PATIENCE);
}

#[test]
fn no_reply_in_time_is_a_timeout_and_a_late_reply_reports_false() {
    let system = system();
    let server = spawn_server(&system);
    let start = Instant::now();
    let answer = server.ask(Req::Hold, SHORT).wait();
    let waited = start.elapsed();
    assert_eq!(
        answer,
        Err(AskError::Timeout {
            target: server.id(),
            after: SHORT
        })
    );
    assert!(waited >= SHORT, "timed out early, after {waited:?}");

    let replied = TestProbe::new(&system, "late reply accepted");
    server.tell(Req::ReplyHeld(7, replied.actor_ref()));
    assert!(
        !replied.expect_msg(PATIENCE),
        "nobody waits for the late reply"
    );
    terminate(&system, PATIENCE);
}

#[test]
fn a_reply_in_time_reports_true() {
    let system = system();
    let server = spawn_server(&system);
    let pending = server.ask(Req::Hold, PATIENCE);
    let replied = TestProbe::new(&system, "reply accepted");
    server.tell(Req::ReplyHeld(9, replied.actor_ref()));
    assert!(replied.expect_msg(PATIENCE));
    assert_eq!(pending.wait(), Ok(9));
    terminate(&system, PATIENCE);
}

#[test]
fn ask_to_a_stopped_actor_fails_with_no_reply_at_once() {
    let system = system();
    let server = spawn_server(&system);
    let deaths = TestProbe::<()>::new(&system, "deaths");
    system.stop(&server);
    deaths.expect_terminated(&server, PATIENCE);

    let start = Instant::now();
    let answer = server.ask(|r| Req::Double(1, r), PATIENCE).wait();
    assert_eq!(
        answer,
        Err(AskError::NoReply {
            target: server.id()
        })
    );
    assert!(
        start.elapsed() < PATIENCE / 2,
        "NoReply came after {:?}, as late as a timeout",
        start.elapsed()
    );
    terminate(&system, PATIENCE);
    assert_eq!(
        system.dead_letter_count(),
        1,
        "the request itself is a dead letter"
    );
}

#[test]
fn a_dropped_reply_handle_fails_the_ask_with_no_reply() {
    let system = system();
    let server = spawn_server(&system);
    let start = Instant::now();
    assert_eq!(
        server.ask(Req::Ignore, PATIENCE).wait(),
        Err(AskError::NoReply {
            target: server.id()
        })
    );
    assert!(start.elapsed() < PATIENCE / 2);
    terminate(&system, PATIENCE);
    assert_eq!(system.dead_letter_count(), 0);
}

#[test]
fn waiting_inside_a_handler_on_a_worker_is_refused() {
    let system = system();
    let server = spawn_server(&system);
    let other = spawn_server(&system);
    let outcome = TestProbe::new(&system, "wait inside a handler");
    server.tell(Req::WaitInside(other.clone(), outcome.actor_ref()));
    outcome.expect_msg_eq(Err(AskError::WouldBlockDispatcher), PATIENCE);
    // Refusing the wait harmed nothing: both still answer.
    assert_eq!(server.ask(|r| Req::Double(2, r), PATIENCE).wait(), Ok(4));
    assert_eq!(other.ask(|r| Req::Double(3, r), PATIENCE).wait(), Ok(6));
    terminate(&system, PATIENCE);
}

#[test]
fn waiting_inside_a_handler_on_a_pinned_thread_is_allowed() {
    let system = system();
    let pinned = system
        .spawn(Props::new(Server::default).dispatcher("pinned"))
        .unwrap();
    let other = spawn_server(&system);
    let outcome = TestProbe::new(&system, "wait inside a pinned handler");
    pinned.tell(Req::WaitInside(other, outcome.actor_ref()));
    assert_eq!(
        outcome.expect_msg(PATIENCE),
        Ok(2),
        "a pinned actor owns its thread and may block"
    );
    terminate(&system, PATIENCE);
}

//! Testing troupe actors without sleeping: a [`TestProbe`] stands in for an
//! actor the code under test talks to, and a [`ManualClock`] makes the
//! system's time virtual, so timers, ask timeouts, receive timeouts and
//! restart backoff fire when the test says so, in order.
//!
//! # A worked example
//!
//! A reminder actor answers each `Remind` after a delay. The test hands it
//! a probe as the reply address, moves virtual time, and checks what came,
//! and that nothing came early, without waiting an hour:
//!
//! ```
//! use std::time::Duration;
//! use troupe::{Actor, ActorRef, ActorSystem, Context, Props, ReplyTo};
//! use troupe_testkit::{ManualClock, TestProbe};
//!
//! enum Msg {
//!     Remind { after: Duration, note: &'static str, to: ActorRef<&'static str> },
//!     /// Answered once everything before it was handled.
//!     Sync(ReplyTo<()>),
//! }
//!
//! struct Reminder;
//! impl Actor for Reminder {
//!     type Msg = Msg;
//!     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
//!         match msg {
//!             Msg::Remind { after, note, to } => {
//!                 ctx.system().scheduler().schedule_once(after, &to, note);
//!             }
//!             Msg::Sync(done) => { done.reply(()); }
//!         }
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let system = ActorSystem::builder().manual_clock(&clock).build().unwrap();
//! let reminder = system.spawn(Props::new(|| Reminder)).unwrap();
//! let probe = TestProbe::<&'static str>::new(&system, "inbox");
//!
//! let hour = Duration::from_secs(3600);
//! reminder.tell(Msg::Remind { after: hour, note: "stand up", to: probe.actor_ref() });
//! // The reminder is armed once the actor has handled the request.
//! reminder.ask(Msg::Sync, Duration::from_secs(5)).wait().unwrap();
//! clock.advance(hour - Duration::from_secs(1));
//! probe.expect_no_msg(Duration::from_millis(20));
//! clock.advance(Duration::from_secs(1));
//! probe.expect_msg_eq("stand up", Duration::from_secs(5));
//!
//! system.shutdown();
//! system.await_termination().unwrap();
//! ```
//!
//! Probe timeouts are real time: they bound how long the test waits for
//! actors on their dispatcher threads, and a probe that waits in vain fails
//! with what it expected, what came instead, and after how long.
//!
//! # Blocking asks on a manual clock
//!
//! An ask's timeout, by contrast, is virtual time: under a [`ManualClock`]
//! it passes only when the clock is advanced past it. A test thread that
//! calls `ask(..).wait()` on an actor that never answers, while no other
//! thread advances the clock, would wait for ever. Instead, `Ask::wait`
//! panics with a message naming the manual clock and `advance` once the
//! clock has stood still for its *wait guard* of real time: 10 s by
//! default, set with [`ManualClock::set_wait_guard`] (every advance starts
//! the guard over). An answer that comes is never cut short, as with the
//! `Sync` above. A test that means to see a timeout advances the clock from
//! another thread while one waits; a test that expects the wait to be
//! stuck sets a short guard and catches the panic:
//!
//! ```
//! use std::time::Duration;
//! use troupe::{Actor, ActorSystem, Context, Props, ReplyTo};
//! use troupe_testkit::ManualClock;
//!
//! /// Keeps every request and never answers.
//! struct Mute(Vec<ReplyTo<u32>>);
//! impl Actor for Mute {
//!     type Msg = ReplyTo<u32>;
//!     fn receive(&mut self, _ctx: &mut Context<'_, Self>, reply: ReplyTo<u32>) {
//!         self.0.push(reply);
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! clock.set_wait_guard(Duration::from_millis(50));
//! let system = ActorSystem::builder().manual_clock(&clock).build().unwrap();
//! let mute = system.spawn(Props::new(|| Mute(Vec::new()))).unwrap();
//!
//! // Another thread advances: the wait ends with the virtual timeout
//! // (armed when the ask is made, so the advance may come first).
//! let ask = mute.ask(|r| r, Duration::from_secs(5));
//! let waiter = std::thread::spawn(move || ask.wait());
//! clock.advance(Duration::from_secs(5));
//! assert!(waiter.join().unwrap().is_err());
//!
//! // Nobody advances: the guard turns the hang into a panic.
//! let ask = mute.ask(|r| r, Duration::from_secs(5));
//! let stuck = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ask.wait()));
//! let message = stuck.unwrap_err().downcast::<String>().unwrap();
//! assert!(message.contains("manual clock"), "{message}");
//!
//! system.shutdown();
//! system.await_termination().unwrap();
//! ```
//!
//! # The rest of the kit
//!
//! - [`Latch`]: holds an actor inside its handler until the test opens it,
//!   and tells the test when the actor has arrived there.
//! - [`EventLog`]: an ordered record that actors append to (lifecycle hooks,
//!   say), read by the test for the order of things, even after shutdown.
//! - [`await_condition`]: for state that no message announces.
//! - [`terminate`] and [`await_termination`]: end the system under test
//!   with a deadline, so a test that leaves an actor running fails instead
//!   of hanging.
//! - [`quiet_panics`]: keeps the panics a test provokes on purpose out of
//!   the output, and only those.
//!
//! None of them sleeps: every wait ends as soon as its outcome is there,
//! and fails after its timeout.

mod condition;
mod event_log;
mod latch;
mod panics;
mod probe;
mod termination;

pub use condition::await_condition;
pub use event_log::EventLog;
pub use latch::Latch;
pub use panics::quiet_panics;
pub use probe::TestProbe;
pub use termination::{await_termination, terminate};
pub use troupe::scheduler::ManualClock;

/// The user guide's page on testing (`docs/guide/08-testing.md`), compiled
/// and run as doctests here, where the kit is at hand.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../../docs/guide/08-testing.md")]
    pub struct Testing;
}

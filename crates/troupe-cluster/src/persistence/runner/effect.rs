//! `Effect`: what a command handler asks for. Events to persist, what to
//! run once they are durable and applied (a reply, usually), what to run
//! if they are not (an error for the asker), a snapshot, a stop. The
//! handler itself changes nothing: the state changes only by applying
//! events the journal acknowledged.
//!
//! A child of the runner: an effect names the [`PersistentActor`] it is
//! for, whose handler returns it, and only the runner carries it out.

use troupe::ReplyTo;

use super::PersistentActor;
use crate::persistence::error::PersistenceError;

/// A follow-up: run with the state after the command's events once they
/// are durable and applied, or with the error that refused or failed them.
pub(crate) type Then<A> =
    Box<dyn FnOnce(Result<&<A as PersistentActor>::State, &PersistenceError>) + Send>;

/// What a command handler returns: see [`PersistentActor::handle`].
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe::ReplyTo;
/// use troupe_cluster::persistence::{Effect, PersistentActor, PersistentContext};
///
/// enum Cmd { Add(u64, ReplyTo<u64>), Get(ReplyTo<u64>), Reset }
/// #[derive(Serialize, Deserialize)]
/// struct Added(u64);
/// struct Counter;
/// impl PersistentActor for Counter {
///     type Command = Cmd;
///     type Event = Added;
///     type State = u64;
///     fn persistence_id(&self) -> String { "counter".into() }
///     fn handle(&mut self, _ctx: &mut PersistentContext<'_, Self>, total: &u64, cmd: Cmd) -> Effect<Self> {
///         match cmd {
///             // Persist, then answer with the total that includes it.
///             Cmd::Add(n, reply) => Effect::persist(Added(n)).then_reply(reply, |total: &u64| *total),
///             // Nothing to persist: answer at once.
///             Cmd::Get(reply) => Effect::reply(reply, *total),
///             Cmd::Reset => Effect::stop(),
///         }
///     }
///     fn apply(total: &mut u64, Added(n): &Added) { *total += n; }
/// }
/// ```
#[must_use = "an effect does nothing unless the handler returns it"]
pub struct Effect<A: PersistentActor> {
    pub(crate) events: Vec<A::Event>,
    pub(crate) then: Vec<Then<A>>,
    pub(crate) snapshot: bool,
    pub(crate) stop: bool,
    /// Made by [`persist_async`](Self::persist_async): the commands that
    /// follow do not wait for the acknowledgement.
    pub(crate) pipelined: bool,
}

impl<A: PersistentActor> Effect<A> {
    /// Nothing to persist, nothing to run.
    pub fn none() -> Self {
        Effect {
            events: Vec::new(),
            then: Vec::new(),
            snapshot: false,
            stop: false,
            pipelined: false,
        }
    }

    /// Persist `event`. Commands that arrive before the journal acknowledges
    /// it wait, and see the state with it applied.
    pub fn persist(event: A::Event) -> Self {
        Effect::persist_all(vec![event])
    }

    /// Persist `events` as one unit: after a crash either all of them are
    /// in the journal or none. An empty list persists nothing.
    pub fn persist_all(events: impl IntoIterator<Item = A::Event>) -> Self {
        Effect {
            events: events.into_iter().collect(),
            ..Effect::none()
        }
    }

    /// Persist `event` without holding back the commands that follow
    /// (Akka's `persistAsync`): the next commands are handled at once,
    /// while the append is in flight, and their events are appended behind
    /// it, so one actor can have many appends in flight (the JetStream
    /// journal sends an id's appends that queue up as one record). The
    /// event is applied, and this effect's follow-ups run, when the
    /// journal acknowledges it, in the order the effects were made.
    ///
    /// What changes against [`persist`](Self::persist): a command handled
    /// while the append is in flight sees the state *without* its events
    /// (the state only ever holds acknowledged events), so a check that
    /// depends on them (a balance, a duplicate id) must also look at what
    /// the actor itself has in flight; a command that persists nothing is
    /// answered at once, possibly before this one. If an append fails,
    /// every append in flight behind it fails with it (their sequence
    /// numbers followed it), and the actor stops as after any failure; a
    /// rejected event (too large, not serialisable) with others in flight
    /// behind it is handled the same way.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use troupe::ReplyTo;
    /// use troupe_cluster::persistence::{Effect, PersistentActor, PersistentContext};
    ///
    /// enum Cmd { Record(String, ReplyTo<u64>) }
    /// #[derive(Serialize, Deserialize)]
    /// struct Recorded(String);
    /// struct Log;
    /// impl PersistentActor for Log {
    ///     type Command = Cmd;
    ///     type Event = Recorded;
    ///     type State = u64;
    ///     fn persistence_id(&self) -> String { "log".into() }
    ///     fn handle(&mut self, _ctx: &mut PersistentContext<'_, Self>, _: &u64, cmd: Cmd) -> Effect<Self> {
    ///         let Cmd::Record(line, reply) = cmd;
    ///         // Every line is accepted whatever is in flight: nothing to wait for.
    ///         Effect::persist_async(Recorded(line)).then_reply(reply, |count: &u64| *count)
    ///     }
    ///     fn apply(count: &mut u64, _: &Recorded) { *count += 1; }
    /// }
    /// ```
    pub fn persist_async(event: A::Event) -> Self {
        Effect::persist_all_async(vec![event])
    }

    /// Persist `events` as one unit (see [`persist_all`](Self::persist_all)),
    /// without holding back the commands that follow (see
    /// [`persist_async`](Self::persist_async)).
    pub fn persist_all_async(events: impl IntoIterator<Item = A::Event>) -> Self {
        Effect {
            pipelined: true,
            ..Effect::persist_all(events)
        }
    }

    /// Nothing to persist; answer `reply_to` with `value` now.
    pub fn reply<R: Send + 'static>(reply_to: ReplyTo<R>, value: R) -> Self {
        Effect::none().then(move |_| {
            reply_to.reply(value);
        })
    }

    /// Stop the actor (after persisting this effect's events, if any).
    pub fn stop() -> Self {
        Effect::none().and_stop()
    }

    /// Runs `f` with the state once this effect's events are durable and
    /// applied (at once if there are none). It runs on the actor's thread,
    /// before the next command; it is not run if the events are refused or
    /// their append fails (see [`on_failure`](Self::on_failure)).
    pub fn then(mut self, f: impl FnOnce(&A::State) + Send + 'static) -> Self {
        self.then.push(Box::new(move |outcome| {
            if let Ok(state) = outcome {
                f(state);
            }
        }));
        self
    }

    /// Runs `f` with the error if this effect's events are not stored: a
    /// *rejection* (an event that does not serialise, or too large: the
    /// actor goes on) or a *failure* (the journal could not write, or the
    /// activation was fenced: the actor stops, or restarts with
    /// [`PersistentSettings::restart_on_failure`](super::PersistentSettings::restart_on_failure)).
    /// It runs on the actor's thread, after
    /// [`PersistentActor::failed`], before the actor goes on or stops.
    pub fn on_failure(mut self, f: impl FnOnce(&PersistenceError) + Send + 'static) -> Self {
        self.then.push(Box::new(move |outcome| {
            if let Err(error) = outcome {
                f(error);
            }
        }));
        self
    }

    /// Answers `reply_to` with `f(state)` once the events are durable and
    /// applied: the asker learns of the command only after it is durable.
    /// If they are not stored the reply handle is dropped and the asker
    /// gets `AskError::NoReply`; to hand it the error instead, use
    /// [`then_reply_result`](Self::then_reply_result) or
    /// [`then_reply_or`](Self::then_reply_or).
    pub fn then_reply<R: Send + 'static>(
        self,
        reply_to: ReplyTo<R>,
        f: impl FnOnce(&A::State) -> R + Send + 'static,
    ) -> Self {
        self.then(move |state| {
            reply_to.reply(f(state));
        })
    }

    /// Answers `reply_to` with `Ok(f(state))` once the events are durable
    /// and applied, or with the [`PersistenceError`] that refused or
    /// failed them: the asker always hears, and learns why.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use troupe::ReplyTo;
    /// use troupe_cluster::persistence::{Effect, PersistenceError, PersistentActor, PersistentContext};
    ///
    /// enum Cmd { Add(u64, ReplyTo<Result<u64, PersistenceError>>) }
    /// #[derive(Serialize, Deserialize)]
    /// struct Added(u64);
    /// struct Counter;
    /// impl PersistentActor for Counter {
    ///     type Command = Cmd;
    ///     type Event = Added;
    ///     type State = u64;
    ///     fn persistence_id(&self) -> String { "counter".into() }
    ///     fn handle(&mut self, _ctx: &mut PersistentContext<'_, Self>, _: &u64, cmd: Cmd) -> Effect<Self> {
    ///         let Cmd::Add(n, reply) = cmd;
    ///         // Ok(total) once durable; Err(TooLarge { .. }), Err(Journal(..)), ... if not.
    ///         Effect::persist(Added(n)).then_reply_result(reply, |total: &u64| *total)
    ///     }
    ///     fn apply(total: &mut u64, Added(n): &Added) { *total += n; }
    /// }
    /// ```
    pub fn then_reply_result<R: Send + 'static>(
        self,
        reply_to: ReplyTo<Result<R, PersistenceError>>,
        f: impl FnOnce(&A::State) -> R + Send + 'static,
    ) -> Self {
        self.then_reply_or(reply_to, move |state| Ok(f(state)), |e| Err(e.clone()))
    }

    /// Answers `reply_to` with `ok(state)` once the events are durable and
    /// applied, or with `err(error)` if they are refused or fail: for a
    /// reply type of your own that carries a failure.
    pub fn then_reply_or<R: Send + 'static>(
        mut self,
        reply_to: ReplyTo<R>,
        ok: impl FnOnce(&A::State) -> R + Send + 'static,
        err: impl FnOnce(&PersistenceError) -> R + Send + 'static,
    ) -> Self {
        self.then.push(Box::new(move |outcome| {
            reply_to.reply(match outcome {
                Ok(state) => ok(state),
                Err(error) => err(error),
            });
        }));
        self
    }

    /// Saves a snapshot once the events are applied (besides the ones
    /// [`PersistentSettings::snapshot_every`](super::PersistentSettings::snapshot_every)
    /// takes).
    pub fn and_snapshot(mut self) -> Self {
        self.snapshot = true;
        self
    }

    /// Stops the actor once the events are applied and the follow-ups run.
    /// (If the events are rejected the whole effect is: the actor goes on,
    /// without the stop or the snapshot.)
    pub fn and_stop(mut self) -> Self {
        self.stop = true;
        self
    }
}

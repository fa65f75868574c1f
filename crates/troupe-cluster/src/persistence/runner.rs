//! `Persistent<A>`: the troupe actor that runs a [`PersistentActor`].
//!
//! # States
//!
//! ```text
//! Starting --token durable, snapshot + tail replayed--> Running
//! Running --command with events: append queued--> Persisting
//! Running --command with persist_async events: append queued--> Running
//! Persisting --every append in flight acknowledged: apply, follow-ups--> Running
//! any --fenced, journal failure, stop effect--> Stopped
//! ```
//!
//! Commands that arrive outside `Running` go to the wrapper's own stash
//! (bounded by [`PersistentSettings::stash_capacity`]; beyond it they are
//! dropped and counted) and are handled in arrival order once it is back in
//! `Running`, before anything still in the mailbox: each sees the state
//! after every earlier command's events.
//!
//! # Appends in flight
//!
//! Appends made with `Effect::persist_async` do not leave `Running`, so
//! several can be in flight, each numbered after the ones before it
//! (`unacked` counts their events). Answers are taken in the order the
//! appends were made, whatever order they come in (a journal may refuse
//! a later append at once while an earlier one waits for its fsync): an
//! early answer waits in its entry of `in_flight` until the ones before
//! it are taken. A plain `persist` behind them waits for all of them.
//!
//! # Why acknowledgements are messages
//!
//! The journal answers appends from its writer thread after the fsync.
//! The callback only tells this actor a [`Msg::Internal`]; the state is
//! changed on the actor's own thread, and no worker thread waits for a
//! disk. Each activation (instance) has its own number: an acknowledgement
//! for a previous instance (before a restart) is ignored, as the new one
//! recovered from the journal anyway.
//!
//! # Why its own stash
//!
//! troupe's `Context::stash` needs `Props::stash_capacity`, which a user
//! spawning with plain `Props` would have to remember; the wrapper keeps a
//! `VecDeque` instead. A restart (a panic in `handle`) drops it, counted
//! as stash drops: their askers get an error, never a silent loss.
//!
//! # Rejections and failures
//!
//! Events that are never stored end their command one of two ways, as in
//! Akka's event-sourced actors. A *rejection* (the event does not
//! serialise, or is over the journal's limit: nothing was written, the
//! journal is sound) ends only the command: its failure follow-ups run
//! (an asker hears the error) and the actor goes on. A *failure* (the
//! journal could not write, the activation was fenced or out of
//! sequence) ends the activation: the follow-ups run, then the actor
//! stops, or, with [`PersistentSettings::restart_on_failure`], fails so
//! that its supervisor restarts it (with a backoff, as it chooses) and it
//! recovers from what the journal holds. A snapshot that cannot be saved
//! is neither: the events are durable, so it is reported and counted, and
//! the next snapshot point tries again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use troupe::{Actor, ActorRef, Context, Failure};

use self::effect::Then;
use super::error::PersistenceError;
use super::journal::{Journal, Snapshot};

mod effect;
pub use self::effect::Effect;

/// The message type of a [`Persistent`] actor: a user command, or the
/// wrapper's own acknowledgements (which user code never makes).
pub enum Msg<C> {
    /// A command for the [`PersistentActor`].
    Command(C),
    /// A journal acknowledgement for the wrapper.
    Internal(Internal),
}

impl<C> From<C> for Msg<C> {
    fn from(command: C) -> Self {
        Msg::Command(command)
    }
}

/// A journal's answer to the wrapper; its contents are private.
pub struct Internal {
    activation: u64,
    kind: Kind,
}

enum Kind {
    Acquired(Result<u64, PersistenceError>),
    /// The answer to the append whose first sequence number is the first
    /// field.
    Appended(u64, Result<u64, PersistenceError>),
    SnapshotSaved(Result<u64, PersistenceError>),
}

/// How a [`Persistent`] actor snapshots, stashes and fences.
#[derive(Clone, Debug)]
pub struct PersistentSettings {
    /// Save a snapshot every this many events (`None`: only on demand,
    /// with [`Effect::and_snapshot`]).
    pub snapshot_every: Option<u64>,
    /// How many commands may wait while the actor recovers or waits for an
    /// append; more are dropped (counted in
    /// [`Counters::stash_dropped`](super::Counters::stash_dropped)).
    pub stash_capacity: usize,
    /// The fencing token to write with (a lease revision); `None` lets the
    /// journal pick one above every earlier activation's.
    pub token: Option<u64>,
    /// What a failed append or a failure to take a token does to the
    /// actor: stop it (`false`, the default), or fail it, so that its
    /// supervisor's strategy decides (`true`; give it a backoff, as
    /// `SupervisorStrategy::restart().with_backoff(..)`: on a full disk
    /// every restart recovers, answers reads, and fails its next write
    /// until there is room). Fencing always stops the actor (a restart
    /// would fence the newer activation in turn), and so does a failed
    /// recovery (a damaged or mismatched store, which a restart cannot
    /// mend).
    pub restart_on_failure: bool,
}

impl Default for PersistentSettings {
    fn default() -> Self {
        PersistentSettings {
            snapshot_every: None,
            stash_capacity: 10_000,
            token: None,
            restart_on_failure: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Starting,
    Running,
    Persisting,
    Stopped,
}

struct InFlight<A: PersistentActor> {
    first_seq_nr: u64,
    /// The journal's answer, once it came (held until the appends before
    /// it are answered too).
    answer: Option<Result<u64, PersistenceError>>,
    events: Vec<A::Event>,
    then: Vec<Then<A>>,
    snapshot: bool,
    stop: bool,
}

/// Numbers activations across the process (see the module header).
static ACTIVATIONS: AtomicU64 = AtomicU64::new(1);

/// The troupe actor running a [`PersistentActor`] `A` on a [`Journal`].
/// Spawn it with ordinary `Props`; its message type is
/// [`Msg<A::Command>`](Msg), and [`spawn`](super::spawn) or
/// [`command_ref`](super::command_ref) give an `ActorRef<A::Command>`.
pub struct Persistent<A: PersistentActor> {
    actor: A,
    journal: Arc<dyn Journal>,
    settings: PersistentSettings,
    id: String,
    activation: u64,
    phase: Phase,
    state: A::State,
    seq_nr: u64,
    position: u64,
    token: u64,
    snapshot_seq_nr: u64,
    stash: VecDeque<A::Command>,
    /// Appends not yet acknowledged, oldest first.
    in_flight: VecDeque<InFlight<A>>,
    /// Their events: the next append starts at `seq_nr + unacked + 1`.
    unacked: u64,
}

impl<A: PersistentActor> Persistent<A> {
    /// Runs `actor` on `journal` with the default settings.
    pub fn new(actor: A, journal: Arc<dyn Journal>) -> Self {
        let id = actor.persistence_id();
        Persistent {
            actor,
            journal,
            settings: PersistentSettings::default(),
            id,
            activation: 0,
            phase: Phase::Starting,
            state: A::State::default(),
            seq_nr: 0,
            position: 0,
            token: 0,
            snapshot_seq_nr: 0,
            stash: VecDeque::new(),
            in_flight: VecDeque::new(),
            unacked: 0,
        }
    }

    /// Replaces the settings.
    pub fn with_settings(mut self, settings: PersistentSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Saves a snapshot every `events` events.
    pub fn snapshot_every(mut self, events: u64) -> Self {
        self.settings.snapshot_every = Some(events.max(1));
        self
    }

    /// How many commands may wait (see [`PersistentSettings::stash_capacity`]).
    pub fn stash_capacity(mut self, capacity: usize) -> Self {
        self.settings.stash_capacity = capacity;
        self
    }

    /// Writes with `token` (a lease revision) instead of one the journal
    /// picks.
    pub fn fencing_token(mut self, token: u64) -> Self {
        self.settings.token = Some(token);
        self
    }

    /// Fails the actor, for its supervisor to restart, where a failed
    /// append would stop it (see [`PersistentSettings::restart_on_failure`]).
    pub fn restart_on_failure(mut self) -> Self {
        self.settings.restart_on_failure = true;
        self
    }

    fn tell_me(
        ctx: &Context<'_, Self>,
        activation: u64,
        kind: fn(Result<u64, PersistenceError>) -> Kind,
    ) -> super::journal::Done<u64> {
        let me = ctx.myself();
        Box::new(move |result| {
            me.tell(Msg::Internal(Internal {
                activation,
                kind: kind(result),
            }));
        })
    }

    fn stash(&mut self, command: A::Command) {
        if self.phase == Phase::Stopped {
            self.drop_commands(1, "the actor has stopped");
        } else if self.stash.len() >= self.settings.stash_capacity {
            self.drop_commands(1, "the stash is full");
        } else {
            self.stash.push_back(command);
        }
    }

    fn drop_commands(&self, n: u64, why: &str) {
        if n > 0 {
            self.journal.counters().count_stash_dropped(n);
            tracing::warn!(persistence_id = %self.id, dropped = n, "commands dropped: {why}");
        }
    }

    /// Handles stashed commands in order while nothing is in flight.
    fn drain(&mut self, ctx: &mut Context<'_, Self>) {
        while self.phase == Phase::Running {
            let Some(command) = self.stash.pop_front() else {
                return;
            };
            self.handle(ctx, command);
        }
    }

    fn handle(&mut self, ctx: &mut Context<'_, Self>, command: A::Command) {
        let effect: Effect<A> = self.actor.handle(ctx, &self.state, command);
        if effect.events.is_empty() {
            return self.finish(ctx, effect.then, effect.snapshot, effect.stop);
        }
        let mut encoded = Vec::with_capacity(effect.events.len());
        for event in &effect.events {
            match postcard::to_allocvec(event) {
                Ok(bytes) => encoded.push(bytes),
                Err(e) => {
                    // Nothing was written: a rejection (module header).
                    let error = PersistenceError::Serialize {
                        persistence_id: self.id.clone(),
                        what: "event",
                        reason: e.to_string(),
                    };
                    self.report(&error);
                    return refused::<A>(effect.then, &error);
                }
            }
        }
        let first_seq_nr = self.seq_nr + self.unacked + 1;
        let (me, activation) = (ctx.myself(), self.activation);
        let done: super::journal::Done<u64> = Box::new(move |result| {
            me.tell(Msg::Internal(Internal {
                activation,
                kind: Kind::Appended(first_seq_nr, result),
            }));
        });
        self.journal
            .append(&self.id, self.token, first_seq_nr, encoded, done);
        self.unacked += effect.events.len() as u64;
        if !effect.pipelined {
            self.phase = Phase::Persisting;
        }
        self.in_flight.push_back(InFlight {
            first_seq_nr,
            answer: None,
            events: effect.events,
            then: effect.then,
            snapshot: effect.snapshot,
            stop: effect.stop,
        });
    }

    /// Takes the answers of the oldest appends in flight, in order, as
    /// far as they have come; then the stashed commands, if it may.
    fn settle(&mut self, ctx: &mut Context<'_, Self>) {
        while self.phase != Phase::Stopped {
            let Some(answer) = self.in_flight.front_mut().and_then(|e| e.answer.take()) else {
                break;
            };
            let rejected_alone = self.in_flight.len() == 1;
            match answer {
                Ok(position) => {
                    let Some(done) = self.in_flight.pop_front() else {
                        break;
                    };
                    for event in &done.events {
                        A::apply(&mut self.state, event);
                    }
                    let n = done.events.len() as u64;
                    self.seq_nr += n;
                    self.unacked -= n;
                    self.position = position;
                    if self.in_flight.is_empty() && self.phase == Phase::Persisting {
                        self.phase = Phase::Running;
                    }
                    self.finish(ctx, done.then, done.snapshot, done.stop);
                }
                // Nothing was stored, and no append was made behind it:
                // the state is the one the command saw, so the actor goes
                // on with the next command. (With appends behind it,
                // numbered after its events, it is a failure.)
                Err(e) if e.is_rejection() && rejected_alone => {
                    self.phase = Phase::Running;
                    self.report(&e);
                    self.unacked = 0;
                    if let Some(in_flight) = self.in_flight.pop_front() {
                        refused::<A>(in_flight.then, &e);
                    }
                }
                Err(e) => return self.fail(ctx, e, true),
            }
        }
        self.drain(ctx);
    }

    /// Takes the snapshots due and runs an effect's follow-ups. The
    /// snapshot goes to the journal's writer first, so a follow-up (a
    /// reply to "snapshot now") never overtakes it: whoever hears the reply
    /// and then flushes the writer finds the snapshot written.
    fn finish(
        &mut self,
        ctx: &mut Context<'_, Self>,
        then: Vec<Then<A>>,
        snapshot: bool,
        stop: bool,
    ) {
        let due = self
            .settings
            .snapshot_every
            .is_some_and(|n| self.seq_nr >= self.snapshot_seq_nr + n);
        if (snapshot || due) && self.seq_nr > self.snapshot_seq_nr {
            self.snapshot(ctx);
        }
        for f in then {
            f(Ok(&self.state));
        }
        if stop {
            self.stop(ctx);
        }
    }

    /// Encodes the state here and hands the bytes to the journal's writer.
    fn snapshot(&mut self, ctx: &Context<'_, Self>) {
        match postcard::to_allocvec(&self.state) {
            Ok(state) => {
                let snapshot = Snapshot {
                    seq_nr: self.seq_nr,
                    position: self.position,
                    token: self.token,
                    state,
                };
                self.snapshot_seq_nr = self.seq_nr;
                let done = Self::tell_me(ctx, self.activation, Kind::SnapshotSaved);
                self.journal.save_snapshot(&self.id, snapshot, done);
            }
            Err(e) => self.report(&PersistenceError::Serialize {
                persistence_id: self.id.clone(),
                what: "snapshot",
                reason: e.to_string(),
            }),
        }
    }

    fn report(&mut self, error: &PersistenceError) {
        let counters = self.journal.counters();
        match error {
            PersistenceError::Fenced { .. } => counters.count_fenced(),
            _ => counters.count_failure(),
        }
        self.actor.failed(error);
    }

    fn stop(&mut self, ctx: &mut Context<'_, Self>) {
        self.phase = Phase::Stopped;
        // Appends still in flight (`persist_async`) lose their follow-ups:
        // an asker gets `NoReply`, and the events may yet be stored.
        self.in_flight.clear();
        self.unacked = 0;
        let stashed = self.stash.len() as u64;
        self.stash.clear();
        self.drop_commands(stashed, "the actor stopped with them stashed");
        ctx.stop();
    }

    /// Ends the activation after a failure (module header): the failed
    /// command's follow-ups hear the error, then the actor stops, or fails
    /// for its supervisor if `restart` and the settings allow it.
    fn fail(&mut self, ctx: &mut Context<'_, Self>, error: PersistenceError, restart: bool) {
        let fenced = matches!(error, PersistenceError::Fenced { .. });
        if fenced {
            tracing::error!(persistence_id = %self.id, %error, "fenced: stopping without writing");
        }
        self.report(&error);
        self.unacked = 0;
        for in_flight in std::mem::take(&mut self.in_flight) {
            refused::<A>(in_flight.then, &error);
        }
        if restart && !fenced && self.settings.restart_on_failure {
            tracing::warn!(persistence_id = %self.id, %error, "persistence failure: restarting");
            self.phase = Phase::Stopped;
            // A failure for the supervisor, without the panic hook's
            // report (the failure was reported above).
            std::panic::resume_unwind(Box::new(format!(
                "persistence failure of {}: {error}",
                self.id
            )));
        }
        self.stop(ctx);
    }

    fn recover(&mut self) -> Result<(), PersistenceError> {
        let mut from = 0;
        if let Some(s) = self.journal.load_snapshot(&self.id)? {
            self.state = postcard::from_bytes(&s.state).map_err(|e| PersistenceError::Decode {
                persistence_id: self.id.clone(),
                what: "snapshot",
                reason: e.to_string(),
            })?;
            self.seq_nr = s.seq_nr;
            self.snapshot_seq_nr = s.seq_nr;
            self.position = s.position;
            // From the snapshot's own record, not the one after it: one
            // record can hold events on both sides of the snapshot (the
            // JetStream journal sends appends that queued up behind each
            // other as one record); replay skips those up to `seq_nr`.
            from = s.position;
        }
        let state = &mut self.state;
        let id = &self.id;
        let replayed = self
            .journal
            .replay(id, self.seq_nr, from, &mut |_, bytes| {
                let event: A::Event =
                    postcard::from_bytes(bytes).map_err(|e| PersistenceError::Decode {
                        persistence_id: id.clone(),
                        what: "event",
                        reason: e.to_string(),
                    })?;
                A::apply(state, &event);
                Ok(())
            })?;
        if replayed.events > 0 {
            self.seq_nr = replayed.seq_nr;
            self.position = replayed.position;
        }
        Ok(())
    }
}

impl<A: PersistentActor> Actor for Persistent<A> {
    type Msg = Msg<A::Command>;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.activation = ACTIVATIONS.fetch_add(1, Ordering::Relaxed);
        let done = Self::tell_me(ctx, self.activation, Kind::Acquired);
        self.journal.acquire(&self.id, self.settings.token, done);
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Self::Msg) {
        let internal = match msg {
            Msg::Command(command) if self.phase == Phase::Running => {
                return self.handle(ctx, command)
            }
            Msg::Command(command) => return self.stash(command),
            Msg::Internal(i) if i.activation != self.activation => return,
            Msg::Internal(i) => i.kind,
        };
        match internal {
            Kind::Acquired(Ok(token)) => {
                self.token = token;
                match self.recover() {
                    Ok(()) => {
                        self.phase = Phase::Running;
                        self.actor.recovered(&self.state, self.seq_nr);
                        self.drain(ctx);
                    }
                    Err(e) => self.fail(ctx, e, false),
                }
            }
            Kind::Appended(first_seq_nr, result) => {
                if let Some(entry) = self
                    .in_flight
                    .iter_mut()
                    .find(|e| e.first_seq_nr == first_seq_nr)
                {
                    entry.answer = Some(result);
                }
                self.settle(ctx);
            }
            Kind::Acquired(Err(e)) => {
                let restart = !matches!(e, PersistenceError::InvalidId { .. });
                self.fail(ctx, e, restart);
            }
            // The events are durable either way: a snapshot that could not
            // be written only makes the next recovery longer.
            Kind::SnapshotSaved(Ok(_)) => {}
            Kind::SnapshotSaved(Err(e)) => self.report(&e),
        }
    }

    fn before_restart(&mut self, _ctx: &mut Context<'_, Self>, _failure: &Failure) {
        let stashed = self.stash.len() as u64;
        self.stash.clear();
        self.drop_commands(stashed, "the actor restarted with them stashed");
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        let stashed = self.stash.len() as u64;
        self.stash.clear();
        self.drop_commands(stashed, "the actor stopped with them stashed");
    }
}

/// Runs a command's follow-ups with the error that refused or failed its
/// events (their `on_failure` parts; an asker of `then_reply_result`
/// hears it).
fn refused<A: PersistentActor>(then: Vec<Then<A>>, error: &PersistenceError) {
    for f in then {
        f(Err(error));
    }
}

/// An `ActorRef<C>` for a [`Persistent`] actor's ref: what callers that
/// speak only the command type hold.
pub(crate) struct Commands<C: Send + 'static>(pub(crate) ActorRef<Msg<C>>);

impl<C: Send + 'static> troupe::ExternalTarget<C> for Commands<C> {
    fn send(&self, command: C) {
        self.0.tell(Msg::Command(command));
    }

    fn is_closed(&self) -> bool {
        self.0.is_terminated()
    }

    fn name(&self) -> Option<&str> {
        self.0.name()
    }
}

// The trait a user implements lives beside the actor that runs it: its
// handler's context is the wrapper's, and the wrapper runs the trait, so
// the two name each other and share one module.

/// The context a command handler gets: the wrapper actor's (its
/// `myself()` is an `ActorRef<Msg<Command>>`).
pub type PersistentContext<'a, A> = troupe::Context<'a, Persistent<A>>;

/// An event-sourced actor: its state is the fold of its events, and the
/// events are its durable record.
///
/// Run it by wrapping it in a [`Persistent`] and spawning that with
/// ordinary `Props`. See the module docs for a complete example.
///
/// The rules the wrapper keeps:
/// - `handle` sees the state after every event acknowledged so far; it
///   returns events, and changes nothing itself.
/// - The events are appended to the journal; only once the journal has
///   made them durable are they applied (with `apply`) and the effect's
///   follow-ups run. Commands arriving meanwhile wait, in order (unless
///   the effect was made with [`Effect::persist_async`]: then they are
///   handled at once, and see the state without the events in flight).
/// - On start and restart the state is rebuilt: the latest snapshot, then
///   `apply` for every event after it.
pub trait PersistentActor: Send + Sized + 'static {
    /// The messages the actor handles.
    type Command: Send + 'static;
    /// What happened: appended to the journal, replayed on recovery.
    type Event: Serialize + DeserializeOwned + Send + 'static;
    /// The fold of the events (and what a snapshot saves).
    type State: Serialize + DeserializeOwned + Default + Send + 'static;

    /// The id of this actor's event log: the same id recovers the same
    /// state. Called once per activation.
    fn persistence_id(&self) -> String;

    /// Decides what a command does, from the current state.
    fn handle(
        &mut self,
        ctx: &mut PersistentContext<'_, Self>,
        state: &Self::State,
        command: Self::Command,
    ) -> Effect<Self>;

    /// Applies one event to the state. It must be pure (the same events
    /// always give the same state): it runs again on every recovery, and
    /// takes no `self` so it cannot read anything else.
    fn apply(state: &mut Self::State, event: &Self::Event);

    /// Called once recovery is done, before the first command, with the
    /// recovered state and its last sequence number.
    fn recovered(&mut self, state: &Self::State, seq_nr: u64) {
        let _ = (state, seq_nr);
    }

    /// Called with every persistence failure of this activation (the
    /// default logs it at `error`), before the failed command's
    /// follow-ups hear of it ([`Effect::on_failure`],
    /// [`Effect::then_reply_result`]). After a rejection
    /// ([`PersistenceError::is_rejection`]: an event that does not
    /// serialise or is too large; nothing was written) the actor goes on;
    /// after a snapshot that could not be saved it goes on too (the events
    /// are durable); after any other failure (the journal could not write,
    /// fencing, a failed recovery) it stops, or restarts if so set
    /// ([`PersistentSettings::restart_on_failure`](super::PersistentSettings::restart_on_failure)).
    fn failed(&mut self, error: &PersistenceError) {
        tracing::error!(%error, "persistent actor failure");
    }
}

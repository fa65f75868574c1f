//! The `PersistentActor` trait: what a user writes (a command handler that
//! looks at the state and returns an [`Effect`], and a pure event handler
//! that folds events into the state), and the context its handler gets
//! (the wrapper's, `runner.rs`).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::effect::Effect;
use super::error::PersistenceError;
use super::runner::Persistent;

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
///   follow-ups run. Commands arriving meanwhile wait, in order.
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

//! [`terminate`] and [`await_termination`]: end a test's actor system and
//! wait for it with a deadline, so a test that leaves an actor running fails
//! saying so instead of hanging.

use std::time::{Duration, Instant};

use troupe::{ActorSystem, AwaitError, TerminationReason};

/// Shuts `system` down and waits, at most `timeout`, until every actor has
/// stopped and every runtime thread has been joined; returns why it ended.
///
/// Once it returns, everything the actors did is visible to the test, so
/// counts and records read afterwards are final.
///
/// ```
/// use std::time::Duration;
/// use troupe::{ActorSystem, TerminationReason};
///
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let reason = troupe_testkit::terminate(&system, Duration::from_secs(5));
/// assert_eq!(reason, TerminationReason::Requested);
/// assert!(system.is_terminated());
/// ```
///
/// # Panics
///
/// As [`await_termination`].
#[track_caller]
pub fn terminate(system: &ActorSystem, timeout: Duration) -> TerminationReason {
    system.shutdown();
    await_termination(system, timeout)
}

/// Waits, at most `timeout`, for a system that is ending by itself (an
/// escalated failure) or was shut down; returns why it ended.
///
/// ```
/// use std::time::Duration;
/// use troupe::{Actor, ActorSystem, Context, Props, SupervisorStrategy, TerminationReason};
///
/// struct Doomed;
/// impl Actor for Doomed {
///     type Msg = ();
///     fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {
///         panic!("doc-example: escalated");
///     }
/// }
///
/// troupe_testkit::quiet_panics(&["doc-example: escalated"]);
/// let system = ActorSystem::builder().threads(1).build().unwrap();
/// let doomed = system
///     .spawn(Props::new(|| Doomed).supervisor(SupervisorStrategy::escalate()))
///     .unwrap();
/// doomed.tell(());
/// let reason = troupe_testkit::await_termination(&system, Duration::from_secs(5));
/// assert!(matches!(reason, TerminationReason::Escalated(_)));
/// ```
///
/// # Panics
///
/// If the system has not terminated within `timeout` (naming how many
/// top-level actors are still running), or if called on one of the system's
/// own threads, where the wait could never end.
#[track_caller]
pub fn await_termination(system: &ActorSystem, timeout: Duration) -> TerminationReason {
    let start = Instant::now();
    match system.await_termination_timeout(timeout) {
        Ok(reason) => reason,
        Err(AwaitError::Timeout) => panic!(
            "expected actor system `{}` to terminate within {timeout:?}; \
             {} top-level actors still running after {:?}",
            system.name(),
            system.top_level_count(),
            start.elapsed()
        ),
        Err(AwaitError::WouldDeadlock) => panic!(
            "cannot wait for actor system `{}` to terminate on one of its own threads",
            system.name()
        ),
    }
}

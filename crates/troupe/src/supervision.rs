//! Supervision: what happens when an actor's handler panics.
//!
//! A panic in `receive` (or in a lifecycle hook or signal handler) is caught
//! and becomes a [`Failure`]. The [`SupervisorStrategy`] that the parent chose
//! when it spawned the actor (see [`Props::supervisor`](crate::Props::supervisor))
//! turns it into a [`Directive`]:
//!
//! * [`Directive::Resume`]: keep the actor's state and go on with the next
//!   message.
//! * [`Directive::Restart`]: drop the instance (after `before_restart`), stop
//!   its children, build a fresh one from the factory and call
//!   `after_restart`; the mailbox and the messages in it are kept. With
//!   [`SupervisorStrategy::with_backoff`], the actor waits (suspended) before
//!   it is rebuilt, doubling the delay on each restart within the window.
//! * [`Directive::Stop`]: stop the actor (children first); queued messages go
//!   to dead letters.
//! * [`Directive::Escalate`]: stop the actor and make its failure the parent's
//!   failure, decided by the parent's own strategy. A top-level actor that
//!   escalates stops the whole system, with the failure as the reason.
//!
//! The message that was being handled when the panic happened is not
//! redelivered. Restart limits: at most `max_restarts` restarts within `within`;
//! one more failure in the window stops the actor instead.
//!
//! A strategy's [`Scope`] says which of the parent's children the directive
//! reaches: the failing child only (one-for-one, the default), all its
//! siblings too (all-for-one), or the siblings spawned after it
//! (rest-for-one). Siblings restart (or stop) when the parent learns of the
//! failure, with the failing child's restart count for their backoff; the
//! limit is counted by the failing child, so once it is exceeded the child
//! stops and takes its group with it. Top-level actors have no group.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::ids::ActorId;

/// A caught panic (or an escalated child failure), as seen by supervision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The actor whose handler failed.
    pub actor: ActorId,
    /// The panic message, or a description of a non-string panic payload.
    pub message: String,
}

impl Failure {
    pub(crate) fn from_panic(actor: ActorId, payload: Box<dyn Any + Send>) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&'static str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-string payload".to_string()
        };
        Failure { actor, message }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "actor {} failed: {}", self.actor, self.message)
    }
}

/// What supervision does with a failed actor (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Directive {
    /// Keep the state, continue with the next message.
    Resume,
    /// Replace the instance with a fresh one from the factory; keep the mailbox.
    Restart,
    /// Stop the actor.
    Stop,
    /// Stop the actor and fail its parent with the same failure.
    Escalate,
}

/// Which of the parent's children a failure's directive applies to.
///
/// ```
/// use troupe::supervision::Scope;
/// use troupe::SupervisorStrategy;
///
/// let strategy = SupervisorStrategy::restart().all_for_one();
/// assert_eq!(strategy.scope(), Scope::AllForOne);
/// assert_eq!(SupervisorStrategy::restart().scope(), Scope::OneForOne);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// Only the failing child (the default).
    #[default]
    OneForOne,
    /// The failing child and every sibling: they restart (or stop) with it.
    AllForOne,
    /// The failing child and the siblings spawned after it.
    RestForOne,
}

/// Exponential backoff between restarts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Delay before the first restart.
    pub min: Duration,
    /// Upper bound of the delay.
    pub max: Duration,
}

type Decider = Arc<dyn Fn(&Failure) -> Directive + Send + Sync>;

/// How a parent treats the failures of a child (see the module docs).
///
/// ```
/// use std::time::Duration;
/// use troupe::{Directive, SupervisorStrategy};
///
/// let strategy = SupervisorStrategy::restart()
///     .with_limit(10, Duration::from_secs(60))
///     .with_backoff(Duration::from_millis(10), Duration::from_secs(1));
/// assert_eq!(strategy.directive_for_message("boom"), Directive::Restart);
/// ```
#[derive(Clone)]
pub struct SupervisorStrategy {
    decider: Decider,
    max_restarts: Option<u32>,
    within: Duration,
    backoff: Option<Backoff>,
    scope: Scope,
}

impl fmt::Debug for SupervisorStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorStrategy")
            .field("max_restarts", &self.max_restarts)
            .field("within", &self.within)
            .field("backoff", &self.backoff)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl SupervisorStrategy {
    fn always(directive: Directive) -> Self {
        SupervisorStrategy {
            decider: Arc::new(move |_| directive),
            max_restarts: None,
            within: Duration::from_secs(60),
            backoff: None,
            scope: Scope::OneForOne,
        }
    }

    /// Restart on every failure, without limit unless [`with_limit`](Self::with_limit)
    /// is used. This is the default, as in Akka's classic actors.
    pub fn restart() -> Self {
        Self::always(Directive::Restart)
    }

    /// Resume on every failure.
    pub fn resume() -> Self {
        Self::always(Directive::Resume)
    }

    /// Stop on every failure.
    pub fn stop() -> Self {
        Self::always(Directive::Stop)
    }

    /// Escalate every failure to the parent.
    pub fn escalate() -> Self {
        Self::always(Directive::Escalate)
    }

    /// Decide per failure with a function.
    pub fn deciding(decider: impl Fn(&Failure) -> Directive + Send + Sync + 'static) -> Self {
        SupervisorStrategy {
            decider: Arc::new(decider),
            ..Self::restart()
        }
    }

    /// At most `max_restarts` restarts within `within`; one more failure in
    /// the window stops the actor.
    pub fn with_limit(mut self, max_restarts: u32, within: Duration) -> Self {
        self.max_restarts = Some(max_restarts);
        self.within = within;
        self
    }

    /// Wait before each restart: `min`, doubling per restart within the
    /// window, capped at `max`.
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff = Some(Backoff {
            min,
            max: max.max(min),
        });
        self
    }

    /// A restart or stop of the child applies to all its siblings too
    /// (see [`Scope::AllForOne`]).
    pub fn all_for_one(mut self) -> Self {
        self.scope = Scope::AllForOne;
        self
    }

    /// A restart or stop of the child applies to the siblings spawned after
    /// it too (see [`Scope::RestForOne`]).
    pub fn rest_for_one(mut self) -> Self {
        self.scope = Scope::RestForOne;
        self
    }

    /// Which children a directive applies to.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The directive for a failure.
    pub fn decide(&self, failure: &Failure) -> Directive {
        (self.decider)(failure)
    }

    /// The directive for a failure with this message (handy in tests and docs).
    pub fn directive_for_message(&self, message: &str) -> Directive {
        self.decide(&Failure {
            actor: ActorId(0),
            message: message.to_string(),
        })
    }

    pub(crate) fn max_restarts(&self) -> Option<u32> {
        self.max_restarts
    }

    pub(crate) fn within(&self) -> Duration {
        self.within
    }

    /// The delay before restart number `n` (1-based) within the window.
    pub(crate) fn backoff_delay(&self, n: u32) -> Option<Duration> {
        let b = self.backoff?;
        let factor = 1u32
            .checked_shl(n.saturating_sub(1).min(31))
            .unwrap_or(u32::MAX);
        Some(b.min.saturating_mul(factor).min(b.max))
    }

    /// The shared default strategy (restart, no limit), allocated once.
    pub(crate) fn shared_default() -> Arc<SupervisorStrategy> {
        static DEFAULT: OnceLock<Arc<SupervisorStrategy>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| Arc::new(SupervisorStrategy::restart()))
            .clone()
    }
}

impl Default for SupervisorStrategy {
    fn default() -> Self {
        Self::restart()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let s = SupervisorStrategy::restart()
            .with_backoff(Duration::from_millis(10), Duration::from_millis(50));
        assert_eq!(s.backoff_delay(1), Some(Duration::from_millis(10)));
        assert_eq!(s.backoff_delay(2), Some(Duration::from_millis(20)));
        assert_eq!(s.backoff_delay(3), Some(Duration::from_millis(40)));
        assert_eq!(s.backoff_delay(4), Some(Duration::from_millis(50)));
        assert_eq!(s.backoff_delay(100), Some(Duration::from_millis(50)));
        assert_eq!(SupervisorStrategy::restart().backoff_delay(1), None);
    }

    #[test]
    fn decider_sees_the_failure() {
        let s = SupervisorStrategy::deciding(|f| {
            if f.message.contains("fatal") {
                Directive::Stop
            } else {
                Directive::Resume
            }
        });
        assert_eq!(s.directive_for_message("fatal: disk"), Directive::Stop);
        assert_eq!(s.directive_for_message("oops"), Directive::Resume);
    }
}

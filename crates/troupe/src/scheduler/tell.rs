//! The scheduler's methods that deliver to an [`ActorRef`]: timers
//! addressed to a ref, through its ordinary `tell`. A child of the
//! scheduler so that the scheduler itself (the wheel, its driver, the
//! clock) sits below the refs and asks that use it for their timeouts.

use std::sync::Arc;
use std::time::Duration;

use super::{Cancellable, Scheduler};
use crate::actor_ref::ActorRef;

impl Scheduler {
    /// Delivers a clone of `msg` to `target` after `initial`, then every
    /// `interval` after the previous *deadline* (late firings catch up).
    /// Stops when cancelled or when the target has stopped, not when it
    /// restarts: for an actor's own repeating timer use
    /// [`Context::schedule_repeatedly`](crate::Context::schedule_repeatedly).
    pub fn schedule_at_fixed_rate<M: Clone + Send + Sync + 'static>(
        &self,
        initial: Duration,
        interval: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        self.schedule_repeating(initial, interval, true, target, msg)
    }

    /// Delivers a clone of `msg` to `target` after `initial`, then `delay`
    /// after each previous *delivery*. Stops when cancelled or when the
    /// target has stopped.
    pub fn schedule_with_fixed_delay<M: Clone + Send + Sync + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        self.schedule_repeating(initial, delay, false, target, msg)
    }

    fn schedule_repeating<M: Clone + Send + Sync + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        fixed_rate: bool,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        let (handle, flag) = Cancellable::flag();
        let target = target.clone();
        // A zero period would fire in a busy loop.
        let period = period.max(Duration::from_micros(1));
        self.repeat(
            self.now() + initial,
            period,
            fixed_rate,
            flag,
            Arc::new(move || {
                if target.is_terminated() {
                    return false;
                }
                target.tell(msg.clone());
                true
            }),
        );
        handle
    }

    /// Delivers `msg` to `target` after `delay`, through the ordinary `tell`
    /// path. The returned handle cancels the delivery, unless the message
    /// has already been sent.
    ///
    /// The timer is addressed to the ref, not to an instance of the actor:
    /// if the target restarts before it fires, the fresh instance gets the
    /// message its failed predecessor scheduled. For a message an actor
    /// sends *itself* (a retry, "expire reservation 1"), use
    /// [`Context::schedule_once`](crate::Context::schedule_once) or the
    /// keyed [`Context::timers`](crate::Context::timers) instead: those
    /// timers are cancelled when the actor stops or restarts, and a message
    /// of a cancelled one is never delivered, even if already sent.
    pub fn schedule_once<M: Send + 'static>(
        &self,
        delay: Duration,
        target: &ActorRef<M>,
        msg: M,
    ) -> Cancellable {
        let target = target.clone();
        self.run_at(self.now() + delay, move || target.tell(msg))
    }

    /// Like [`schedule_once`](Self::schedule_once), but the message is made
    /// by `make` on the driver thread when the timer fires (for instance to
    /// stamp it with the firing time). `make` must be quick.
    pub fn schedule_once_with<M: Send + 'static>(
        &self,
        delay: Duration,
        target: &ActorRef<M>,
        make: impl FnOnce() -> M + Send + 'static,
    ) -> Cancellable {
        let target = target.clone();
        self.run_at(self.now() + delay, move || target.tell(make()))
    }
}

//! The actor lifecycle, as the owner of a cell's mailbox drives it: start,
//! failure and the supervisor's directive, restart, stop (children first),
//! finalization, and the handling of system messages.
//!
//! Every method here runs on the thread that owns the mailbox (see the
//! ground rules in `cell.rs`), with the run state passed in explicitly.

use std::any::type_name;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::{
    send_system, timers, ActorCell, After, Cell, Parent, Phase, RestartWindow, Restarting,
    RunState, SystemMsg,
};
use crate::actor::{Actor, PendingOp, Signal};
use crate::ids::{ActorId, DeadLetterReason};
use crate::kernel::ActorEventKind;
use crate::supervision::{Directive, Failure, Scope};

impl<A: Actor> ActorCell<A> {
    pub(super) fn start(self: &Arc<Self>, run: &mut RunState<A>) {
        let factory = run
            .factory
            .clone()
            .expect("a starting actor has its factory");
        match catch_unwind(AssertUnwindSafe(|| factory())) {
            Ok(actor) => {
                run.actor = Some(actor);
                run.status.phase = Phase::Running;
                match self.call(run, |a, ctx| a.started(ctx)) {
                    Ok(()) => {
                        #[cfg(feature = "metrics")]
                        self.metrics.started();
                        self.publish_event(|| ActorEventKind::Started)
                    }
                    Err(failure) => self.fail(run, failure),
                }
                self.after_handler(run);
                self.deliver_deferred(run);
            }
            Err(payload) => self.factory_failed(run, payload),
        }
    }

    /// A factory that panics cannot be helped by restarting: stop.
    fn factory_failed(
        self: &Arc<Self>,
        run: &mut RunState<A>,
        payload: Box<dyn std::any::Any + Send>,
    ) {
        let failure = Failure::from_panic(self.id, payload);
        tracing::error!(actor = %self, "actor factory panicked, stopping: {}", failure.message);
        self.notify_parent_failed(run, failure, Directive::Stop, 0);
        self.begin_stop(run);
    }

    /// Applies the supervisor strategy to a failure.
    pub(super) fn fail(self: &Arc<Self>, run: &mut RunState<A>, failure: Failure) {
        let mut directive = run.strategy.decide(&failure);
        let mut count = 0;
        if directive == Directive::Restart {
            match self.count_restart(run) {
                Some(n) => count = n,
                None => directive = Directive::Stop,
            }
        }
        tracing::error!(actor = %self, ?directive, "{failure}");
        match directive {
            Directive::Resume => {}
            Directive::Restart => self.begin_restart(run, failure.clone(), count),
            Directive::Stop | Directive::Escalate => self.begin_stop(run),
        }
        self.notify_parent_failed(run, failure, directive, count);
    }

    /// Drops the instance (after `before_restart`), stops the children, and
    /// rebuilds once they are gone (after the backoff for restart `count`).
    fn begin_restart(self: &Arc<Self>, run: &mut RunState<A>, failure: Failure, count: u32) {
        if let Err(again) = self.call(run, |a, ctx| a.before_restart(ctx, &failure)) {
            tracing::error!(actor = %self, "before_restart panicked: {}", again.message);
        }
        run.actor = None;
        timers::cancel_all(&mut run.status);
        #[cfg(feature = "tokio")]
        super::pipes::cancel_all(&mut run.status);
        // What waited for a pending async handler belonged to the failed
        // instance, as its timers and pipes did.
        if let Some(links) = run.status.links.as_mut() {
            links.deferred_system.clear();
        }
        // The fresh instance handles the stashed messages first.
        run.status.unstash_all_erased();
        run.status.phase =
            Phase::Terminating(After::Restart(Box::new(Restarting { failure, count })));
        self.stop_children(run);
        self.children_gone(run);
    }

    /// Counts a restart in the strategy's window: its number, or `None` if
    /// that is over the limit.
    fn count_restart(&self, run: &mut RunState<A>) -> Option<u32> {
        let now = self.system.scheduler.now();
        let within = run.strategy.within();
        let window = run.status.links().restarts.get_or_insert(RestartWindow {
            count: 0,
            start: now,
        });
        if now.duration_since(window.start) > within {
            window.start = now;
            window.count = 0;
        }
        window.count += 1;
        let count = window.count;
        run.strategy
            .max_restarts()
            .is_none_or(|max| count <= max)
            .then_some(count)
    }

    fn notify_parent_failed(
        &self,
        run: &RunState<A>,
        failure: Failure,
        directive: Directive,
        restarts: u32,
    ) {
        match &self.parent {
            Parent::Actor(parent) => send_system(
                parent,
                SystemMsg::ChildFailed {
                    child: self.id,
                    failure,
                    directive,
                    scope: run.strategy.scope(),
                    restarts,
                },
            ),
            Parent::Guardian { .. } => self.system.guardian_child_failed(failure, directive),
        }
    }

    /// A child failed under an all-for-one or rest-for-one strategy: its
    /// restart or stop reaches the siblings in its group.
    fn apply_to_group(
        &self,
        run: &mut RunState<A>,
        child: ActorId,
        failure: &Failure,
        directive: Directive,
        scope: Scope,
        restarts: u32,
    ) {
        let Some(links) = run.status.links.as_ref() else {
            return;
        };
        // Ids grow with every spawn, so "spawned after" is "a larger id".
        let in_group = |id: &ActorId| match scope {
            Scope::OneForOne => false,
            Scope::AllForOne => *id != child,
            Scope::RestForOne => id.0 > child.0,
        };
        for (_, sibling) in links.children.iter().filter(|(id, _)| in_group(id)) {
            match directive {
                Directive::Restart => send_system(
                    sibling,
                    SystemMsg::GroupRestart {
                        failure: failure.clone(),
                        restarts,
                    },
                ),
                Directive::Stop => send_system(sibling, SystemMsg::Stop),
                // Resume leaves the siblings alone; an escalation fails this
                // actor, whose restart or stop takes every child with it.
                Directive::Resume | Directive::Escalate => {}
            }
        }
    }

    fn stop_children(&self, run: &mut RunState<A>) {
        if let Some(links) = &run.status.links {
            for child in links.children.values() {
                send_system(child, SystemMsg::Stop);
            }
        }
    }

    pub(super) fn begin_stop(self: &Arc<Self>, run: &mut RunState<A>) {
        match run.status.phase {
            Phase::Stopped(_) | Phase::Terminating(After::Stop) => return,
            Phase::Terminating(After::Restart(_)) => {}
            _ => self.stop_children(run),
        }
        if run.status.is_awaiting() {
            // A stop while an async handler awaits: the handler's future is
            // dropped now, never polled again (with the message it was
            // handling; see docs/semantics.md).
            run.status.phase = Phase::Running;
            if let Err(failure) = self.call(run, |a, ctx| a.pending_handler(ctx, PendingOp::Cancel))
            {
                tracing::error!(actor = %self, "dropping a pending handler panicked: {}", failure.message);
            }
        }
        run.status.phase = Phase::Terminating(After::Stop);
        // Work the actor started is of no use once it stops.
        #[cfg(feature = "tokio")]
        super::pipes::cancel_all(&mut run.status);
        self.children_gone(run);
    }

    /// Moves a terminating actor on once its last child has stopped.
    fn children_gone(self: &Arc<Self>, run: &mut RunState<A>) {
        if run.status.has_children() {
            return;
        }
        match std::mem::replace(&mut run.status.phase, Phase::Running) {
            Phase::Terminating(After::Stop) => self.finalize(run),
            Phase::Terminating(After::Restart(restarting)) => {
                // The new instance is built when the `Recreate` comes back
                // through the system lane, from the run loop: a restart that
                // fails again then starts over from the loop instead of
                // nesting inside the failed one (no stack growth in a
                // restart storm).
                let Restarting { failure, count } = *restarting;
                run.status.phase = Phase::Suspended(Box::new(failure));
                let me: Arc<dyn Cell> = self.clone();
                match run.strategy.backoff_delay(count) {
                    Some(delay) => {
                        self.system
                            .scheduler
                            .run_at(self.system.scheduler.now() + delay, move || {
                                send_system(&me, SystemMsg::Recreate)
                            });
                    }
                    // We own the mailbox, so this only enqueues.
                    None => send_system(&me, SystemMsg::Recreate),
                }
            }
            other => run.status.phase = other,
        }
    }

    fn recreate(self: &Arc<Self>, run: &mut RunState<A>, failure: Failure) {
        let factory = run
            .factory
            .clone()
            .expect("a restarting actor has its factory");
        match catch_unwind(AssertUnwindSafe(|| factory())) {
            Ok(actor) => {
                run.actor = Some(actor);
                run.status.phase = Phase::Running;
                match self.call(run, |a, ctx| a.after_restart(ctx, &failure)) {
                    Ok(()) => {
                        #[cfg(feature = "metrics")]
                        self.metrics.restarted();
                        self.publish_event(|| ActorEventKind::Restarted { failure })
                    }
                    Err(again) => self.fail(run, again),
                }
                self.after_handler(run);
                self.deliver_deferred(run);
                // The restart made the stash due: the fresh instance handles
                // it before newer mailbox messages.
                if run.status.stash_due {
                    super::signal_unstashed(self);
                }
            }
            Err(payload) => self.factory_failed(run, payload),
        }
    }

    /// The actor and its children have stopped: close and notify.
    fn finalize(self: &Arc<Self>, run: &mut RunState<A>) {
        if let Err(failure) = self.call(run, |a, ctx| a.stopped(ctx)) {
            tracing::error!(actor = %self, "stopped hook panicked: {}", failure.message);
        }
        run.actor = None;
        run.factory = None;
        timers::cancel_all(&mut run.status);
        #[cfg(feature = "tokio")]
        super::pipes::cancel_all(&mut run.status);
        // Stashed and unstashed messages become dead letters.
        run.status
            .discard_stash(&self.system, self.id, self.name.as_deref());
        let keep_alive: Arc<dyn Cell> = self.clone();
        run.status.phase = Phase::Stopped(Some(Box::new(keep_alive)));
        self.mailbox.state.close();
        self.drain_contents();
        if let Some(links) = run.status.links.take() {
            for watcher in &links.watchers {
                send_system(watcher, SystemMsg::Terminated(self.id, self.name.clone()));
            }
            // A stopped watcher must not stay referenced by what it watched.
            for watched in links.watching.values() {
                send_system(watched, SystemMsg::Unwatch(self.id));
            }
        }
        // After the watchers: whoever hears of the stop here can rely on
        // the watchers' `Terminated` being on its way already.
        #[cfg(feature = "metrics")]
        self.metrics.stopped();
        self.publish_event(|| ActorEventKind::Stopped);
        match &self.parent {
            Parent::Actor(parent) => send_system(parent, SystemMsg::ChildTerminated(self.id)),
            Parent::Guardian { slot } => self
                .system
                .guardian_child_terminated(*slot, self.name.as_deref()),
        }
    }

    /// Owner of a closed mailbox: dead-letters user messages, answers late
    /// watchers. Clears the arrival flags first.
    fn drain_contents(&self) {
        let mut sys = Vec::new();
        // only the mailbox owner calls this (from `finalize`, or from
        // `drain_closed` after a send acquired the closed mailbox).
        // SAFETY: by the argument just above.
        unsafe { self.mailbox.take_system(&mut sys) };
        for msg in sys {
            if let SystemMsg::Watch(watcher) = msg {
                send_system(&watcher, SystemMsg::Terminated(self.id, self.name.clone()));
            }
        }
        // only the mailbox owner calls this (from `finalize`, or from
        // `drain_closed` after a send acquired the closed mailbox), so this
        // thread is the user queue's single consumer.
        // SAFETY: by the argument just above.
        while let Some(msg) = unsafe { self.mailbox.pop_user() } {
            self.system.dead_letter(
                self.id,
                self.name.as_deref(),
                type_name::<A::Msg>(),
                DeadLetterReason::RecipientStopped,
            );
            drop(msg);
        }
        // Producers waiting for room learn that there will be none.
        if let Some(bound) = self.mailbox.bound() {
            bound.wake_all();
        }
    }

    pub(super) fn handle_system(self: &Arc<Self>, run: &mut RunState<A>, msg: SystemMsg) {
        if let Phase::Stopped(_) = run.status.phase {
            // Arrived in the same batch as the stop that finalized the actor:
            // treat it as a message to a closed mailbox.
            if let SystemMsg::Watch(watcher) = msg {
                send_system(&watcher, SystemMsg::Terminated(self.id, self.name.clone()));
            }
            return;
        }
        match msg {
            SystemMsg::Stop => self.begin_stop(run),
            SystemMsg::Watch(watcher) => {
                let links = run.status.links();
                if !links.watchers.iter().any(|w| w.id() == watcher.id()) {
                    links.watchers.push(watcher);
                }
            }
            SystemMsg::Unwatch(id) => {
                if let Some(links) = run.status.links.as_mut() {
                    links.watchers.retain(|w| w.id() != id);
                }
            }
            SystemMsg::Terminated(id, name) => {
                let watched = run
                    .status
                    .links
                    .as_mut()
                    .is_some_and(|l| l.watching.remove(&id).is_some());
                if watched {
                    self.signal(run, Signal::Terminated(id, name));
                }
            }
            SystemMsg::ChildTerminated(id) => {
                if let Some(links) = run.status.links.as_mut() {
                    links.children.remove(&id);
                    links.child_names.retain(|_, child| child.id != id);
                }
                if matches!(run.status.phase, Phase::Terminating(_)) {
                    self.children_gone(run);
                }
            }
            SystemMsg::ChildFailed {
                child,
                failure,
                directive,
                scope,
                restarts,
            } => {
                if scope != Scope::OneForOne && run.status.is_alive() {
                    self.apply_to_group(run, child, &failure, directive, scope, restarts);
                }
                let escalated = directive == Directive::Escalate;
                let message = failure.message.clone();
                self.signal(
                    run,
                    Signal::ChildFailed {
                        child,
                        failure,
                        directive,
                    },
                );
                if escalated && run.status.is_alive() {
                    let failure = Failure {
                        actor: self.id,
                        message: format!("child {child} escalated: {message}"),
                    };
                    self.fail(run, failure);
                }
            }
            msg @ (SystemMsg::Timer { .. } | SystemMsg::Unstashed) if run.status.is_awaiting() => {
                run.status.links().deferred_system.push_back(msg);
            }
            #[cfg(feature = "tokio")]
            msg @ SystemMsg::Piped { .. } if run.status.is_awaiting() => {
                run.status.links().deferred_system.push_back(msg);
            }
            SystemMsg::Wake => {
                if run.status.is_awaiting() {
                    // Polled as the actor runs, so that the handler may use
                    // its context as in any handler.
                    run.status.phase = Phase::Running;
                    if let Err(failure) =
                        self.call(run, |a, ctx| a.pending_handler(ctx, PendingOp::Poll))
                    {
                        self.fail(run, failure);
                    }
                    if matches!(run.status.phase, Phase::Running) {
                        self.handler_completed(run);
                    }
                }
                // Otherwise a late or spurious wake: nothing is pending, or
                // what was pending is gone with a stop or a restart.
            }
            SystemMsg::Timer {
                key,
                generation,
                msg,
            } => {
                if matches!(run.status.phase, Phase::Running)
                    && timers::take_if_current(&mut run.status, &key, generation)
                {
                    match msg.downcast::<A::Msg>() {
                        Ok(msg) => self.invoke(run, *msg),
                        Err(_) => unreachable!("a timer carries its actor's message type"),
                    }
                }
            }
            SystemMsg::ReceiveTimeout { generation } => {
                if self.receive_timeout_due(&mut run.status, generation) {
                    self.signal(run, Signal::ReceiveTimeout);
                }
            }
            SystemMsg::Unstashed => {
                // A stopping actor's stash becomes dead letters instead; a
                // restarting one is signalled again once the fresh instance
                // runs (`recreate`).
                while matches!(run.status.phase, Phase::Running) {
                    let Some(msg) = run.status.next_due::<A::Msg>() else {
                        break;
                    };
                    self.invoke(run, msg);
                }
            }
            SystemMsg::GroupRestart { failure, restarts } => {
                // An actor already restarting or stopping is left to it.
                if run.status.is_alive() {
                    self.begin_restart(run, failure, restarts);
                }
            }
            #[cfg(feature = "tokio")]
            SystemMsg::Piped { id, msg } => {
                if matches!(run.status.phase, Phase::Running)
                    && super::pipes::take_if_current(&mut run.status, id)
                {
                    match msg.downcast::<A::Msg>() {
                        Ok(msg) => self.invoke(run, *msg),
                        Err(_) => unreachable!("a pipe carries its actor's message type"),
                    }
                }
            }
            SystemMsg::Recreate => {
                if let Phase::Suspended(_) = run.status.phase {
                    let Phase::Suspended(failure) =
                        std::mem::replace(&mut run.status.phase, Phase::Running)
                    else {
                        unreachable!("matched above")
                    };
                    self.recreate(run, *failure);
                }
            }
        }
    }

    /// Delivers a signal to a running actor, defers it while the actor is
    /// starting or restarting, and drops it once the actor is stopping.
    fn signal(self: &Arc<Self>, run: &mut RunState<A>, signal: Signal) {
        match run.status.phase {
            Phase::Running => {}
            Phase::Starting
            | Phase::Awaiting
            | Phase::Suspended(_)
            | Phase::Terminating(After::Restart(_)) => {
                run.status.links().deferred.push(signal);
                return;
            }
            Phase::Terminating(After::Stop) | Phase::Stopped(_) => return,
        }
        if let Err(failure) = self.call(run, |a, ctx| a.signal(ctx, signal)) {
            self.fail(run, failure);
        }
        self.after_handler(run);
    }

    /// An async handler that was pending completed (it ran as `Running`
    /// and is still running): act on the stop it asked for, then hand the
    /// actor what waited for it on the system lane, in order of arrival
    /// (each may leave a handler pending again, and the rest wait on).
    /// User messages come after, from the run loop.
    fn handler_completed(self: &Arc<Self>, run: &mut RunState<A>) {
        self.after_handler(run);
        while matches!(run.status.phase, Phase::Running) {
            let Some(msg) = run
                .status
                .links
                .as_mut()
                .and_then(|l| l.deferred_system.pop_front())
            else {
                break;
            };
            self.handle_system(run, msg);
        }
        if matches!(run.status.phase, Phase::Running) {
            self.deliver_deferred(run);
        }
        if matches!(run.status.phase, Phase::Running) && run.status.stash_due {
            self.handle_system(run, SystemMsg::Unstashed);
        }
    }

    /// Delivers the signals deferred during a start or restart.
    fn deliver_deferred(self: &Arc<Self>, run: &mut RunState<A>) {
        let Some(links) = run.status.links.as_mut() else {
            return;
        };
        if links.deferred.is_empty() {
            return;
        }
        let deferred = std::mem::take(&mut links.deferred);
        for signal in deferred {
            self.signal(run, signal);
        }
    }

    /// Publishes a lifecycle event of this actor, if anyone listens.
    fn publish_event(&self, kind: impl FnOnce() -> ActorEventKind) {
        self.system
            .events
            .actor_event(self.id, self.name.as_deref(), kind);
    }

    /// Gives up ownership of a closed mailbox, draining late arrivals.
    ///
    /// It always drains before it tries: the run loop clears the arrival
    /// flags when it takes system messages, so a user message that arrived
    /// since then is only found by looking at the queue (the same
    /// look-then-release order as `try_release`, and as the loom model).
    pub(super) fn release_closed(&self) {
        loop {
            self.drain_contents();
            if self.mailbox.state.try_release_closed() {
                return;
            }
        }
    }
}

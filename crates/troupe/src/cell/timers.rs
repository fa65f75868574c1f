//! Per-actor timers (`Context::timers`) and the receive timeout
//! (`Context::set_receive_timeout`).
//!
//! # Design
//!
//! A timer is a scheduler entry that, when due, sends the actor a system
//! message carrying the user message, the timer's key and its *generation*.
//! The actor delivers it only if the key still maps to that generation, so a
//! timer that was cancelled or restarted (same key) after its message was
//! already on the way is never delivered: cancellation is exact, not a race.
//! Timers and the receive timeout are cancelled when the actor stops or
//! restarts.
//!
//! The receive timeout records when the last user message was handled (only
//! for actors that set one). Its scheduler entry checks, when due, whether the
//! actor has been idle for the whole timeout: if so it delivers
//! `Signal::ReceiveTimeout`; either way it re-arms for the next possible
//! moment. So it fires no earlier than the timeout after the last message.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{send_system, ActorCell, Cell, CellStatus, SystemMsg};
use crate::actor::Actor;
use crate::scheduler::Cancellable;

/// A running timer: its generation and the handle of its scheduler entry.
pub(super) struct TimerSlot {
    generation: u64,
    periodic: bool,
    handle: Cancellable,
}

/// A receive timeout in force.
pub(super) struct ReceiveTimeout {
    timeout: Duration,
    /// When the last user message was handled (or the timeout was set).
    last: Instant,
    generation: u64,
    handle: Cancellable,
}

/// The timers of one actor, from [`crate::Context::timers`].
///
/// ```
/// use std::time::Duration;
/// use troupe::{Actor, Context};
///
/// #[derive(Clone)]
/// enum Msg { Tick, Stop }
///
/// struct Heartbeat { beats: u32 }
/// impl Actor for Heartbeat {
///     type Msg = Msg;
///     fn started(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.timers().start_periodic("beat", Duration::from_millis(10), Msg::Tick);
///     }
///     fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
///         match msg {
///             Msg::Tick => self.beats += 1,
///             Msg::Stop => ctx.timers().cancel("beat"),
///         }
///     }
/// }
/// ```
pub struct Timers<'a, A: Actor> {
    pub(crate) cell: &'a Arc<ActorCell<A>>,
    pub(crate) status: &'a mut CellStatus,
}

impl<A: Actor> Timers<'_, A> {
    /// Delivers `msg` once after `delay`, replacing any timer with this key.
    pub fn start_single(&mut self, key: &'static str, delay: Duration, msg: A::Msg) {
        let (generation, cell) = self.arm(key);
        let mut msg = Some(msg);
        let handle = self.cell.system.scheduler.run_at(
            self.cell.system.scheduler.now() + delay,
            move || {
                if let Some(msg) = msg.take() {
                    fire(&cell, key, generation, Box::new(msg));
                }
            },
        );
        self.store(key, generation, false, handle);
    }

    /// Delivers a clone of `msg` every `interval`, replacing any timer with
    /// this key.
    pub fn start_periodic(&mut self, key: &'static str, interval: Duration, msg: A::Msg)
    where
        A::Msg: Clone + Sync,
    {
        let (generation, cell) = self.arm(key);
        let handle = self.cell.system.scheduler.every(
            self.cell.system.scheduler.now() + interval,
            interval,
            Arc::new(move || {
                if cell.is_closed() {
                    return false;
                }
                fire(&cell, key, generation, Box::new(msg.clone()));
                true
            }),
        );
        self.store(key, generation, true, handle);
    }

    /// Cancels the timer with this key; a message it already sent is not
    /// delivered either.
    pub fn cancel(&mut self, key: &'static str) {
        if let Some(links) = self.status.links.as_mut() {
            if let Some(slot) = links.timers.remove(key) {
                slot.handle.cancel();
            }
        }
    }

    /// Cancels every timer of this actor.
    pub fn cancel_all(&mut self) {
        cancel_all(self.status);
    }

    /// Whether a timer with this key is running (a single timer stops
    /// running once its message is delivered).
    pub fn is_active(&self, key: &'static str) -> bool {
        self.status
            .links
            .as_ref()
            .is_some_and(|l| l.timers.contains_key(key))
    }

    /// Cancels a previous timer with this key and picks a new generation.
    fn arm(&mut self, key: &'static str) -> (u64, Arc<dyn Cell>) {
        self.cancel(key);
        let links = self.status.links();
        links.next_timer_generation += 1;
        let cell: Arc<dyn Cell> = self.cell.clone();
        (links.next_timer_generation, cell)
    }

    fn store(&mut self, key: &'static str, generation: u64, periodic: bool, handle: Cancellable) {
        self.status.links().timers.insert(
            key,
            TimerSlot {
                generation,
                periodic,
                handle,
            },
        );
    }
}

fn fire(cell: &Arc<dyn Cell>, key: &'static str, generation: u64, msg: Box<dyn Any + Send>) {
    send_system(
        cell,
        SystemMsg::Timer {
            key,
            generation,
            msg,
        },
    );
}

/// Cancels every timer and the receive timeout (on stop and restart).
pub(super) fn cancel_all(status: &mut CellStatus) {
    status.has_receive_timeout = false;
    if let Some(links) = status.links.as_mut() {
        for (_, slot) in links.timers.drain() {
            slot.handle.cancel();
        }
        if let Some(rt) = links.receive_timeout.take() {
            rt.handle.cancel();
        }
    }
}

/// Whether a timer message is current; a single timer is done once it is.
pub(super) fn take_if_current(status: &mut CellStatus, key: &'static str, generation: u64) -> bool {
    let Some(links) = status.links.as_mut() else {
        return false;
    };
    match links.timers.get(key) {
        Some(slot) if slot.generation == generation => {
            if !slot.periodic {
                links.timers.remove(key);
            }
            true
        }
        _ => false,
    }
}

impl<A: Actor> ActorCell<A> {
    /// `Context::set_receive_timeout`.
    pub(crate) fn set_receive_timeout(
        self: &Arc<Self>,
        status: &mut CellStatus,
        timeout: Option<Duration>,
    ) {
        let links = status.links();
        if let Some(old) = links.receive_timeout.take() {
            old.handle.cancel();
        }
        status.has_receive_timeout = false;
        let Some(timeout) = timeout else {
            return;
        };
        let links = status.links();
        links.next_timer_generation += 1;
        let generation = links.next_timer_generation;
        let now = self.system.scheduler.now();
        let handle = self.arm_receive_timeout(now + timeout, generation);
        links.receive_timeout = Some(ReceiveTimeout {
            timeout,
            last: now,
            generation,
            handle,
        });
        status.has_receive_timeout = true;
    }

    fn arm_receive_timeout(self: &Arc<Self>, at: Instant, generation: u64) -> Cancellable {
        let cell: Arc<dyn Cell> = self.clone();
        self.system.scheduler.run_at(at, move || {
            send_system(&cell, SystemMsg::ReceiveTimeout { generation });
        })
    }

    /// A user message was handled: the actor is not idle.
    #[inline]
    pub(super) fn touch_receive_timeout(&self, status: &mut CellStatus) {
        if status.has_receive_timeout {
            if let Some(rt) = status
                .links
                .as_mut()
                .and_then(|l| l.receive_timeout.as_mut())
            {
                rt.last = self.system.scheduler.now();
            }
        }
    }

    /// The receive-timeout check came due: true if the actor has been idle
    /// for the whole timeout (the caller delivers the signal). Re-arms.
    pub(super) fn receive_timeout_due(
        self: &Arc<Self>,
        status: &mut CellStatus,
        generation: u64,
    ) -> bool {
        let Some(rt) = status
            .links
            .as_mut()
            .and_then(|l| l.receive_timeout.as_mut())
        else {
            return false;
        };
        if rt.generation != generation {
            return false;
        }
        let now = self.system.scheduler.now();
        let idle_since = rt.last;
        let due = now.duration_since(idle_since) >= rt.timeout;
        let next = if due {
            now + rt.timeout
        } else {
            idle_since + rt.timeout
        };
        if due {
            rt.last = now;
        }
        let (timeout_generation, cell) = (rt.generation, self.clone());
        rt.handle = cell.arm_receive_timeout(next, timeout_generation);
        due
    }
}

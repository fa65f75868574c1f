//! `when_stopped`: how a transport learns that an actor it serves to
//! other processes is gone.

use std::sync::{Arc, Mutex};

use crate::{Actor, ActorRef, ActorSystem, Context, Props, Signal};

/// Calls `gone` once, after `actor` has stopped (at once if it already
/// has), from a small actor of `system` that watches it: how a transport
/// learns that an actor it serves to others is gone. False if that actor
/// could not be spawned (the system is shutting down).
pub fn when_stopped<M: Send + 'static>(
    system: &ActorSystem,
    actor: &ActorRef<M>,
    gone: Box<dyn FnOnce() + Send>,
) -> bool {
    // The factory may run again on a restart; the callback runs once.
    let gone = Arc::new(Mutex::new(Some(gone)));
    let target = actor.clone();
    system
        .spawn(Props::new(move || StopWatch {
            target: target.clone(),
            gone: gone.clone(),
        }))
        .is_ok()
}

type Gone = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// Watches one actor and calls `gone` when it stops, then stops.
struct StopWatch<M: Send + 'static> {
    target: ActorRef<M>,
    gone: Gone,
}

impl<M: Send + 'static> Actor for StopWatch<M> {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        // Delivers Terminated at once if the actor has already stopped.
        ctx.watch(&self.target);
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(..) = signal {
            let gone = self.gone.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(gone) = gone {
                gone();
            }
            ctx.stop();
        }
    }
}

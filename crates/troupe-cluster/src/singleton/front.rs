//! The front of an instance whose message type is wider than the
//! singleton's protocol ([`Singleton::start_converting`]): an actor of the
//! protocol `M` on the holder's node that converts each message into the
//! instance's own type and tells it on.
//!
//! Why an actor and not a converting ref: the name the holder publishes,
//! the proxies' death watch and the manager's stop all need an `ActorRef<M>`
//! that is a real actor of this system, which ends when the instance ends.
//! The front watches the instance and stops when it does, so a proxy that
//! watches the front learns of the instance's end as it would of a plain
//! instance's. The manager stops both on a handover. The instance keeps
//! its own `Props` (supervisor strategy, mailbox, dispatcher): it is
//! spawned as before, beside the front, not under it.
//!
//! [`Singleton::start_converting`]: super::Singleton::start_converting

use troupe::{Actor, ActorRef, ActorSystem, Context, Props, Signal, SpawnError};

/// Forwards the protocol `M` to an instance of type `N`.
struct Front<M, N: Send + 'static> {
    instance: ActorRef<N>,
    _protocol: std::marker::PhantomData<fn(M)>,
}

impl<M: Send + 'static, N: From<M> + Send + 'static> Actor for Front<M, N> {
    type Msg = M;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        // Delivered at once if the instance has already stopped.
        ctx.watch(&self.instance);
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: M) {
        self.instance.tell(N::from(msg));
    }

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            if id == self.instance.id() {
                ctx.stop();
            }
        }
    }
}

/// Starts the front of `instance` (see the module header).
pub(crate) fn spawn<M, N>(
    system: &ActorSystem,
    instance: &ActorRef<N>,
) -> Result<ActorRef<M>, SpawnError>
where
    M: Send + 'static,
    N: From<M> + Send + 'static,
{
    let instance = instance.clone();
    system.spawn(Props::new(move || Front {
        instance: instance.clone(),
        _protocol: std::marker::PhantomData,
    }))
}

/// The entry of an instance whose type is the protocol: itself.
pub(crate) fn direct<M: Send + 'static>(
    _system: &ActorSystem,
    instance: &ActorRef<M>,
) -> Result<ActorRef<M>, SpawnError> {
    Ok(instance.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// The instance's own type: the protocol (`u32`) and more.
    enum Wide {
        Protocol(u32),
    }

    impl From<u32> for Wide {
        fn from(n: u32) -> Self {
            Wide::Protocol(n)
        }
    }

    struct Sink(mpsc::Sender<u32>);

    impl Actor for Sink {
        type Msg = Wide;
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, Wide::Protocol(n): Wide) {
            let _ = self.0.send(n);
        }
    }

    #[test]
    fn the_front_converts_in_order_and_ends_with_the_instance() {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let instance = system.spawn(Props::new(move || Sink(tx.clone()))).unwrap();
        let front: ActorRef<u32> = spawn(&system, &instance).unwrap();
        for n in 0..3 {
            front.tell(n);
        }
        let got: Vec<u32> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(got, [0, 1, 2]);

        // The proxies watch the front: it must end when the instance does.
        system.stop(&instance);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !front.is_terminated() {
            assert!(Instant::now() < deadline, "the front outlived its instance");
            std::thread::yield_now();
        }
        system.shutdown();
        system.await_termination().unwrap();
    }
}

//! The singleton's proxy: one actor per node that forwards to wherever the
//! singleton runs now, and holds messages while nobody is known to run it
//! (a handover: the holder left or died and no successor has started yet).
//!
//! Its target comes from the node's manager (`manager.rs`): the local
//! instance, a ref looked up on the holder's node, or none during a
//! handover. A remote target is watched: when its node goes down or its
//! process restarts, the ref terminates and the proxy holds messages again
//! until the manager names the successor.
//!
//! The buffer is bounded: beyond `capacity` the **oldest** held message is
//! dropped and counted (`dropped`), so a long handover costs the stalest
//! messages, never memory. Held messages go to the next target in the
//! order they were sent. A message already forwarded to a holder that dies
//! before handling it is lost (at-most-once, as every remote tell): the
//! proxy cannot know it was not handled.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[cfg(test)]
use troupe::ReplyTo;
use troupe::{Actor, ActorRef, Context, Signal};

/// What the proxy handles: the user's messages, through the adapter the
/// user holds, and its manager's news.
pub(crate) enum ProxyMsg<M: Send + 'static> {
    /// A message for the singleton.
    User(M),
    /// Where the singleton runs now; `None` during a handover.
    Target(Option<ActorRef<M>>),
    /// Whether a target is known, and how many messages are held (the
    /// unit tests' probe).
    #[cfg(test)]
    State(ReplyTo<(bool, usize)>),
}

/// The proxy actor.
pub(crate) struct Proxy<M: Send + 'static> {
    target: Option<ActorRef<M>>,
    held: VecDeque<M>,
    capacity: usize,
    dropped: Arc<AtomicU64>,
    /// Where `started` sends the adapter the user tells (taken then).
    adapter_to: Option<tokio::sync::oneshot::Sender<ActorRef<M>>>,
}

impl<M: Send + 'static> Proxy<M> {
    /// A proxy that sends its adapter to `adapter_to` when it starts
    /// (`None` after a restart: the user holds the adapter already).
    pub(crate) fn new(
        capacity: usize,
        dropped: Arc<AtomicU64>,
        adapter_to: Option<tokio::sync::oneshot::Sender<ActorRef<M>>>,
    ) -> Self {
        Proxy {
            target: None,
            held: VecDeque::new(),
            capacity: capacity.max(1),
            dropped,
            adapter_to,
        }
    }
}

impl<M: Send + 'static> Actor for Proxy<M> {
    type Msg = ProxyMsg<M>;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(to) = self.adapter_to.take() {
            let _ = to.send(ctx.message_adapter(ProxyMsg::User));
        }
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: ProxyMsg<M>) {
        match msg {
            ProxyMsg::User(m) => match &self.target {
                Some(target) => target.tell(m),
                None => {
                    if self.held.len() == self.capacity {
                        self.held.pop_front();
                        let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_power_of_two() {
                            tracing::warn!(
                                dropped = n,
                                capacity = self.capacity,
                                "singleton proxy: no holder known and the buffer is full; \
                                 dropping the oldest held messages"
                            );
                        }
                    }
                    self.held.push_back(m);
                }
            },
            ProxyMsg::Target(target) => {
                if let Some(old) = self.target.take() {
                    ctx.unwatch(&old);
                }
                if let Some(target) = target {
                    ctx.watch(&target);
                    for m in self.held.drain(..) {
                        target.tell(m);
                    }
                    self.target = Some(target);
                }
            }
            #[cfg(test)]
            ProxyMsg::State(reply) => {
                reply.reply((self.target.is_some(), self.held.len()));
            }
        }
    }

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            if self.target.as_ref().is_some_and(|t| t.id() == id) {
                // The holder is gone: hold messages until the manager
                // names its successor.
                self.target = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;
    use troupe::{ActorSystem, Props};

    /// Records what it receives.
    struct Sink(mpsc::Sender<u32>);

    impl Actor for Sink {
        type Msg = u32;
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: u32) {
            let _ = self.0.send(msg);
        }
    }

    fn proxy(
        system: &ActorSystem,
        capacity: usize,
    ) -> (ActorRef<ProxyMsg<u32>>, ActorRef<u32>, Arc<AtomicU64>) {
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let d = dropped.clone();
        let tx = std::sync::Mutex::new(Some(tx));
        let proxy = system
            .spawn(Props::new(move || {
                Proxy::new(capacity, d.clone(), tx.lock().unwrap().take())
            }))
            .unwrap();
        let adapter = rx.blocking_recv().unwrap();
        (proxy, adapter, dropped)
    }

    #[test]
    fn held_messages_go_to_the_next_holder_in_order_and_the_oldest_go_first_when_full() {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let (proxy, user, dropped) = proxy(&system, 3);
        for i in 0..5 {
            user.tell(i);
        }
        let (tx, rx) = mpsc::channel();
        let sink = system.spawn(Props::new(move || Sink(tx.clone()))).unwrap();
        proxy.tell(ProxyMsg::Target(Some(sink)));
        user.tell(5);
        let got: Vec<u32> = (0..4)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        // 0 and 1 were dropped to hold 2, 3 and 4 within the capacity.
        assert_eq!(got, vec![2, 3, 4, 5]);
        assert_eq!(dropped.load(Ordering::Relaxed), 2);
        system.shutdown();
        system.await_termination().unwrap();
    }

    #[test]
    fn a_holder_that_stops_makes_the_proxy_hold_again() {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let (proxy, user, dropped) = proxy(&system, 10);
        let (tx1, first) = mpsc::channel();
        let one = system.spawn(Props::new(move || Sink(tx1.clone()))).unwrap();
        proxy.tell(ProxyMsg::Target(Some(one.clone())));
        user.tell(1);
        assert_eq!(first.recv_timeout(Duration::from_secs(5)).unwrap(), 1);
        system.stop(&one);
        // Probe until the proxy has seen the holder's end (each probe is a
        // round trip through its mailbox).
        let state = || {
            proxy
                .ask(ProxyMsg::State, Duration::from_secs(5))
                .wait()
                .unwrap()
        };
        while state().0 {}
        user.tell(2);
        assert_eq!(state(), (false, 1), "held, not sent to the stopped holder");
        let (tx2, second) = mpsc::channel();
        let two = system.spawn(Props::new(move || Sink(tx2.clone()))).unwrap();
        proxy.tell(ProxyMsg::Target(Some(two)));
        assert_eq!(second.recv_timeout(Duration::from_secs(5)).unwrap(), 2);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        system.shutdown();
        system.await_termination().unwrap();
    }
}

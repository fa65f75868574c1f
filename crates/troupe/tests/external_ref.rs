//! External refs (`ActorRef::from_external`) and the reply-handle hooks a
//! transport uses (`ReplyTo::share`, `ReplyTo::pair`): tell, try_tell and
//! ask reach the target, a shared handle keeps an ask alive after the
//! original is dropped, and the last dropped handle fails it at once.
//! Death watch on an external ref reaches the target, and the watcher's
//! `Terminated` comes once however often the target fires it, with the
//! name the target reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use troupe::{
    Actor, ActorId, ActorRef, ActorSystem, AskError, Context, ExternalTarget, Props, ReplyTo,
    Signal, TrySendError, Watcher,
};

enum Msg {
    Note(u32),
    Ask(ReplyTo<u32>),
}

/// A transport stand-in: forwards notes to a channel, and keeps a shared
/// copy of each reply handle (as a remote transport does while the request
/// travels) before the message, with its original handle, is dropped.
struct Loopback {
    notes: Mutex<mpsc::Sender<u32>>,
    handles: Mutex<mpsc::Sender<ReplyTo<u32>>>,
    closed: AtomicBool,
}

impl ExternalTarget<Msg> for Loopback {
    fn send(&self, msg: Msg) {
        match msg {
            Msg::Note(n) => self.notes.lock().unwrap().send(n).unwrap(),
            Msg::Ask(reply) => {
                let shared = reply.share();
                drop(reply);
                self.handles.lock().unwrap().send(shared).unwrap();
            }
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn name(&self) -> Option<&str> {
        Some("loopback")
    }
}

#[test]
fn an_external_ref_is_an_ordinary_ref() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let (notes_tx, notes) = mpsc::channel();
    let (handles_tx, handles) = mpsc::channel();
    let target = Arc::new(Loopback {
        notes: Mutex::new(notes_tx),
        handles: Mutex::new(handles_tx),
        closed: AtomicBool::new(false),
    });
    // The ref owns its target; the test keeps a handle to flip `closed`.
    struct Shared(Arc<Loopback>);
    impl ExternalTarget<Msg> for Shared {
        fn send(&self, msg: Msg) {
            self.0.send(msg)
        }
        fn is_closed(&self) -> bool {
            self.0.is_closed()
        }
        fn name(&self) -> Option<&str> {
            self.0.name()
        }
    }
    let remote: ActorRef<Msg> = ActorRef::from_external(&system, Shared(target.clone()));
    assert_eq!(remote.name(), Some("loopback"));
    assert_eq!(remote.queued(), 0);

    remote.tell(Msg::Note(1));
    remote
        .try_tell(Msg::Note(2))
        .map_err(|_| "refused")
        .unwrap();
    assert_eq!(notes.recv().unwrap(), 1);
    assert_eq!(notes.recv().unwrap(), 2);

    // The original handle is dropped inside `send`; the shared one answers.
    let pending = remote.ask(Msg::Ask, Duration::from_secs(5));
    let shared = handles.recv().unwrap();
    assert!(shared.reply(42));
    assert_eq!(pending.wait(), Ok(42));

    // Every handle dropped unanswered: NoReply at once, not a timeout.
    let pending = remote.ask(Msg::Ask, Duration::from_secs(60));
    drop(handles.recv().unwrap());
    assert!(matches!(pending.wait(), Err(AskError::NoReply { .. })));

    // A closed target refuses try_tell and hands the message back.
    target.closed.store(true, Ordering::Release);
    assert!(remote.is_terminated());
    assert!(matches!(
        remote.try_tell(Msg::Note(3)),
        Err(TrySendError::Closed(Msg::Note(3)))
    ));

    system.shutdown();
    system.await_termination().unwrap();
    assert_eq!(system.pending_asks(), 0);
}

#[test]
fn a_detached_pair_answers_like_an_ask() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let anyone = system.spawn(troupe::Props::new(|| Sink)).unwrap().id();
    let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_secs(5));
    std::thread::spawn(move || reply.reply(7));
    assert_eq!(answer.wait(), Ok(7));
    let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_millis(20));
    let result = answer.wait();
    assert!(
        matches!(result, Err(AskError::Timeout { .. })),
        "{result:?}"
    );
    drop(reply);
    system.shutdown();
    system.await_termination().unwrap();
}

struct Sink;
impl troupe::Actor for Sink {
    type Msg = ();
    fn receive(&mut self, _ctx: &mut troupe::Context<'_, Self>, _msg: ()) {}
}

/// A target that hands every watch and unwatch to the test.
struct Watchable {
    watches: Mutex<mpsc::Sender<Watcher>>,
    unwatches: Mutex<mpsc::Sender<ActorId>>,
}

impl ExternalTarget<()> for Watchable {
    fn send(&self, _msg: ()) {}

    fn watch(&self, watcher: Watcher) {
        self.watches.lock().unwrap().send(watcher).unwrap();
    }

    fn unwatch(&self, watcher: ActorId) {
        self.unwatches.lock().unwrap().send(watcher).unwrap();
    }

    // Its `Terminated` carries this name.
    fn name(&self) -> Option<&str> {
        Some("far")
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

enum WatchCmd {
    Watch(ActorRef<()>),
    Unwatch(ActorRef<()>),
    /// Reported as `None`: everything sent to the watcher before it has
    /// been handled (the system lane goes first).
    Fence,
}

/// Watches and unwatches on command; reports each `Terminated` (the id and
/// the name) and fence.
struct WatchingActor(mpsc::Sender<Option<(ActorId, Option<String>)>>);

impl Actor for WatchingActor {
    type Msg = WatchCmd;
    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: WatchCmd) {
        match msg {
            WatchCmd::Watch(other) => ctx.watch(&other),
            WatchCmd::Unwatch(other) => ctx.unwatch(&other),
            WatchCmd::Fence => self.0.send(None).unwrap(),
        }
    }
    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, name) = signal {
            let name = name.as_deref().map(str::to_string);
            self.0.send(Some((id, name))).unwrap();
        }
    }
}

#[test]
fn watching_an_external_ref_goes_through_its_target_and_ends_once() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let (watches_tx, watches) = mpsc::channel();
    let (unwatches_tx, unwatches) = mpsc::channel();
    let far: ActorRef<()> = ActorRef::from_external(
        &system,
        Watchable {
            watches: Mutex::new(watches_tx),
            unwatches: Mutex::new(unwatches_tx),
        },
    );
    assert!(far.external_target::<Watchable>().is_some());
    assert!(far.external_target::<Loopback>().is_none());
    let (seen_tx, seen) = mpsc::channel();
    let watcher = system
        .spawn(Props::new(move || WatchingActor(seen_tx.clone())))
        .unwrap();
    assert!(watcher.external_target::<Watchable>().is_none());
    assert!(far.is_external() && !watcher.is_external());

    // Fired twice (a transport may learn of the end twice): one Terminated.
    watcher.tell(WatchCmd::Watch(far.clone()));
    let handle = watches.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(handle.watched(), far.id());
    assert_eq!(handle.id(), watcher.id());
    handle.terminated();
    handle.terminated();
    watcher.tell(WatchCmd::Fence);
    assert_eq!(
        seen.recv_timeout(Duration::from_secs(10)).unwrap(),
        Some((far.id(), Some("far".to_string())))
    );
    assert_eq!(seen.recv_timeout(Duration::from_secs(10)).unwrap(), None);

    // Watched again, then unwatched: the target hears it, and a late fire
    // of the old handle is not delivered.
    watcher.tell(WatchCmd::Watch(far.clone()));
    let handle = watches.recv_timeout(Duration::from_secs(10)).unwrap();
    watcher.tell(WatchCmd::Unwatch(far.clone()));
    assert_eq!(
        unwatches.recv_timeout(Duration::from_secs(10)).unwrap(),
        watcher.id()
    );
    handle.terminated();
    watcher.tell(WatchCmd::Fence);
    assert_eq!(seen.recv_timeout(Duration::from_secs(10)).unwrap(), None);

    // A watcher that stops unwatches what it watched.
    watcher.tell(WatchCmd::Watch(far.clone()));
    let _handle = watches.recv_timeout(Duration::from_secs(10)).unwrap();
    system.stop(&watcher);
    assert_eq!(
        unwatches.recv_timeout(Duration::from_secs(10)).unwrap(),
        watcher.id()
    );

    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn an_answer_handed_to_a_callback_comes_once_whatever_ends_the_ask() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let anyone = system.spawn(Props::new(|| Sink)).unwrap().id();
    let (tx, rx) = mpsc::channel();
    let callback = |tx: mpsc::Sender<Result<u32, AskError>>| move |r| tx.send(r).unwrap();

    // Answered later, on the replying thread.
    let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_secs(5));
    answer.on_answer(callback(tx.clone()));
    std::thread::spawn(move || reply.reply(1));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(1));
    // Answered before the callback was given: called at once.
    let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_secs(5));
    reply.reply(2);
    answer.on_answer(callback(tx.clone()));
    assert_eq!(rx.try_recv().unwrap(), Ok(2));
    // The handle dropped: NoReply.
    let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_secs(5));
    answer.on_answer(callback(tx.clone()));
    drop(reply);
    let dropped = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        matches!(dropped, Err(AskError::NoReply { .. })),
        "{dropped:?}"
    );
    // Nobody answers: the timeout, from the scheduler; a late reply is refused.
    let (reply, answer) = ReplyTo::<u32>::pair(&system, anyone, Duration::from_millis(20));
    answer.on_answer(callback(tx.clone()));
    let late = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(late, Err(AskError::Timeout { .. })), "{late:?}");
    assert!(!reply.reply(3));
    assert!(rx.try_recv().is_err(), "a second answer came");

    system.shutdown();
    system.await_termination().unwrap();
    assert_eq!(system.pending_asks(), 0);
}

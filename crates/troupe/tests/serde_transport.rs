//! `ReplyTo` and `ActorRef` through a transport's codec (feature `serde`):
//! a message with a reply handle is written as JSON on the asking side,
//! read back on the answering side, and the answer travels back through
//! the codec to the original ask, the way a transport between processes
//! does it; a ref comes home as itself, or elsewhere as an external ref
//! whose messages the exported endpoint decodes for the actor. Outside a
//! codec neither serializes. A test binary of its own: it needs the
//! feature, and `serde_json` as the stand-in wire format.
#![cfg(feature = "serde")]

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::transport::{
    when_stopped, with_codec, Codec, ExportedRef, ExportedReply, ImportedRef, ImportedReply,
    LocalEndpoint, Outgoing, RemoteMessage,
};
use troupe::{
    Actor, ActorId, ActorRef, ActorSystem, AskError, Context, ExternalTarget, Props, ReplyTo,
};

#[derive(Serialize, Deserialize)]
enum Msg {
    Double(u64, ReplyTo<u64>),
}

struct Doubler;
impl Actor for Doubler {
    type Msg = Msg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Msg) {
        let Msg::Double(n, reply) = msg;
        reply.reply(2 * n);
    }
}

/// The asking side's pending handles, by id, and the answers that came
/// back as JSON (a transport's reply frames).
#[derive(Default)]
struct Pending {
    next: u64,
    handles: HashMap<u64, ExportedReply>,
}

/// The asking side's codec: keeps each handle, writes its id.
struct Exporter(Rc<RefCell<Pending>>);

impl Codec for Exporter {
    fn export_reply(
        &self,
        reply: ExportedReply,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        let mut pending = self.0.borrow_mut();
        pending.next += 1;
        let id = pending.next;
        pending.handles.insert(id, reply);
        Ok(Box::new(id))
    }
}

/// The answers that reached the answering side: the reply id, and the
/// answer as JSON or why there is none.
type Answers = Arc<Mutex<Vec<(u64, Result<String, AskError>)>>>;

/// The answering side's codec: each handle it reads answers into `answers`.
struct Importer {
    system: ActorSystem,
    target: ActorId,
    answers: Answers,
}

impl Codec for Importer {
    fn import_reply(
        &self,
        input: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<ImportedReply, erased_serde::Error> {
        let id: u64 = erased_serde::deserialize(input)?;
        let answers = self.answers.clone();
        Ok(ImportedReply {
            system: self.system.clone(),
            target: self.target,
            timeout: Duration::from_secs(5),
            answer: Box::new(move |result| {
                let json = result.map(|value| serde_json::to_string(value).unwrap());
                answers.lock().unwrap().push((id, json));
            }),
        })
    }
}

#[test]
fn a_reply_handle_crosses_a_codec_and_its_answer_comes_back() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let doubler = system.spawn(Props::new(|| Doubler)).unwrap();

    // The asking side: an ask whose request is encoded, not sent.
    let pending = Rc::new(RefCell::new(Pending::default()));
    let (reply, ask) = ReplyTo::<u64>::pair(&system, doubler.id(), Duration::from_secs(5));
    let exporter: Rc<dyn Codec> = Rc::new(Exporter(pending.clone()));
    let json = with_codec(exporter, || serde_json::to_string(&Msg::Double(21, reply))).unwrap();
    assert_eq!(json, r#"{"Double":[21,1]}"#);

    // The answering side: decode the request and give it to the actor.
    let answers = Arc::new(Mutex::new(Vec::new()));
    let importer: Rc<dyn Codec> = Rc::new(Importer {
        system: system.clone(),
        target: doubler.id(),
        answers: answers.clone(),
    });
    let msg: Msg = with_codec(importer, || serde_json::from_str(&json)).unwrap();
    doubler.tell(msg);
    let (id, answer) = loop {
        if let Some(answer) = answers.lock().unwrap().pop() {
            break answer;
        }
        std::thread::yield_now();
    };

    // Back on the asking side: the answer completes the original ask.
    let handle = pending.borrow_mut().handles.remove(&id).unwrap();
    let answer = answer.unwrap();
    let mut de = serde_json::Deserializer::from_str(&answer);
    let decoded = handle
        .decode(&mut <dyn erased_serde::Deserializer>::erase(&mut de))
        .unwrap();
    assert!(decoded.reply());
    assert_eq!(ask.wait(), Ok(42));
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn an_exported_handle_dropped_or_unreachable_fails_its_ask() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let target = system.spawn(Props::new(|| Doubler)).unwrap().id();
    let pending = Rc::new(RefCell::new(Pending::default()));
    let exporter: Rc<dyn Codec> = Rc::new(Exporter(pending.clone()));
    let (first, dropped) = ReplyTo::<u64>::pair(&system, target, Duration::from_secs(5));
    let (second, unreachable) = ReplyTo::<u64>::pair(&system, target, Duration::from_secs(5));
    with_codec(exporter, || {
        serde_json::to_string(&Msg::Double(1, first)).unwrap();
        serde_json::to_string(&Msg::Double(2, second)).unwrap();
    });
    let mut handles = pending.borrow_mut();
    drop(handles.handles.remove(&1));
    assert!(handles.handles.remove(&2).unwrap().unreachable());
    assert_eq!(dropped.wait(), Err(AskError::NoReply { target }));
    assert_eq!(unreachable.wait(), Err(AskError::Unreachable { target }));
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn outside_a_codec_a_reply_handle_does_not_serialize() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let target = system.spawn(Props::new(|| Doubler)).unwrap().id();
    let (reply, _ask) = ReplyTo::<u64>::pair(&system, target, Duration::from_secs(5));
    let err = serde_json::to_string(&Msg::Double(1, reply)).unwrap_err();
    assert!(err.to_string().contains("transport"), "{err}");
    let err = serde_json::from_str::<Msg>(r#"{"Double":[1,1]}"#)
        .err()
        .unwrap();
    assert!(err.to_string().contains("transport"), "{err}");
    system.shutdown();
    system.await_termination().unwrap();
}

/// What a counter takes; it crosses processes, so it has a tag.
#[derive(Serialize, Deserialize)]
enum Cmd {
    Add(u64),
    Sum(ReplyTo<u64>),
}

impl RemoteMessage for Cmd {
    const TAG: &'static str = "test.cmd.v1";
}

/// A message carrying a ref, as a plain field.
#[derive(Serialize, Deserialize)]
struct Hand(ActorRef<Cmd>);

struct Counter(u64);
impl Actor for Counter {
    type Msg = Cmd;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Cmd) {
        match msg {
            Cmd::Add(n) => self.0 += n,
            Cmd::Sum(reply) => {
                reply.reply(self.0);
            }
        }
    }
}

/// A codec that keeps the local actors it exports (by a number it writes)
/// and reads a number back as one of them when `home`, or else as an
/// endpoint elsewhere that records what is sent to it as JSON.
struct RefCodec {
    home: bool,
    system: ActorSystem,
    exported: Rc<RefCell<Vec<LocalEndpoint>>>,
    sent: Arc<Mutex<Vec<String>>>,
}

impl Codec for RefCodec {
    fn export_ref(
        &self,
        actor: ExportedRef<'_>,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        assert!(!actor.is_external() && actor.external().is_none());
        assert_eq!(actor.tag(), Cmd::TAG);
        let endpoint = actor.local();
        assert_eq!(endpoint.id(), actor.id());
        let mut exported = self.exported.borrow_mut();
        exported.push(endpoint);
        Ok(Box::new(exported.len() - 1))
    }

    fn import_ref(
        &self,
        input: &mut dyn erased_serde::Deserializer<'_>,
        tag: &'static str,
    ) -> Result<ImportedRef, erased_serde::Error> {
        assert_eq!(tag, Cmd::TAG);
        let n: usize = erased_serde::deserialize(input)?;
        if self.home {
            return Ok(ImportedRef::Local(self.exported.borrow()[n].actor_ref()));
        }
        Ok(ImportedRef::Remote {
            system: self.system.clone(),
            target: Arc::new(Recorder(self.sent.clone())),
        })
    }
}

/// An endpoint elsewhere: what is sent through it, as JSON.
struct Recorder(Arc<Mutex<Vec<String>>>);

impl ExternalTarget<Outgoing> for Recorder {
    fn send(&self, msg: Outgoing) {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_string(&msg).unwrap());
    }
    fn name(&self) -> Option<&str> {
        Some("recorder")
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

#[test]
fn an_actor_ref_crosses_a_codec_home_or_elsewhere() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let counter = system.spawn(Props::new(|| Counter(0))).unwrap();
    let codec = |home| -> RefCodec {
        RefCodec {
            home,
            system: system.clone(),
            exported: Rc::new(RefCell::new(Vec::new())),
            sent: Arc::new(Mutex::new(Vec::new())),
        }
    };

    // Home again: the very same local ref.
    let home = codec(true);
    let (exported, home): (_, Rc<dyn Codec>) = (home.exported.clone(), Rc::new(home));
    let json = with_codec(home.clone(), || {
        serde_json::to_string(&Hand(counter.clone()))
    })
    .unwrap();
    assert_eq!(json, "0");
    let Hand(back) = with_codec(home, || serde_json::from_str::<Hand>(&json)).unwrap();
    assert_eq!(back.id(), counter.id());
    assert!(!back.is_external());

    // Elsewhere: an external ref whose messages go through the endpoint;
    // the exported endpoint decodes them for the local actor.
    let far = codec(false);
    let sent = far.sent.clone();
    let far: Rc<dyn Codec> = Rc::new(far);
    let Hand(remote) = with_codec(far, || serde_json::from_str::<Hand>(&json)).unwrap();
    assert!(remote.is_external());
    assert_eq!(remote.name(), Some("recorder"));
    remote.tell(Cmd::Add(5));
    remote.tell(Cmd::Add(7));
    let sent: Vec<String> = sent.lock().unwrap().drain(..).collect();
    assert_eq!(sent, [r#"{"Add":5}"#, r#"{"Add":7}"#]);
    let endpoint = exported.borrow()[0].clone();
    assert_eq!(endpoint.tag(), Cmd::TAG);
    for text in &sent {
        let mut de = serde_json::Deserializer::from_str(text);
        let msg = endpoint
            .decode(&mut <dyn erased_serde::Deserializer>::erase(&mut de))
            .unwrap();
        msg.tell();
    }
    assert_eq!(counter.ask(Cmd::Sum, Duration::from_secs(5)).wait(), Ok(12));

    // Outside a codec a ref refuses to serialize.
    let err = serde_json::to_string(&Hand(counter.clone())).unwrap_err();
    assert!(err.to_string().contains("transport"), "{err}");
    system.shutdown();
    system.await_termination().unwrap();
}

#[test]
fn when_stopped_calls_back_once_the_actor_has_stopped() {
    let system = ActorSystem::builder().threads(1).build().unwrap();
    let counter = system.spawn(Props::new(|| Counter(0))).unwrap();
    let (tx, gone) = std::sync::mpsc::channel();
    assert!(when_stopped(
        &system,
        &counter,
        Box::new(move || tx.send(()).unwrap())
    ));
    assert!(gone.try_recv().is_err());
    system.stop(&counter);
    gone.recv_timeout(Duration::from_secs(5)).unwrap();
    system.shutdown();
    system.await_termination().unwrap();
}

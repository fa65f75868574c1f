//! `ReplyTo` through a transport's codec (feature `serde`): a message with
//! a reply handle is written as JSON on the asking side, read back on the
//! answering side, and the answer travels back through the codec to the
//! original ask, the way a transport between processes does it. Outside a
//! codec a handle refuses to serialize. A test binary of its own: it needs
//! the feature, and `serde_json` as the stand-in wire format.
#![cfg(feature = "serde")]

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::transport::{erased_serde, with_codec, Codec, ExportedReply, ImportedReply};
use troupe::{Actor, ActorId, ActorSystem, AskError, Context, Props, ReplyTo};

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

/// The answering side's codec: each handle it reads answers into
/// `answers` (id, JSON of the answer, or the error).
struct Importer {
    system: ActorSystem,
    target: ActorId,
    answers: Arc<Mutex<Vec<(u64, Result<String, AskError>)>>>,
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

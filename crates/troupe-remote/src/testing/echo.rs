//! The echo protocol: the actor the remote tests and the example node
//! process publish, and its message type. Besides echoing, it forwards to
//! refs it is sent, hands out its own ref, watches refs on request and
//! stops on request: enough to test refs inside messages and death watch
//! from either side of a process boundary.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorId, ActorRef, Context, ReplyTo, Signal};

use crate::RemoteMessage;

/// An echo actor's ref, as a value an answer can carry.
#[derive(Debug, Serialize, Deserialize)]
pub struct EchoRef(#[serde(with = "crate::actor_ref")] pub ActorRef<EchoMsg>);

/// What the echo actor takes.
#[derive(Debug, Serialize, Deserialize)]
pub enum EchoMsg {
    /// Remember `text` (a one-way tell).
    Say(String),
    /// Answer with `text`.
    Echo(String, #[serde(with = "crate::reply_to")] ReplyTo<String>),
    /// Answer with everything said so far, in arrival order.
    History(#[serde(with = "crate::reply_to")] ReplyTo<Vec<String>>),
    /// Drop the reply handle without answering.
    Drop(#[serde(with = "crate::reply_to")] ReplyTo<String>),
    /// Keep the reply handle and never answer.
    Keep(#[serde(with = "crate::reply_to")] ReplyTo<String>),
    /// Tell `Say(text)` to `to`.
    Forward(
        String,
        #[serde(with = "crate::actor_ref")] ActorRef<EchoMsg>,
    ),
    /// Answer with this actor's own ref.
    Me(#[serde(with = "crate::reply_to")] ReplyTo<EchoRef>),
    /// Watch `watched`; when it terminates, tell `Say("terminated")` to
    /// `report`.
    Watch(
        #[serde(with = "crate::actor_ref")] ActorRef<EchoMsg>,
        #[serde(with = "crate::actor_ref")] ActorRef<EchoMsg>,
    ),
    /// Stop.
    Stop,
}

impl RemoteMessage for EchoMsg {
    const TAG: &'static str = "troupe.testing.echo.v1";
}

/// The echo actor.
#[derive(Default)]
pub struct Echo {
    said: Vec<String>,
    kept: Vec<ReplyTo<String>>,
    /// Watched actor → where to report its end.
    reports: HashMap<ActorId, ActorRef<EchoMsg>>,
}

impl Actor for Echo {
    type Msg = EchoMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: EchoMsg) {
        match msg {
            EchoMsg::Say(text) => self.said.push(text),
            EchoMsg::Echo(text, reply) => {
                reply.reply(text);
            }
            EchoMsg::History(reply) => {
                reply.reply(self.said.clone());
            }
            EchoMsg::Drop(reply) => drop(reply),
            EchoMsg::Keep(reply) => self.kept.push(reply),
            EchoMsg::Forward(text, to) => to.tell(EchoMsg::Say(text)),
            EchoMsg::Me(reply) => {
                reply.reply(EchoRef(ctx.myself()));
            }
            EchoMsg::Watch(watched, report) => {
                ctx.watch(&watched);
                self.reports.insert(watched.id(), report);
            }
            EchoMsg::Stop => ctx.stop(),
        }
    }

    fn signal(&mut self, _ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(id, _) = signal {
            if let Some(report) = self.reports.remove(&id) {
                report.tell(EchoMsg::Say("terminated".into()));
            }
        }
    }
}

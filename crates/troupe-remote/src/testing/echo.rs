//! The echo protocol: the actor the remote tests and the example node
//! process publish, and its message type.

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};

use crate::RemoteMessage;

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
}

impl RemoteMessage for EchoMsg {
    const TAG: &'static str = "troupe.testing.echo.v1";
}

/// The echo actor.
#[derive(Default)]
pub struct Echo {
    said: Vec<String>,
    kept: Vec<ReplyTo<String>>,
}

impl Actor for Echo {
    type Msg = EchoMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: EchoMsg) {
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
        }
    }
}

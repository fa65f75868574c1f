//! The trading system on ractor: every client, receiver and engine an
//! `Actor` (a message enum, its state built in `pre_start`) spawned with
//! `Actor::spawn`, every send a `cast!`, the counts and summaries read
//! with `call!` and an `RpcReplyPort`. ractor's mailboxes are unbounded.

use std::sync::Arc;
use std::time::Instant;

use ::ractor::{call, cast, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::task::JoinHandle;
use trading_engine::NewOrder;

use super::shared::{
    self, engine_of, ClientBook, ClientReport, Next, Summary, Token, ENGINES, RECEIVERS,
};
use super::{wait_for_clients, Run, Runs, Spec, Variant};
use crate::harness::{tokio_runtime, Latch};

type ClientRef = ActorRef<ClientMsg>;

/// How an order is answered.
enum Answer {
    /// request-reply: the primary tells this client.
    Reply(ClientRef),
    /// one-way: both engines complete the token.
    Token(Arc<Token<ClientRef>>),
}

/// How a standby acknowledges a replicated order.
enum Ack {
    /// request-reply: tell the primary that its order `seq` is done here.
    Primary(ActorRef<EngineMsg>, u64),
    /// one-way: complete the token.
    Token(Arc<Token<ClientRef>>),
}

enum EngineMsg {
    /// From a receiver to a primary.
    Place(NewOrder, Answer),
    /// From a primary to its standby.
    Replicate(NewOrder, Ack),
    /// From a standby to its primary: order `seq` is done there.
    Acked(u64),
    /// The summary and the refused sends.
    Summary(RpcReplyPort<(Summary, u64)>),
}

struct Engine;

struct EngineState {
    core: shared::Engine<ClientRef>,
    standby: Option<ActorRef<EngineMsg>>,
    refused: u64,
}

impl EngineState {
    fn answer(&mut self, client: &ClientRef, id: u64) {
        if cast!(client, ClientMsg::Done(id)).is_err() {
            self.refused += 1;
        }
    }

    fn complete(&mut self, token: &Token<ClientRef>) {
        if let Some(id) = token.complete() {
            self.answer(&token.client, id);
        }
    }
}

impl Actor for Engine {
    type Msg = EngineMsg;
    type State = EngineState;
    /// The standby (on a primary), and whether to reorder (the fault).
    type Arguments = (Option<ActorRef<EngineMsg>>, bool);

    async fn pre_start(
        &self,
        _: ActorRef<EngineMsg>,
        (standby, reorder): Self::Arguments,
    ) -> Result<EngineState, ActorProcessingErr> {
        Ok(EngineState {
            core: shared::Engine::new(reorder),
            standby,
            refused: 0,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<EngineMsg>,
        msg: EngineMsg,
        s: &mut EngineState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            EngineMsg::Place(order, answer) => {
                s.core.process(&order);
                let ack = match answer {
                    Answer::Token(token) => {
                        s.complete(&token);
                        Ack::Token(token)
                    }
                    Answer::Reply(client) => Ack::Primary(myself, s.core.hold(client, order.id)),
                };
                let standby = s.standby.as_ref().expect("a primary has a standby");
                if cast!(standby, EngineMsg::Replicate(order, ack)).is_err() {
                    s.refused += 1;
                }
            }
            EngineMsg::Replicate(order, ack) => {
                s.core.replicate(&order);
                match ack {
                    Ack::Token(token) => s.complete(&token),
                    Ack::Primary(primary, seq) => {
                        if cast!(primary, EngineMsg::Acked(seq)).is_err() {
                            s.refused += 1;
                        }
                    }
                }
            }
            EngineMsg::Acked(seq) => {
                if let Some((client, id)) = s.core.acked(seq) {
                    s.answer(&client, id);
                }
            }
            EngineMsg::Summary(reply) => reply.send((s.core.summary(), s.refused))?,
        }
        Ok(())
    }
}

enum ReceiverMsg {
    Place(NewOrder, Answer),
    Refused(RpcReplyPort<u64>),
}

struct Receiver;

impl Actor for Receiver {
    type Msg = ReceiverMsg;
    /// The primaries, and the refused sends.
    type State = (Arc<[ActorRef<EngineMsg>]>, u64);
    type Arguments = Arc<[ActorRef<EngineMsg>]>;

    async fn pre_start(
        &self,
        _: ActorRef<ReceiverMsg>,
        primaries: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok((primaries, 0))
    }

    async fn handle(
        &self,
        _: ActorRef<ReceiverMsg>,
        msg: ReceiverMsg,
        (primaries, refused): &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ReceiverMsg::Place(order, answer) => {
                let primary = &primaries[engine_of(order.book)];
                if cast!(primary, EngineMsg::Place(order, answer)).is_err() {
                    *refused += 1;
                }
            }
            ReceiverMsg::Refused(reply) => reply.send(*refused)?,
        }
        Ok(())
    }
}

enum ClientMsg {
    Start,
    /// Order `id` is done.
    Done(u64),
    Answered(RpcReplyPort<u64>),
    /// The report and the refused sends.
    Report(RpcReplyPort<(ClientReport, u64)>),
}

struct Client;

struct ClientState {
    book: ClientBook,
    receiver: ActorRef<ReceiverMsg>,
    variant: Variant,
    token: Option<Arc<Token<ClientRef>>>,
    done: Arc<Latch>,
    refused: u64,
}

impl ClientState {
    fn send(&mut self, order: NewOrder, me: &ClientRef) {
        let answer = match self.variant {
            Variant::RequestReply => Answer::Reply(me.clone()),
            Variant::OneWay => {
                let token = self
                    .token
                    .get_or_insert_with(|| Arc::new(Token::new(me.clone())));
                token.arm(order.id);
                Answer::Token(token.clone())
            }
        };
        if cast!(self.receiver, ReceiverMsg::Place(order, answer)).is_err() {
            self.refused += 1;
        }
    }
}

impl Actor for Client {
    type Msg = ClientMsg;
    type State = ClientState;
    type Arguments = ClientState;

    async fn pre_start(
        &self,
        _: ClientRef,
        state: ClientState,
    ) -> Result<ClientState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ClientRef,
        msg: ClientMsg,
        s: &mut ClientState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ClientMsg::Start => {
                let order = s.book.start();
                s.send(order, &myself);
            }
            ClientMsg::Done(id) => match s.book.answered(id) {
                Next::Send(order) => s.send(order, &myself),
                Next::Finished => s.done.count_down(),
                Next::Ignore => {}
            },
            ClientMsg::Answered(reply) => reply.send(s.book.answered_count() as u64)?,
            ClientMsg::Report(reply) => reply.send((s.book.report(), s.refused))?,
        }
        Ok(())
    }
}

/// Runs on a tokio runtime.
pub struct Runner {
    rt: tokio::runtime::Runtime,
}

impl Runner {
    /// A runner on `threads` threads.
    pub fn new(threads: usize) -> Result<Runner, String> {
        Ok(Runner {
            rt: tokio_runtime(threads)?,
        })
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn run(spec: Spec) -> Result<Run, String> {
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    let mut primaries = Vec::with_capacity(ENGINES);
    let mut standbys = Vec::with_capacity(ENGINES);
    for e in 0..ENGINES {
        let (standby, h) = Actor::spawn(None, Engine, (None, spec.reorders(e)))
            .await
            .map_err(err)?;
        handles.push(h);
        let (primary, h) = Actor::spawn(None, Engine, (Some(standby.clone()), false))
            .await
            .map_err(err)?;
        handles.push(h);
        primaries.push(primary);
        standbys.push(standby);
    }
    let routes: Arc<[ActorRef<EngineMsg>]> = primaries.clone().into();
    let mut receivers = Vec::with_capacity(RECEIVERS);
    for _ in 0..RECEIVERS {
        let (r, h) = Actor::spawn(None, Receiver, routes.clone())
            .await
            .map_err(err)?;
        handles.push(h);
        receivers.push(r);
    }
    let done = Arc::new(Latch::new(spec.clients));
    let mut clients = Vec::with_capacity(spec.clients);
    for i in 0..spec.clients {
        let state = ClientState {
            book: ClientBook::new(i, spec.per_client),
            receiver: receivers[i % RECEIVERS].clone(),
            variant: spec.variant,
            token: None,
            done: done.clone(),
            refused: 0,
        };
        let (c, h) = Actor::spawn(None, Client, state).await.map_err(err)?;
        handles.push(h);
        clients.push(c);
    }
    let start = Instant::now();
    for c in &clients {
        cast!(c, ClientMsg::Start).map_err(err)?;
    }
    wait_for_clients(&done, spec.stall, spec.orders(), || async {
        let mut answered = 0;
        for c in &clients {
            answered += call!(c, ClientMsg::Answered).map_err(err)?;
        }
        Ok(answered)
    })
    .await?;
    let elapsed_ns = start.elapsed().as_nanos() as f64;
    let mut refused = 0;
    let mut reports = Vec::with_capacity(clients.len());
    for c in &clients {
        let (report, r) = call!(c, ClientMsg::Report).map_err(err)?;
        reports.push(report);
        refused += r;
    }
    for r in &receivers {
        refused += call!(r, ReceiverMsg::Refused).map_err(err)?;
    }
    let mut engines = Vec::with_capacity(ENGINES);
    for (p, s) in primaries.iter().zip(&standbys) {
        let (primary, rp) = call!(p, EngineMsg::Summary).map_err(err)?;
        let (standby, rs) = call!(s, EngineMsg::Summary).map_err(err)?;
        refused += rp + rs;
        engines.push((primary, standby));
    }
    for c in &clients {
        c.stop(None);
    }
    for r in &receivers {
        r.stop(None);
    }
    for e in primaries.iter().chain(&standbys) {
        e.stop(None);
    }
    for h in handles {
        h.await.map_err(err)?;
    }
    Ok(Run {
        elapsed_ns,
        clients: reports,
        engines,
        refused,
    })
}

impl Runs for Runner {
    fn run(&mut self, spec: &Spec) -> Result<Run, String> {
        self.rt.block_on(run(*spec))
    }
}

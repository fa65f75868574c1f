//! The trading system on actix: every client, receiver and engine an
//! `Actor` with one `Handler<M>` per message, started on the System's
//! Arbiters with `start_in_arbiter`, every send a `do_send`, the counts
//! and summaries read with `send(..).await`. Placement, fixed (actix does
//! not move actors between Arbiters): engine pair `e`'s primary on Arbiter
//! `e mod N` and its standby on the next one, so that on two Arbiters
//! every replica crosses threads as half of troupe's may; receiver and
//! client `i` on Arbiter `i mod N`.

use std::sync::Arc;
use std::time::Instant;

use ::actix::prelude::*;
use trading_engine::NewOrder;

use super::shared::{
    self, engine_of, ClientBook, ClientReport, Next, Summary, Token, ENGINES, RECEIVERS,
};
use super::{wait_for_clients, Run, Runs, Spec, Variant};
use crate::actix_system::Arbiters;
use crate::harness::Latch;

/// How an order is answered.
enum Answer {
    /// request-reply: the primary tells this client.
    Reply(Addr<Client>),
    /// one-way: both engines complete the token.
    Token(Arc<Token<Addr<Client>>>),
}

/// How a standby acknowledges a replicated order.
enum Ack {
    /// request-reply: tell the primary that its order `seq` is done here.
    Primary(Addr<Engine>, u64),
    /// one-way: complete the token.
    Token(Arc<Token<Addr<Client>>>),
}

struct Engine {
    core: shared::Engine<Addr<Client>>,
    standby: Option<Addr<Engine>>,
}

impl Actor for Engine {
    type Context = Context<Self>;
}

impl Engine {
    fn complete(token: &Token<Addr<Client>>) {
        if let Some(id) = token.complete() {
            token.client.do_send(Done(id));
        }
    }
}

/// From a receiver to a primary.
#[derive(Message)]
#[rtype(result = "()")]
struct Place {
    order: NewOrder,
    answer: Answer,
}

impl Handler<Place> for Engine {
    type Result = ();

    fn handle(&mut self, Place { order, answer }: Place, ctx: &mut Context<Self>) {
        self.core.process(&order);
        let ack = match answer {
            Answer::Token(token) => {
                Engine::complete(&token);
                Ack::Token(token)
            }
            Answer::Reply(client) => Ack::Primary(ctx.address(), self.core.hold(client, order.id)),
        };
        let standby = self.standby.as_ref().expect("a primary has a standby");
        standby.do_send(Replicate { order, ack });
    }
}

/// From a primary to its standby.
#[derive(Message)]
#[rtype(result = "()")]
struct Replicate {
    order: NewOrder,
    ack: Ack,
}

impl Handler<Replicate> for Engine {
    type Result = ();

    fn handle(&mut self, Replicate { order, ack }: Replicate, _: &mut Context<Self>) {
        self.core.replicate(&order);
        match ack {
            Ack::Token(token) => Engine::complete(&token),
            Ack::Primary(primary, seq) => primary.do_send(Acked(seq)),
        }
    }
}

/// From a standby to its primary: order `seq` is done there.
#[derive(Message)]
#[rtype(result = "()")]
struct Acked(u64);

impl Handler<Acked> for Engine {
    type Result = ();

    fn handle(&mut self, Acked(seq): Acked, _: &mut Context<Self>) {
        if let Some((client, id)) = self.core.acked(seq) {
            client.do_send(Done(id));
        }
    }
}

#[derive(Message)]
#[rtype(result = "Summary")]
struct AskSummary;

impl Handler<AskSummary> for Engine {
    type Result = MessageResult<AskSummary>;

    fn handle(&mut self, _: AskSummary, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.core.summary())
    }
}

struct Receiver {
    primaries: Arc<[Addr<Engine>]>,
}

impl Actor for Receiver {
    type Context = Context<Self>;
}

impl Handler<Place> for Receiver {
    type Result = ();

    fn handle(&mut self, place: Place, _: &mut Context<Self>) {
        self.primaries[engine_of(place.order.book)].do_send(place);
    }
}

struct Client {
    book: ClientBook,
    receiver: Addr<Receiver>,
    variant: Variant,
    token: Option<Arc<Token<Addr<Client>>>>,
    done: Arc<Latch>,
}

impl Actor for Client {
    type Context = Context<Self>;
}

impl Client {
    fn send(&mut self, order: NewOrder, ctx: &Context<Self>) {
        let answer = match self.variant {
            Variant::RequestReply => Answer::Reply(ctx.address()),
            Variant::OneWay => {
                let token = self
                    .token
                    .get_or_insert_with(|| Arc::new(Token::new(ctx.address())));
                token.arm(order.id);
                Answer::Token(token.clone())
            }
        };
        self.receiver.do_send(Place { order, answer });
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

impl Handler<Start> for Client {
    type Result = ();

    fn handle(&mut self, _: Start, ctx: &mut Context<Self>) {
        let order = self.book.start();
        self.send(order, ctx);
    }
}

/// Order `id` is done.
#[derive(Message)]
#[rtype(result = "()")]
struct Done(u64);

impl Handler<Done> for Client {
    type Result = ();

    fn handle(&mut self, Done(id): Done, ctx: &mut Context<Self>) {
        match self.book.answered(id) {
            Next::Send(order) => self.send(order, ctx),
            Next::Finished => self.done.count_down(),
            Next::Ignore => {}
        }
    }
}

#[derive(Message)]
#[rtype(result = "u64")]
struct AskAnswered;

impl Handler<AskAnswered> for Client {
    type Result = u64;

    fn handle(&mut self, _: AskAnswered, _: &mut Context<Self>) -> u64 {
        self.book.answered_count() as u64
    }
}

#[derive(Message)]
#[rtype(result = "ClientReport")]
struct AskReport;

impl Handler<AskReport> for Client {
    type Result = MessageResult<AskReport>;

    fn handle(&mut self, _: AskReport, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.book.report())
    }
}

/// Stops any of the actors.
#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

/// `Handler<Stop>` for each actor type: it stops.
macro_rules! stops {
    ($($actor:ty),*) => {$(
        impl Handler<Stop> for $actor {
            type Result = ();

            fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
                ctx.stop();
            }
        }
    )*};
}

stops!(Engine, Receiver, Client);

/// Runs on a System's Arbiters.
pub struct Runner {
    arbiters: Arbiters,
}

impl Runner {
    /// A runner on `threads` Arbiters.
    pub fn new(threads: usize) -> Runner {
        Runner {
            arbiters: Arbiters::new(threads),
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl Runs for Runner {
    fn run(&mut self, spec: &Spec) -> Result<Run, String> {
        let on: Vec<ArbiterHandle> = (0..self.arbiters.len())
            .map(|i| self.arbiters.handle(i))
            .collect();
        let spec = *spec;
        self.arbiters.block_on(async move {
            let at = |i: usize| &on[i % on.len()];
            let mut primaries = Vec::with_capacity(ENGINES);
            let mut standbys = Vec::with_capacity(ENGINES);
            for e in 0..ENGINES {
                let reorder = spec.reorders(e);
                let standby = Engine::start_in_arbiter(at(e + 1), move |_| Engine {
                    core: shared::Engine::new(reorder),
                    standby: None,
                });
                let to = standby.clone();
                primaries.push(Engine::start_in_arbiter(at(e), move |_| Engine {
                    core: shared::Engine::new(false),
                    standby: Some(to),
                }));
                standbys.push(standby);
            }
            let routes: Arc<[Addr<Engine>]> = primaries.clone().into();
            let receivers: Vec<Addr<Receiver>> = (0..RECEIVERS)
                .map(|r| {
                    let primaries = routes.clone();
                    Receiver::start_in_arbiter(at(r), move |_| Receiver { primaries })
                })
                .collect();
            let done = Arc::new(Latch::new(spec.clients));
            let clients: Vec<Addr<Client>> = (0..spec.clients)
                .map(|i| {
                    let receiver = receivers[i % RECEIVERS].clone();
                    let done = done.clone();
                    Client::start_in_arbiter(at(i), move |_| Client {
                        book: ClientBook::new(i, spec.per_client),
                        receiver,
                        variant: spec.variant,
                        token: None,
                        done,
                    })
                })
                .collect();
            let start = Instant::now();
            for c in &clients {
                c.do_send(Start);
            }
            wait_for_clients(&done, spec.stall, spec.orders(), || async {
                let mut answered = 0;
                for c in &clients {
                    answered += c.send(AskAnswered).await.map_err(err)?;
                }
                Ok(answered)
            })
            .await?;
            let elapsed_ns = start.elapsed().as_nanos() as f64;
            let mut reports = Vec::with_capacity(clients.len());
            for c in &clients {
                reports.push(c.send(AskReport).await.map_err(err)?);
            }
            let mut engines = Vec::with_capacity(ENGINES);
            for (p, s) in primaries.iter().zip(&standbys) {
                let primary = p.send(AskSummary).await.map_err(err)?;
                let standby = s.send(AskSummary).await.map_err(err)?;
                engines.push((primary, standby));
            }
            for c in &clients {
                c.do_send(Stop);
            }
            for r in &receivers {
                r.do_send(Stop);
            }
            for e in primaries.iter().chain(&standbys) {
                e.do_send(Stop);
            }
            // do_send has no refusal to count: it drops a message only for
            // an actor that has stopped, whose orders then go unanswered
            // (a stall, which the run reports).
            Ok(Run {
                elapsed_ns,
                clients: reports,
                engines,
                refused: 0,
            })
        })
    }
}

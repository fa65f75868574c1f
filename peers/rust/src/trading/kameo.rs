//! The trading system on kameo: every client, receiver and engine an actor
//! spawned with `Spawn::spawn` (kameo's default bounded mailbox of 64),
//! one `Message<T>` impl per message, every send a `tell(..).await` from
//! the handler, the counts and summaries read with `ask`. A client has
//! one order in flight, and an order is one message at a time (order,
//! replica, acknowledgement or answer), so with at most 64 clients no
//! mailbox can fill and a `tell` never waits for room; more clients are
//! refused, since a primary and its standby telling each other into full
//! mailboxes would wait for each other forever.

use std::sync::Arc;
use std::time::Instant;

use ::kameo::prelude::*;
use trading_engine::NewOrder;

use super::shared::{
    self, engine_of, ClientBook, ClientReport, Next, Summary, Token, ENGINES, RECEIVERS,
};
use super::{wait_for_clients, Run, Runs, Spec, Variant};
use crate::harness::{tokio_runtime, Latch};

/// How an order is answered.
enum Answer {
    /// request-reply: the primary tells this client.
    Reply(ActorRef<Client>),
    /// one-way: both engines complete the token.
    Token(Arc<Token<ActorRef<Client>>>),
}

/// How a standby acknowledges a replicated order.
enum Ack {
    /// request-reply: tell the primary that its order `seq` is done here.
    Primary(ActorRef<Engine>, u64),
    /// one-way: complete the token.
    Token(Arc<Token<ActorRef<Client>>>),
}

struct Engine {
    core: shared::Engine<ActorRef<Client>>,
    /// The standby, on a primary.
    standby: Option<ActorRef<Engine>>,
    refused: u64,
}

impl Actor for Engine {
    type Args = Self;
    type Error = ::kameo::error::Infallible;

    async fn on_start(state: Self, _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(state)
    }
}

impl Engine {
    /// Tells the client its order `id` is done.
    async fn answer(&mut self, client: &ActorRef<Client>, id: u64) {
        if client.tell(Done(id)).await.is_err() {
            self.refused += 1;
        }
    }

    async fn complete(&mut self, token: &Token<ActorRef<Client>>) {
        if let Some(id) = token.complete() {
            self.answer(&token.client, id).await;
        }
    }
}

/// From a receiver to a primary.
struct Place {
    order: NewOrder,
    answer: Answer,
}

impl Message<Place> for Engine {
    type Reply = ();

    async fn handle(&mut self, Place { order, answer }: Place, ctx: &mut Context<Self, ()>) {
        self.core.process(&order);
        let ack = match answer {
            Answer::Token(token) => {
                self.complete(&token).await;
                Ack::Token(token)
            }
            Answer::Reply(client) => {
                Ack::Primary(ctx.actor_ref().clone(), self.core.hold(client, order.id))
            }
        };
        let standby = self.standby.as_ref().expect("a primary has a standby");
        if standby.tell(Replicate { order, ack }).await.is_err() {
            self.refused += 1;
        }
    }
}

/// From a primary to its standby.
struct Replicate {
    order: NewOrder,
    ack: Ack,
}

impl Message<Replicate> for Engine {
    type Reply = ();

    async fn handle(&mut self, Replicate { order, ack }: Replicate, _: &mut Context<Self, ()>) {
        self.core.replicate(&order);
        match ack {
            Ack::Token(token) => self.complete(&token).await,
            Ack::Primary(primary, seq) => {
                if primary.tell(Acked(seq)).await.is_err() {
                    self.refused += 1;
                }
            }
        }
    }
}

/// From a standby to its primary: order `seq` is done there.
struct Acked(u64);

impl Message<Acked> for Engine {
    type Reply = ();

    async fn handle(&mut self, Acked(seq): Acked, _: &mut Context<Self, ()>) {
        if let Some((client, id)) = self.core.acked(seq) {
            self.answer(&client, id).await;
        }
    }
}

/// The engine's summary and its refused sends.
#[derive(Reply)]
struct Summarized(Summary, u64);

struct AskSummary;

impl Message<AskSummary> for Engine {
    type Reply = Summarized;

    async fn handle(&mut self, _: AskSummary, _: &mut Context<Self, Summarized>) -> Summarized {
        Summarized(self.core.summary(), self.refused)
    }
}

#[derive(Actor)]
struct Receiver {
    primaries: Arc<[ActorRef<Engine>]>,
    refused: u64,
}

impl Message<Place> for Receiver {
    type Reply = ();

    async fn handle(&mut self, place: Place, _: &mut Context<Self, ()>) {
        let primary = &self.primaries[engine_of(place.order.book)];
        if primary.tell(place).await.is_err() {
            self.refused += 1;
        }
    }
}

struct AskRefused;

impl Message<AskRefused> for Receiver {
    type Reply = u64;

    async fn handle(&mut self, _: AskRefused, _: &mut Context<Self, u64>) -> u64 {
        self.refused
    }
}

#[derive(Actor)]
struct Client {
    book: ClientBook,
    receiver: ActorRef<Receiver>,
    variant: Variant,
    /// one-way: the token, made on the first order (it names this actor).
    token: Option<Arc<Token<ActorRef<Client>>>>,
    done: Arc<Latch>,
    refused: u64,
}

impl Client {
    async fn send(&mut self, order: NewOrder, me: &ActorRef<Client>) {
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
        if self.receiver.tell(Place { order, answer }).await.is_err() {
            self.refused += 1;
        }
    }
}

struct Start;

impl Message<Start> for Client {
    type Reply = ();

    async fn handle(&mut self, _: Start, ctx: &mut Context<Self, ()>) {
        let order = self.book.start();
        self.send(order, ctx.actor_ref()).await;
    }
}

/// Order `id` is done.
struct Done(u64);

impl Message<Done> for Client {
    type Reply = ();

    async fn handle(&mut self, Done(id): Done, ctx: &mut Context<Self, ()>) {
        match self.book.answered(id) {
            Next::Send(order) => self.send(order, ctx.actor_ref()).await,
            Next::Finished => self.done.count_down(),
            Next::Ignore => {}
        }
    }
}

struct AskAnswered;

impl Message<AskAnswered> for Client {
    type Reply = u64;

    async fn handle(&mut self, _: AskAnswered, _: &mut Context<Self, u64>) -> u64 {
        self.book.answered_count() as u64
    }
}

/// A client's report and its refused sends.
#[derive(Reply)]
struct Reported(ClientReport, u64);

struct AskReport;

impl Message<AskReport> for Client {
    type Reply = Reported;

    async fn handle(&mut self, _: AskReport, _: &mut Context<Self, Reported>) -> Reported {
        Reported(self.book.report(), self.refused)
    }
}

/// Runs on a tokio runtime.
pub struct Runner {
    rt: tokio::runtime::Runtime,
}

impl Runner {
    /// A runner on `threads` threads for `clients` clients (at most 64).
    pub fn new(threads: usize, clients: usize) -> Result<Runner, String> {
        if clients > 64 {
            return Err(format!(
                "--clients {clients}: at most 64 on kameo, whose default mailboxes hold 64 \
                 messages (a primary and its standby telling each other into full mailboxes \
                 would wait for each other forever)"
            ));
        }
        Ok(Runner {
            rt: tokio_runtime(threads)?,
        })
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn run(spec: Spec) -> Result<Run, String> {
    let mut primaries = Vec::with_capacity(ENGINES);
    let mut standbys = Vec::with_capacity(ENGINES);
    for e in 0..ENGINES {
        let standby = Engine::spawn(Engine {
            core: shared::Engine::new(spec.reorders(e)),
            standby: None,
            refused: 0,
        });
        primaries.push(Engine::spawn(Engine {
            core: shared::Engine::new(false),
            standby: Some(standby.clone()),
            refused: 0,
        }));
        standbys.push(standby);
    }
    let routes: Arc<[ActorRef<Engine>]> = primaries.clone().into();
    let receivers: Vec<ActorRef<Receiver>> = (0..RECEIVERS)
        .map(|_| {
            Receiver::spawn(Receiver {
                primaries: routes.clone(),
                refused: 0,
            })
        })
        .collect();
    let done = Arc::new(Latch::new(spec.clients));
    let clients: Vec<ActorRef<Client>> = (0..spec.clients)
        .map(|i| {
            Client::spawn(Client {
                book: ClientBook::new(i, spec.per_client),
                receiver: receivers[i % RECEIVERS].clone(),
                variant: spec.variant,
                token: None,
                done: done.clone(),
                refused: 0,
            })
        })
        .collect();
    let start = Instant::now();
    for c in &clients {
        c.tell(Start).await.map_err(err)?;
    }
    wait_for_clients(&done, spec.stall, spec.orders(), || async {
        let mut answered = 0;
        for c in &clients {
            answered += c.ask(AskAnswered).await.map_err(err)?;
        }
        Ok(answered)
    })
    .await?;
    let elapsed_ns = start.elapsed().as_nanos() as f64;
    let mut refused = 0;
    let mut reports = Vec::with_capacity(clients.len());
    for c in &clients {
        let Reported(report, r) = c.ask(AskReport).await.map_err(err)?;
        reports.push(report);
        refused += r;
    }
    for r in &receivers {
        refused += r.ask(AskRefused).await.map_err(err)?;
    }
    let mut engines = Vec::with_capacity(ENGINES);
    for (p, s) in primaries.iter().zip(&standbys) {
        let Summarized(primary, rp) = p.ask(AskSummary).await.map_err(err)?;
        let Summarized(standby, rs) = s.ask(AskSummary).await.map_err(err)?;
        refused += rp + rs;
        engines.push((primary, standby));
    }
    for c in &clients {
        c.stop_gracefully().await.map_err(err)?;
    }
    for r in &receivers {
        r.stop_gracefully().await.map_err(err)?;
    }
    for e in primaries.iter().chain(&standbys) {
        e.stop_gracefully().await.map_err(err)?;
    }
    for c in &clients {
        c.wait_for_shutdown().await;
    }
    for r in &receivers {
        r.wait_for_shutdown().await;
    }
    for e in primaries.iter().chain(&standbys) {
        e.wait_for_shutdown().await;
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

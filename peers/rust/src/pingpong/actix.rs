//! Ping-pong on actix: each player an actor started with
//! `start_in_arbiter` on one of the run's Arbiters (an Arbiter is one
//! thread with its own event loop), hops sent with `do_send`, the peer set
//! and the counts read with `send(..).await`.
//!
//! Placement on two Arbiters: the one pair's players on different Arbiters
//! (on one Arbiter the second thread would be idle and the row would be the
//! one-thread row again); with many pairs, each pair on one Arbiter, pairs
//! alternating, the way an actix program spreads independent work over its
//! threads without a thread hop per message.

use std::sync::Arc;
use std::time::Instant;

use ::actix::prelude::*;

use super::{Expect, Spec, Tally};
use crate::actix_system::Arbiters;
use crate::harness::{ns_per, Check, Latch};
use crate::steady::{Measured, Steady};

struct Player {
    peer: Option<Addr<Player>>,
    expect: Expect,
    done: Arc<Latch>,
}

impl Actor for Player {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct SetPeer(Addr<Player>);

impl Handler<SetPeer> for Player {
    type Result = ();

    fn handle(&mut self, SetPeer(peer): SetPeer, _: &mut Context<Self>) {
        self.peer = Some(peer);
    }
}

/// Ball `ball` of its pair, with the hops it has left.
#[derive(Message)]
#[rtype(result = "()")]
struct Ball {
    ball: usize,
    left: u64,
}

impl Handler<Ball> for Player {
    type Result = ();

    fn handle(&mut self, Ball { ball, left }: Ball, _: &mut Context<Self>) {
        self.expect.visit(ball, left);
        if left == 0 {
            self.done.count_down();
            return;
        }
        let peer = self.peer.as_ref().expect("the peer is set before the game");
        peer.do_send(Ball {
            ball,
            left: left - 1,
        });
    }
}

#[derive(Message)]
#[rtype(result = "Tally")]
struct AskTally;

impl Handler<AskTally> for Player {
    type Result = MessageResult<AskTally>;

    fn handle(&mut self, _: AskTally, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.expect.tally())
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

impl Handler<Stop> for Player {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// One game: start the players (outside the clock), serve every ball, wait
/// for the last, then ask every player for its counts and stop it.
async fn play(spec: Spec, arbiters: &Arbiters) -> Result<(f64, Tally), String> {
    let done = Arc::new(Latch::new(spec.pairs * spec.balls));
    let n = arbiters.len();
    let mut pairs = Vec::with_capacity(spec.pairs);
    for p in 0..spec.pairs {
        let (a, b) = if spec.pairs == 1 {
            (0, 1 % n)
        } else {
            (p % n, p % n)
        };
        let start = |arbiter: usize, first: u64| {
            let (done, balls) = (done.clone(), spec.balls);
            Player::start_in_arbiter(&arbiters.handle(arbiter), move |_| Player {
                peer: None,
                expect: Expect::new(balls, first),
                done,
            })
        };
        let server = start(a, spec.per_ball);
        let other = start(b, spec.per_ball - 1);
        server
            .send(SetPeer(other.clone()))
            .await
            .map_err(|e| e.to_string())?;
        other
            .send(SetPeer(server.clone()))
            .await
            .map_err(|e| e.to_string())?;
        pairs.push((server, other));
    }
    let start = Instant::now();
    for (server, _) in &pairs {
        for ball in 0..spec.balls {
            server.do_send(Ball {
                ball,
                left: spec.per_ball,
            });
        }
    }
    done.wait("the game").await?;
    let ns = ns_per(start.elapsed(), spec.hops());
    let mut total = Tally::default();
    for actor in pairs.iter().flat_map(|(a, b)| [a, b]) {
        let t = actor.send(AskTally).await.map_err(|e| e.to_string())?;
        total.received += t.received;
        total.disorder += t.disorder;
        total.refused += t.refused;
        actor.send(Stop).await.map_err(|e| e.to_string())?;
    }
    Ok((ns, total))
}

/// The protocol's runs on `threads` Arbiters.
pub fn measure(
    threads: usize,
    spec: Spec,
    steady: &Steady,
    what: &str,
    checks: &mut Check,
) -> Result<Measured, String> {
    let arbiters = Arbiters::new(threads);
    steady.measure(what, |_| {
        let (ns, total) = arbiters.block_on(play(spec, &arbiters))?;
        super::check(&spec, total, checks);
        Ok(ns)
    })
}

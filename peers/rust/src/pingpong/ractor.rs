//! Ping-pong on ractor: each player an actor spawned with `Actor::spawn`,
//! its state built in `pre_start`, hops sent with `cast`, the peer set and
//! the counts read with `call!`, stopped with `stop` and its join handle.

use std::sync::Arc;
use std::time::Instant;

use ::ractor::{call, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::{Expect, Spec, Tally};
use crate::harness::{ns_per, tokio_runtime, Check, Latch};
use crate::steady::{Measured, Steady};

struct Player;

struct State {
    peer: Option<ActorRef<Msg>>,
    expect: Expect,
    done: Arc<Latch>,
}

enum Msg {
    SetPeer(ActorRef<Msg>, RpcReplyPort<()>),
    /// Ball `ball` of its pair, with the hops it has left.
    Ball {
        ball: usize,
        left: u64,
    },
    Tally(RpcReplyPort<Tally>),
}

impl Actor for Player {
    type Msg = Msg;
    type State = State;
    type Arguments = State;

    async fn pre_start(&self, _: ActorRef<Msg>, state: State) -> Result<State, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<Msg>,
        msg: Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            Msg::SetPeer(peer, reply) => {
                state.peer = Some(peer);
                reply.send(())?;
            }
            Msg::Ball { ball, left } => {
                state.expect.visit(ball, left);
                if left == 0 {
                    state.done.count_down();
                } else {
                    let peer = state
                        .peer
                        .as_ref()
                        .expect("the peer is set before the game");
                    if peer
                        .cast(Msg::Ball {
                            ball,
                            left: left - 1,
                        })
                        .is_err()
                    {
                        state.expect.refused();
                        state.done.count_down();
                    }
                }
            }
            Msg::Tally(reply) => reply.send(state.expect.tally())?,
        }
        Ok(())
    }
}

/// One game: spawn the players (outside the clock), serve every ball, wait
/// for the last, then ask every player for its counts and stop it.
async fn play(spec: Spec) -> Result<(f64, Tally), String> {
    let done = Arc::new(Latch::new(spec.pairs * spec.balls));
    let state = |first| State {
        peer: None,
        expect: Expect::new(spec.balls, first),
        done: done.clone(),
    };
    let mut pairs = Vec::with_capacity(spec.pairs);
    let mut handles = Vec::with_capacity(2 * spec.pairs);
    for _ in 0..spec.pairs {
        let (server, h1) = Actor::spawn(None, Player, state(spec.per_ball))
            .await
            .map_err(|e| e.to_string())?;
        let (other, h2) = Actor::spawn(None, Player, state(spec.per_ball - 1))
            .await
            .map_err(|e| e.to_string())?;
        call!(server, Msg::SetPeer, other.clone()).map_err(|e| e.to_string())?;
        call!(other, Msg::SetPeer, server.clone()).map_err(|e| e.to_string())?;
        pairs.push((server, other));
        handles.extend([h1, h2]);
    }
    let start = Instant::now();
    for (server, _) in &pairs {
        for ball in 0..spec.balls {
            server
                .cast(Msg::Ball {
                    ball,
                    left: spec.per_ball,
                })
                .map_err(|e| e.to_string())?;
        }
    }
    done.wait("the game").await?;
    let ns = ns_per(start.elapsed(), spec.hops());
    let mut total = Tally::default();
    for actor in pairs.iter().flat_map(|(a, b)| [a, b]) {
        let t = call!(actor, Msg::Tally).map_err(|e| e.to_string())?;
        total.received += t.received;
        total.disorder += t.disorder;
        total.refused += t.refused;
        actor.stop(None);
    }
    for h in handles {
        h.await.map_err(|e| e.to_string())?;
    }
    Ok((ns, total))
}

/// The protocol's runs on a tokio runtime of `threads` threads.
pub fn measure(
    threads: usize,
    spec: Spec,
    steady: &Steady,
    what: &str,
    checks: &mut Check,
) -> Result<Measured, String> {
    let rt = tokio_runtime(threads)?;
    steady.measure(what, |_| {
        let (ns, total) = rt.block_on(play(spec))?;
        super::check(&spec, total, checks);
        Ok(ns)
    })
}

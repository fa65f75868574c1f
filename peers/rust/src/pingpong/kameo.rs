//! Ping-pong on kameo: each player an actor spawned with `Spawn::spawn`
//! (kameo's default bounded mailbox of 64), hops sent with `tell(..).await`
//! from the handler, the peer set and the counts read with `ask`.

use std::sync::Arc;
use std::time::Instant;

use ::kameo::prelude::*;

use super::{Expect, Spec, Tally};
use crate::harness::{ns_per, tokio_runtime, Check, Latch};
use crate::steady::{Measured, Steady};

#[derive(Actor)]
struct Player {
    peer: Option<ActorRef<Player>>,
    expect: Expect,
    done: Arc<Latch>,
}

struct SetPeer(ActorRef<Player>);

impl Message<SetPeer> for Player {
    type Reply = ();

    async fn handle(&mut self, SetPeer(peer): SetPeer, _: &mut Context<Self, ()>) {
        self.peer = Some(peer);
    }
}

/// Ball `ball` of its pair, with the hops it has left.
struct Ball {
    ball: usize,
    left: u64,
}

impl Message<Ball> for Player {
    type Reply = ();

    async fn handle(&mut self, Ball { ball, left }: Ball, _: &mut Context<Self, ()>) {
        self.expect.visit(ball, left);
        if left == 0 {
            self.done.count_down();
            return;
        }
        let peer = self.peer.as_ref().expect("the peer is set before the game");
        if peer
            .tell(Ball {
                ball,
                left: left - 1,
            })
            .await
            .is_err()
        {
            self.expect.refused();
            self.done.count_down();
        }
    }
}

struct AskTally;

impl Message<AskTally> for Player {
    type Reply = (u64, u64, u64);

    async fn handle(&mut self, _: AskTally, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let t = self.expect.tally();
        (t.received, t.disorder, t.refused)
    }
}

/// One game: spawn the players (outside the clock), serve every ball, wait
/// for the last, then ask every player for its counts and stop it.
async fn play(spec: Spec) -> Result<(f64, Tally), String> {
    let done = Arc::new(Latch::new(spec.pairs * spec.balls));
    let player = |first| Player {
        peer: None,
        expect: Expect::new(spec.balls, first),
        done: done.clone(),
    };
    let mut pairs = Vec::with_capacity(spec.pairs);
    for _ in 0..spec.pairs {
        let server = Player::spawn(player(spec.per_ball));
        let other = Player::spawn(player(spec.per_ball - 1));
        server
            .ask(SetPeer(other.clone()))
            .await
            .map_err(|e| e.to_string())?;
        other
            .ask(SetPeer(server.clone()))
            .await
            .map_err(|e| e.to_string())?;
        pairs.push((server, other));
    }
    let start = Instant::now();
    for (server, _) in &pairs {
        for ball in 0..spec.balls {
            server
                .tell(Ball {
                    ball,
                    left: spec.per_ball,
                })
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    done.wait("the game").await?;
    let ns = ns_per(start.elapsed(), spec.hops());
    let mut total = Tally::default();
    for actor in pairs.iter().flat_map(|(a, b)| [a, b]) {
        let (received, disorder, refused) = actor.ask(AskTally).await.map_err(|e| e.to_string())?;
        total.received += received;
        total.disorder += disorder;
        total.refused += refused;
        actor.stop_gracefully().await.map_err(|e| e.to_string())?;
    }
    for actor in pairs.iter().flat_map(|(a, b)| [a, b]) {
        actor.wait_for_shutdown().await;
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

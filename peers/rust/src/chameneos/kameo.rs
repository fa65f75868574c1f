//! Chameneos-redux on kameo: a meeting-place actor that spawns its creature
//! actors in `on_start`, each of which asks for its first meeting in its
//! own `on_start`; every message a `tell(..).await`; a creature
//! reports its tally and stops itself (`Context::stop`) when the place says
//! the game is over, and the place stops itself after the last report. A
//! refused send (`let _ = ...`) cannot go unseen: a lost meeting leaves the
//! game unfinished (a timeout) or its tallies wrong (a failed check).

use std::time::Instant;

use ::kameo::error::Infallible;
use ::kameo::prelude::*;
use tokio::sync::oneshot;

use super::{complement, Games, Tally};
use crate::harness::{tokio_runtime, RUN_DEADLINE};

struct Place {
    remaining: u64,
    creatures: Vec<ActorRef<Creature>>,
    waiting: Option<(u8, usize)>,
    tallies: Vec<Tally>,
    reported: usize,
    done: Option<oneshot::Sender<Vec<Tally>>>,
}

impl Actor for Place {
    type Args = (Vec<u8>, u64, oneshot::Sender<Vec<Tally>>);
    type Error = Infallible;

    async fn on_start(
        (colours, meetings, done): Self::Args,
        place: ActorRef<Self>,
    ) -> Result<Self, Infallible> {
        let creatures = colours
            .iter()
            .enumerate()
            .map(|(id, &colour)| {
                Creature::spawn(Creature {
                    id,
                    colour,
                    place: place.clone(),
                    tally: [0, 0],
                })
            })
            .collect();
        Ok(Place {
            remaining: meetings,
            creatures,
            waiting: None,
            tallies: vec![[0, 0]; colours.len()],
            reported: 0,
            done: Some(done),
        })
    }
}

/// A creature of this colour wants to meet.
struct Meet {
    colour: u8,
    id: usize,
}

impl Message<Meet> for Place {
    type Reply = ();

    async fn handle(&mut self, Meet { colour, id }: Meet, _: &mut Context<Self, ()>) {
        if self.remaining == 0 {
            let _ = self.creatures[id].tell(GameOver).await;
        } else if let Some((other_colour, other)) = self.waiting.take() {
            self.remaining -= 1;
            let _ = self.creatures[other].tell(Met { colour, id }).await;
            let _ = self.creatures[id]
                .tell(Met {
                    colour: other_colour,
                    id: other,
                })
                .await;
        } else {
            self.waiting = Some((colour, id));
        }
    }
}

/// A creature's tally at the end of the game.
struct Report {
    id: usize,
    tally: Tally,
}

impl Message<Report> for Place {
    type Reply = ();

    async fn handle(&mut self, Report { id, tally }: Report, ctx: &mut Context<Self, ()>) {
        self.tallies[id] = tally;
        self.reported += 1;
        if self.reported == self.creatures.len() {
            if let Some(done) = self.done.take() {
                let _ = done.send(std::mem::take(&mut self.tallies));
            }
            ctx.stop();
        }
    }
}

struct Creature {
    id: usize,
    colour: u8,
    place: ActorRef<Place>,
    tally: Tally,
}

impl Actor for Creature {
    type Args = Self;
    type Error = Infallible;

    /// Asks for the first meeting (the place handles it once its own
    /// `on_start` has returned).
    async fn on_start(creature: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        let _ = creature
            .place
            .tell(Meet {
                colour: creature.colour,
                id: creature.id,
            })
            .await;
        Ok(creature)
    }
}

/// The creature met the creature `id` of colour `colour`.
struct Met {
    colour: u8,
    id: usize,
}

impl Message<Met> for Creature {
    type Reply = ();

    async fn handle(&mut self, Met { colour, id }: Met, _: &mut Context<Self, ()>) {
        self.tally[0] += 1;
        if id == self.id {
            self.tally[1] += 1;
        }
        self.colour = complement(self.colour, colour);
        let _ = self
            .place
            .tell(Meet {
                colour: self.colour,
                id: self.id,
            })
            .await;
    }
}

/// The game is over: report and stop.
struct GameOver;

impl Message<GameOver> for Creature {
    type Reply = ();

    async fn handle(&mut self, _: GameOver, ctx: &mut Context<Self, ()>) {
        let _ = self
            .place
            .tell(Report {
                id: self.id,
                tally: self.tally,
            })
            .await;
        ctx.stop();
    }
}

async fn game(colours: &[u8], n: u64) -> Result<(f64, Vec<Tally>), String> {
    let (done, tallies) = oneshot::channel();
    let start = Instant::now();
    let place = Place::spawn((colours.to_vec(), n, done));
    let tallies = tokio::time::timeout(RUN_DEADLINE, tallies)
        .await
        .map_err(|_| "the game did not finish".to_string())?
        .map_err(|_| "the meeting place stopped without its tallies".to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    place.wait_for_shutdown().await;
    Ok((seconds, tallies))
}

/// Games on a tokio runtime.
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

impl Games for Runner {
    fn game(&mut self, colours: &[u8], n: u64) -> Result<(f64, Vec<Tally>), String> {
        self.rt.block_on(game(colours, n))
    }
}

//! Chameneos-redux on actix: a meeting-place actor that starts its creature
//! actors in its `started` hook, each of which asks for its first meeting in
//! its own `started`; every message a `do_send`; a creature reports its
//! tally and stops itself (`ctx.stop()`) when the place says the game is
//! over, and the place stops itself after the last report. On two
//! Arbiters the place runs on the first and the creatures alternate
//! between both (every meeting crosses threads, as on troupe's and Pekko's
//! two-thread pools, where nothing keeps a creature on its place's thread).

use std::time::Instant;

use ::actix::prelude::*;
use tokio::sync::oneshot;

use super::{complement, Games, Tally};
use crate::actix_system::Arbiters;
use crate::harness::RUN_DEADLINE;

struct Place {
    colours: Vec<u8>,
    arbiters: Vec<ArbiterHandle>,
    remaining: u64,
    creatures: Vec<Addr<Creature>>,
    waiting: Option<(u8, usize)>,
    tallies: Vec<Tally>,
    reported: usize,
    done: Option<oneshot::Sender<Vec<Tally>>>,
}

impl Actor for Place {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let place = ctx.address();
        self.creatures = self
            .colours
            .iter()
            .enumerate()
            .map(|(id, &colour)| {
                let place = place.clone();
                let arbiter = &self.arbiters[id % self.arbiters.len()];
                Creature::start_in_arbiter(arbiter, move |_| Creature {
                    place,
                    id,
                    colour,
                    tally: [0, 0],
                })
            })
            .collect();
    }
}

/// A creature of this colour wants to meet.
#[derive(Message)]
#[rtype(result = "()")]
struct Meet {
    colour: u8,
    id: usize,
}

impl Handler<Meet> for Place {
    type Result = ();

    fn handle(&mut self, Meet { colour, id }: Meet, _: &mut Context<Self>) {
        if self.remaining == 0 {
            self.creatures[id].do_send(GameOver);
        } else if let Some((other_colour, other)) = self.waiting.take() {
            self.remaining -= 1;
            self.creatures[other].do_send(Met { colour, id });
            self.creatures[id].do_send(Met {
                colour: other_colour,
                id: other,
            });
        } else {
            self.waiting = Some((colour, id));
        }
    }
}

/// A creature's tally at the end of the game.
#[derive(Message)]
#[rtype(result = "()")]
struct Report {
    id: usize,
    tally: Tally,
}

impl Handler<Report> for Place {
    type Result = ();

    fn handle(&mut self, Report { id, tally }: Report, ctx: &mut Context<Self>) {
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
    place: Addr<Place>,
    id: usize,
    colour: u8,
    tally: Tally,
}

impl Actor for Creature {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.place.do_send(Meet {
            colour: self.colour,
            id: self.id,
        });
    }
}

/// The creature met the creature `id` of colour `colour`.
#[derive(Message)]
#[rtype(result = "()")]
struct Met {
    colour: u8,
    id: usize,
}

impl Handler<Met> for Creature {
    type Result = ();

    fn handle(&mut self, Met { colour, id }: Met, _: &mut Context<Self>) {
        self.tally[0] += 1;
        if id == self.id {
            self.tally[1] += 1;
        }
        self.colour = complement(self.colour, colour);
        self.place.do_send(Meet {
            colour: self.colour,
            id: self.id,
        });
    }
}

/// The game is over: report and stop.
#[derive(Message)]
#[rtype(result = "()")]
struct GameOver;

impl Handler<GameOver> for Creature {
    type Result = ();

    fn handle(&mut self, _: GameOver, ctx: &mut Context<Self>) {
        self.place.do_send(Report {
            id: self.id,
            tally: self.tally,
        });
        ctx.stop();
    }
}

/// Games on a System and its Arbiters.
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

impl Games for Runner {
    fn game(&mut self, colours: &[u8], n: u64) -> Result<(f64, Vec<Tally>), String> {
        let handles: Vec<ArbiterHandle> = (0..self.arbiters.len())
            .map(|i| self.arbiters.handle(i))
            .collect();
        let colours = colours.to_vec();
        self.arbiters.block_on(async move {
            let (done, tallies) = oneshot::channel();
            let start = Instant::now();
            let creatures = colours.len();
            Place::start_in_arbiter(&handles[0].clone(), move |_| Place {
                colours,
                arbiters: handles,
                remaining: n,
                creatures: Vec::new(),
                waiting: None,
                tallies: vec![[0, 0]; creatures],
                reported: 0,
                done: Some(done),
            });
            let tallies = tokio::time::timeout(RUN_DEADLINE, tallies)
                .await
                .map_err(|_| "the game did not finish".to_string())?
                .map_err(|_| "the meeting place stopped without its tallies".to_string())?;
            Ok((start.elapsed().as_secs_f64(), tallies))
        })
    }
}

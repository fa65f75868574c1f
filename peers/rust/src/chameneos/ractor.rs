//! Chameneos-redux on ractor: a meeting-place actor that spawns its
//! creature actors in `pre_start` (`Actor::spawn`), each of which asks for
//! its first meeting in its own `pre_start`; every message a `cast`; a
//! creature reports its tally and stops itself when the place says the
//! game is over, and the place stops itself after the last report. A
//! refused cast cannot go unseen: a lost meeting leaves the game unfinished
//! (a timeout) or its tallies wrong (a failed check).

use std::time::Instant;

use ::ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use super::{complement, Games, Tally};
use crate::harness::{tokio_runtime, RUN_DEADLINE};

struct Place;

struct PlaceState {
    remaining: u64,
    creatures: Vec<ActorRef<CreatureMsg>>,
    waiting: Option<(u8, usize)>,
    tallies: Vec<Tally>,
    reported: usize,
    done: Option<oneshot::Sender<Vec<Tally>>>,
}

enum PlaceMsg {
    /// A creature of this colour wants to meet.
    Meet { colour: u8, id: usize },
    /// A creature's tally at the end of the game.
    Report { id: usize, tally: Tally },
}

impl Actor for Place {
    type Msg = PlaceMsg;
    type State = PlaceState;
    type Arguments = (Vec<u8>, u64, oneshot::Sender<Vec<Tally>>);

    async fn pre_start(
        &self,
        myself: ActorRef<PlaceMsg>,
        (colours, meetings, done): Self::Arguments,
    ) -> Result<PlaceState, ActorProcessingErr> {
        let mut creatures = Vec::with_capacity(colours.len());
        for (id, &colour) in colours.iter().enumerate() {
            let (creature, _) = Actor::spawn(None, Creature, (myself.clone(), id, colour)).await?;
            creatures.push(creature);
        }
        Ok(PlaceState {
            remaining: meetings,
            creatures,
            waiting: None,
            tallies: vec![[0, 0]; colours.len()],
            reported: 0,
            done: Some(done),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<PlaceMsg>,
        msg: PlaceMsg,
        s: &mut PlaceState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PlaceMsg::Meet { colour, id } => {
                if s.remaining == 0 {
                    s.creatures[id].cast(CreatureMsg::GameOver)?;
                } else if let Some((other_colour, other)) = s.waiting.take() {
                    s.remaining -= 1;
                    s.creatures[other].cast(CreatureMsg::Met { colour, id })?;
                    s.creatures[id].cast(CreatureMsg::Met {
                        colour: other_colour,
                        id: other,
                    })?;
                } else {
                    s.waiting = Some((colour, id));
                }
            }
            PlaceMsg::Report { id, tally } => {
                s.tallies[id] = tally;
                s.reported += 1;
                if s.reported == s.creatures.len() {
                    if let Some(done) = s.done.take() {
                        let _ = done.send(std::mem::take(&mut s.tallies));
                    }
                    myself.stop(None);
                }
            }
        }
        Ok(())
    }
}

struct Creature;

struct CreatureState {
    place: ActorRef<PlaceMsg>,
    id: usize,
    colour: u8,
    tally: Tally,
}

enum CreatureMsg {
    /// The creature met the creature `id` of colour `colour`.
    Met { colour: u8, id: usize },
    /// The game is over: report and stop.
    GameOver,
}

impl Actor for Creature {
    type Msg = CreatureMsg;
    type State = CreatureState;
    type Arguments = (ActorRef<PlaceMsg>, usize, u8);

    async fn pre_start(
        &self,
        _: ActorRef<CreatureMsg>,
        (place, id, colour): Self::Arguments,
    ) -> Result<CreatureState, ActorProcessingErr> {
        place.cast(PlaceMsg::Meet { colour, id })?;
        Ok(CreatureState {
            place,
            id,
            colour,
            tally: [0, 0],
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<CreatureMsg>,
        msg: CreatureMsg,
        s: &mut CreatureState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CreatureMsg::Met { colour, id } => {
                s.tally[0] += 1;
                if id == s.id {
                    s.tally[1] += 1;
                }
                s.colour = complement(s.colour, colour);
                s.place.cast(PlaceMsg::Meet {
                    colour: s.colour,
                    id: s.id,
                })?;
            }
            CreatureMsg::GameOver => {
                s.place.cast(PlaceMsg::Report {
                    id: s.id,
                    tally: s.tally,
                })?;
                myself.stop(None);
            }
        }
        Ok(())
    }
}

async fn game(colours: &[u8], n: u64) -> Result<(f64, Vec<Tally>), String> {
    let (done, tallies) = oneshot::channel();
    let start = Instant::now();
    let (_place, handle) = Actor::spawn(None, Place, (colours.to_vec(), n, done))
        .await
        .map_err(|e| e.to_string())?;
    let tallies = tokio::time::timeout(RUN_DEADLINE, tallies)
        .await
        .map_err(|_| "the game did not finish".to_string())?
        .map_err(|_| "the meeting place stopped without its tallies".to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    handle.await.map_err(|e| e.to_string())?;
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

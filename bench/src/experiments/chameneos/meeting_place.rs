//! The actor version of chameneos-redux: one meeting-place actor and one
//! actor per creature.
//!
//! # Protocol
//!
//! - The driver spawns the meeting place and sends it `Start` with the
//!   creatures' colours, the number of meetings and where to report. The
//!   meeting place spawns the creatures as its children, and each creature
//!   comes to meet as soon as it has started: `Meet { colour, id }`. The
//!   meeting place handles those only after `Start`, so it already knows
//!   every creature's ref when the first one arrives.
//! - The meeting place holds at most one waiting creature. The next one to
//!   arrive is paired with it: one meeting is used up and each of the two is
//!   told the other's colour and id (`Met`). A creature that has met takes
//!   the complement colour and comes back at once.
//! - Once the meetings are used up, every creature that comes gets `Stop`,
//!   reports its tally and stops itself. At that point nobody is waiting (the
//!   last meeting just paired the last waiter), so every creature does come
//!   back. When all have reported, the meeting place sends the tallies to the
//!   driver and stops.
//!
//! The creatures are spawned by the meeting place, on a worker, rather than
//! by the driver thread: an actor first scheduled from outside the pool waits
//! in the pool's shared injector queue, which a busy worker reads only every
//! 61 tasks. Spawned from the driver, creatures would join the game late
//! (before that fairness rule existed, half of them never ran until the
//! other half had used up every meeting); spawned here, all start at once.
//!
//! # Why it is fast
//!
//! A meeting is four small messages (two `Meet`s, two `Met`s), none of which
//! allocates: creatures are named by their index in the meeting place's
//! table of refs, so a message carries a colour and a `u32` instead of an
//! `ActorRef`, which would cost two reference-count updates per hop. Only
//! the once-per-game `Start` and `Report` are boxed, to keep the per-meeting
//! message at 16 bytes.

use std::sync::mpsc;

use troupe::prelude::*;

use crate::experiments::chameneos::colour::{complement, Colour};
use crate::experiments::chameneos::output::{Game, Tally};
use crate::experiments::chameneos::{await_tallies, spawn, Done, Report};
use crate::runner::WorkloadError;

/// What a game needs to start; sent once, boxed.
struct Start {
    colours: Vec<Colour>,
    meetings: u64,
    done: Done,
}

enum PlaceMsg {
    Start(Box<Start>),
    /// Creature `id`, now of colour `colour`, comes to meet.
    Meet {
        colour: Colour,
        id: u32,
    },
    /// A creature that was told to stop reports its tally.
    Report(Box<Report>),
}

enum CreatureMsg {
    /// You met creature `id`, of colour `colour`.
    Met { colour: Colour, id: u32 },
    /// The meetings are used up: report and stop.
    Stop,
}

/// The meeting place; its state is only meaningful after `Start`.
#[derive(Default)]
struct MeetingPlace {
    creatures: Vec<ActorRef<CreatureMsg>>,
    /// Meetings still to arrange.
    remaining: u64,
    /// The creature waiting for a partner, with its colour.
    waiting: Option<(Colour, u32)>,
    tallies: Vec<Tally>,
    reported: usize,
    done: Option<Done>,
}

impl Actor for MeetingPlace {
    type Msg = PlaceMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: PlaceMsg) {
        match msg {
            PlaceMsg::Meet { colour, id } => {
                if self.remaining == 0 {
                    self.creatures[id as usize].tell(CreatureMsg::Stop);
                    return;
                }
                match self.waiting.take() {
                    None => self.waiting = Some((colour, id)),
                    Some((first_colour, first)) => {
                        self.remaining -= 1;
                        self.creatures[first as usize].tell(CreatureMsg::Met { colour, id });
                        self.creatures[id as usize].tell(CreatureMsg::Met {
                            colour: first_colour,
                            id: first,
                        });
                    }
                }
            }
            PlaceMsg::Start(start) => {
                let Start {
                    colours,
                    meetings,
                    done,
                } = *start;
                self.tallies = vec![Tally::default(); colours.len()];
                self.remaining = meetings;
                for (id, colour) in (0u32..).zip(colours) {
                    let place = ctx.myself();
                    let spawned = ctx.spawn(Props::new(move || Creature {
                        id,
                        colour,
                        place: place.clone(),
                        tally: Tally::default(),
                    }));
                    match spawned {
                        Ok(creature) => self.creatures.push(creature),
                        Err(e) => {
                            let _ = done.send(Err(format!("cannot spawn creature {id}: {e}")));
                            ctx.stop();
                            return;
                        }
                    }
                }
                self.done = Some(done);
            }
            PlaceMsg::Report(report) => {
                self.tallies[report.id as usize] = report.tally;
                self.reported += 1;
                if self.reported == self.creatures.len() {
                    if let Some(done) = self.done.take() {
                        let _ = done.send(Ok(std::mem::take(&mut self.tallies)));
                    }
                    ctx.stop();
                }
            }
        }
    }
}

struct Creature {
    id: u32,
    colour: Colour,
    place: ActorRef<PlaceMsg>,
    tally: Tally,
}

impl Creature {
    fn come(&self) {
        self.place.tell(PlaceMsg::Meet {
            colour: self.colour,
            id: self.id,
        });
    }
}

impl Actor for Creature {
    type Msg = CreatureMsg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.come();
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: CreatureMsg) {
        match msg {
            CreatureMsg::Met { colour, id } => {
                self.tally.meetings += 1;
                if id == self.id {
                    self.tally.self_meetings += 1;
                }
                self.colour = complement(self.colour, colour);
                self.come();
            }
            CreatureMsg::Stop => {
                self.place.tell(PlaceMsg::Report(Box::new(Report {
                    id: self.id,
                    tally: self.tally,
                })));
                ctx.stop();
            }
        }
    }
}

/// Plays one game of `meetings` meetings among creatures of the given
/// starting colours on `system`, and returns every creature's tally.
///
/// The actors are spawned for the game and stop themselves at its end. The
/// result is not validated here: the caller decides what a failure means.
pub fn play(
    system: &ActorSystem,
    colours: &[Colour],
    meetings: u64,
) -> Result<Game, WorkloadError> {
    let place = spawn(system, Props::new(MeetingPlace::default))?;
    let (done, tallies) = mpsc::channel();
    place.tell(PlaceMsg::Start(Box::new(Start {
        colours: colours.to_vec(),
        meetings,
        done,
    })));
    Ok(Game {
        colours: colours.to_vec(),
        tallies: await_tallies(&tallies, colours.len())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::chameneos::colour::{GAME_TEN, GAME_THREE};

    #[test]
    fn messages_stay_small() {
        assert!(std::mem::size_of::<PlaceMsg>() <= 16);
        assert!(std::mem::size_of::<CreatureMsg>() <= 8);
    }

    #[test]
    fn both_games_are_valid_on_one_and_two_workers() {
        for workers in [1, 2] {
            let system = ActorSystem::builder().threads(workers).build().unwrap();
            for colours in [&GAME_THREE[..], &GAME_TEN[..]] {
                for meetings in [1, 2, 600, 10_000] {
                    let game = play(&system, colours, meetings).unwrap();
                    game.validate(meetings).unwrap();
                }
            }
            system.shutdown();
            system.await_termination().unwrap();
        }
    }
}

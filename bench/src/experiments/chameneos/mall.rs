//! Savina's chameneos (from the Savina actor benchmark suite): the mall protocol, by
//! default with 100 creatures and 200,000 meetings.
//!
//! It differs from chameneos-redux's meeting place in who does the pairing
//! work. The mall only matches: it keeps the first creature that comes and
//! forwards the second one's `Meet` (its colour and id) to it. The waiting
//! creature computes the complement, takes it, and sends it to its partner
//! directly (`Change`), and the partner takes the same colour. Both then go
//! back to the mall. A meeting is again four messages, but one of them goes
//! from creature to creature instead of through the mall, as in Savina's
//! `ChameneosMallActor` / `ChameneosChameneoActor`.
//!
//! The mall spawns the creatures as its children, as Savina's does (and for
//! the reason given in `meeting_place`: actors first scheduled from the
//! driver thread would wait in the pool's injector). Each creature comes to
//! the mall as soon as it has started.
//!
//! Once the meetings are used up the mall answers every `Meet` with `Exit`;
//! each creature then reports its tally and stops, and the mall reports the
//! tallies to the driver when all are in (Savina's `MeetingCountMsg`).
//!
//! Savina's messages carry the sender's `ActorRef`. Here a creature is named
//! by its index in a table of refs that every creature receives once, with
//! `Peers`, so that a hop carries a colour and a `u32` and no reference count
//! is touched per message. The mall sends `Peers` right after spawning the
//! creatures and before it forwards any `Meet`, so a creature always has the
//! table by the time it must answer a partner.

use std::sync::{mpsc, Arc};

use troupe::prelude::*;

use crate::experiments::chameneos::colour::{complement, Colour};
use crate::experiments::chameneos::output::{Game, Tally};
use crate::experiments::chameneos::{await_tallies, spawn, Done, Report};
use crate::runner::WorkloadError;

/// Every creature of a game, indexed by id; shared, read-only.
type Table = Arc<[ActorRef<CreatureMsg>]>;

/// What a game needs to start; sent once, boxed.
struct Start {
    colours: Vec<Colour>,
    meetings: u64,
    done: Done,
}

enum MallMsg {
    Start(Box<Start>),
    /// Creature `id`, of colour `colour`, comes to meet.
    Meet {
        colour: Colour,
        id: u32,
    },
    /// A creature that was told to exit reports its tally.
    Report(Box<Report>),
}

enum CreatureMsg {
    /// Everybody's address, to answer partners with.
    Peers(Table),
    /// Forwarded by the mall: you are meeting creature `id`, of colour `colour`.
    Meet { colour: Colour, id: u32 },
    /// Your partner `id` computed the new colour for both of you.
    Change { colour: Colour, id: u32 },
    /// The meetings are used up: report and stop.
    Exit,
}

/// The mall; its state is only meaningful after `Start`.
#[derive(Default)]
struct Mall {
    creatures: Option<Table>,
    remaining: u64,
    waiting: Option<u32>,
    tallies: Vec<Tally>,
    reported: usize,
    done: Option<Done>,
}

impl Actor for Mall {
    type Msg = MallMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: MallMsg) {
        let Some(creatures) = &self.creatures else {
            if let MallMsg::Start(start) = msg {
                self.start(ctx, *start);
            }
            return;
        };
        match msg {
            MallMsg::Meet { colour, id } => {
                if self.remaining == 0 {
                    creatures[id as usize].tell(CreatureMsg::Exit);
                } else if let Some(first) = self.waiting.take() {
                    self.remaining -= 1;
                    creatures[first as usize].tell(CreatureMsg::Meet { colour, id });
                } else {
                    self.waiting = Some(id);
                }
            }
            MallMsg::Report(report) => {
                self.tallies[report.id as usize] = report.tally;
                self.reported += 1;
                if self.reported == creatures.len() {
                    if let Some(done) = self.done.take() {
                        let _ = done.send(Ok(std::mem::take(&mut self.tallies)));
                    }
                    ctx.stop();
                }
            }
            // A game starts once; the driver never sends a second `Start`.
            MallMsg::Start(_) => {}
        }
    }
}

impl Mall {
    /// Spawns the creatures and hands each the table of everybody's refs.
    fn start(&mut self, ctx: &mut Context<'_, Self>, start: Start) {
        let Start {
            colours,
            meetings,
            done,
        } = start;
        let mut creatures = Vec::with_capacity(colours.len());
        for (id, colour) in (0u32..).zip(colours) {
            let mall = ctx.myself();
            let spawned = ctx.spawn(Props::new(move || Creature {
                id,
                colour,
                mall: mall.clone(),
                peers: None,
                tally: Tally::default(),
            }));
            match spawned {
                Ok(creature) => creatures.push(creature),
                Err(e) => {
                    let _ = done.send(Err(format!("cannot spawn creature {id}: {e}")));
                    ctx.stop();
                    return;
                }
            }
        }
        let table: Table = creatures.into();
        for creature in table.iter() {
            creature.tell(CreatureMsg::Peers(table.clone()));
        }
        self.tallies = vec![Tally::default(); table.len()];
        self.remaining = meetings;
        self.done = Some(done);
        self.creatures = Some(table);
    }
}

struct Creature {
    id: u32,
    colour: Colour,
    mall: ActorRef<MallMsg>,
    peers: Option<Table>,
    tally: Tally,
}

impl Creature {
    fn met(&mut self, partner: u32) {
        self.tally.meetings += 1;
        if partner == self.id {
            self.tally.self_meetings += 1;
        }
    }

    fn come(&self) {
        self.mall.tell(MallMsg::Meet {
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
            CreatureMsg::Meet { colour, id } => {
                self.colour = complement(self.colour, colour);
                self.met(id);
                // The mall sent `Peers` before it forwarded any `Meet`.
                let peers = self.peers.as_ref().expect("the table came first");
                peers[id as usize].tell(CreatureMsg::Change {
                    colour: self.colour,
                    id: self.id,
                });
                self.come();
            }
            CreatureMsg::Change { colour, id } => {
                self.colour = colour;
                self.met(id);
                self.come();
            }
            CreatureMsg::Peers(peers) => self.peers = Some(peers),
            CreatureMsg::Exit => {
                self.mall.tell(MallMsg::Report(Box::new(Report {
                    id: self.id,
                    tally: self.tally,
                })));
                // The table holds every creature's ref, this one's included:
                // drop it so that the game's refs go away with the game.
                self.peers = None;
                ctx.stop();
            }
        }
    }
}

/// Plays one game of the mall protocol among creatures of the given starting
/// colours on `system`, and returns every creature's tally (not validated).
pub fn play(
    system: &ActorSystem,
    colours: &[Colour],
    meetings: u64,
) -> Result<Game, WorkloadError> {
    let mall = spawn(system, Props::new(Mall::default))?;
    let (done, tallies) = mpsc::channel();
    mall.tell(MallMsg::Start(Box::new(Start {
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
    use crate::experiments::chameneos::colour::cycling;

    #[test]
    fn the_mall_protocol_is_valid_for_few_and_many_creatures() {
        let system = ActorSystem::builder().threads(2).build().unwrap();
        for creatures in [2, 3, 10, 100] {
            for meetings in [1, 7, 5_000] {
                let game = play(&system, &cycling(creatures), meetings).unwrap();
                game.validate(meetings).unwrap();
            }
        }
        system.shutdown();
        system.await_termination().unwrap();
    }
}

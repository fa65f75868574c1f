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
//! The mall is the meeting place both protocols share ([`place`]): it spawns
//! the creatures as its children, as Savina's does (and for the reason given
//! there). Each creature comes to the mall as soon as it has started.
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
//!
//! [`place`]: super::place

use troupe::prelude::*;

use crate::experiments::chameneos::colour::{complement, Colour};
use crate::experiments::chameneos::place::{Protocol, Seat, Table};

/// Savina's mall rules for the shared meeting place.
pub struct Mall;

/// What a creature receives.
pub enum CreatureMsg {
    /// Everybody's address, to answer partners with.
    Peers(Table<CreatureMsg>),
    /// Forwarded by the mall: you are meeting creature `id`, of colour `colour`.
    Meet { colour: Colour, id: u32 },
    /// Your partner `id` computed the new colour for both of you.
    Change { colour: Colour, id: u32 },
    /// The meetings are used up: report and stop.
    Exit,
}

/// A creature of this protocol.
pub struct Creature {
    seat: Seat,
    peers: Option<Table<CreatureMsg>>,
}

impl Protocol for Mall {
    type Msg = CreatureMsg;
    type Creature = Creature;
    const STOP: CreatureMsg = CreatureMsg::Exit;

    fn creature(seat: Seat) -> Creature {
        Creature { seat, peers: None }
    }

    fn seated(creatures: &Table<CreatureMsg>) {
        for creature in creatures.iter() {
            creature.tell(CreatureMsg::Peers(creatures.clone()));
        }
    }

    /// Forwards the second one's `Meet` to the one that was waiting.
    fn pair(
        creatures: &[ActorRef<CreatureMsg>],
        (_, first): (Colour, u32),
        (colour, id): (Colour, u32),
    ) {
        creatures[first as usize].tell(CreatureMsg::Meet { colour, id });
    }
}

impl Actor for Creature {
    type Msg = CreatureMsg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.seat.come();
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: CreatureMsg) {
        let seat = &mut self.seat;
        match msg {
            CreatureMsg::Meet { colour, id } => {
                seat.colour = complement(seat.colour, colour);
                seat.met(id);
                // The mall sent `Peers` before it forwarded any `Meet`.
                let peers = self.peers.as_ref().expect("the table came first");
                peers[id as usize].tell(CreatureMsg::Change {
                    colour: seat.colour,
                    id: seat.id,
                });
                seat.come();
            }
            CreatureMsg::Change { colour, id } => {
                seat.colour = colour;
                seat.met(id);
                seat.come();
            }
            CreatureMsg::Peers(peers) => self.peers = Some(peers),
            CreatureMsg::Exit => {
                seat.report();
                // The table holds every creature's ref, this one's included:
                // drop it so that the game's refs go away with the game.
                self.peers = None;
                ctx.stop();
            }
        }
    }
}

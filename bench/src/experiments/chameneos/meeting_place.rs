//! The actor version of chameneos-redux: one meeting-place actor and one
//! actor per creature.
//!
//! # Protocol
//!
//! The meeting place ([`place`]) pairs each creature that comes with the one
//! waiting, and tells each of the two the other's colour and id (`Met`). A
//! creature that has met takes the complement colour and comes back at once.
//! Once the meetings are used up, every creature that comes gets `Stop`,
//! reports its tally and stops itself. How the place starts the game, why it
//! spawns the creatures itself and how the game ends are said in [`place`],
//! which the mall variant shares.
//!
//! # Why it is fast
//!
//! A meeting is four small messages (two `Meet`s, two `Met`s), none of which
//! allocates: creatures are named by their index in the meeting place's
//! table of refs, so a message carries a colour and a `u32` instead of an
//! `ActorRef`, which would cost two reference-count updates per hop.
//!
//! [`place`]: super::place

use troupe::prelude::*;

use crate::experiments::chameneos::colour::{complement, Colour};
use crate::experiments::chameneos::place::{Protocol, Seat};

/// Chameneos-redux's rules for the shared meeting place.
pub struct Redux;

/// What a creature receives.
pub enum CreatureMsg {
    /// You met creature `id`, of colour `colour`.
    Met { colour: Colour, id: u32 },
    /// The meetings are used up: report and stop.
    Stop,
}

/// A creature of this protocol.
pub struct Creature(Seat);

impl Protocol for Redux {
    type Msg = CreatureMsg;
    type Creature = Creature;
    const STOP: CreatureMsg = CreatureMsg::Stop;

    fn creature(seat: Seat) -> Creature {
        Creature(seat)
    }

    fn pair(
        creatures: &[ActorRef<CreatureMsg>],
        (first_colour, first): (Colour, u32),
        (colour, id): (Colour, u32),
    ) {
        creatures[first as usize].tell(CreatureMsg::Met { colour, id });
        creatures[id as usize].tell(CreatureMsg::Met {
            colour: first_colour,
            id: first,
        });
    }
}

impl Actor for Creature {
    type Msg = CreatureMsg;

    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.0.come();
    }

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: CreatureMsg) {
        match msg {
            CreatureMsg::Met { colour, id } => {
                self.0.met(id);
                self.0.colour = complement(self.0.colour, colour);
                self.0.come();
            }
            CreatureMsg::Stop => {
                self.0.report();
                ctx.stop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_creature_message_stays_small() {
        assert!(std::mem::size_of::<CreatureMsg>() <= 8);
    }
}

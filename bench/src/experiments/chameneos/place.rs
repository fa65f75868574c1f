//! The meeting place both actor protocols share (chameneos-redux's, in the
//! `meeting_place` module, and Savina's mall variant, in `mall`), and the
//! part of a creature that does not depend on the protocol ([`Seat`]).
//!
//! The two protocols differ only in what happens once two creatures are
//! paired and in what a creature does with that news; everything else is the
//! same and lives here once:
//!
//! - The driver spawns the meeting place and sends it `Start` with the
//!   creatures' colours, the number of meetings and where to report. The
//!   meeting place spawns the creatures as its children, and each creature
//!   comes to meet as soon as it has started: `Meet { colour, id }`. The
//!   meeting place handles those only after `Start`, so it already knows
//!   every creature's ref when the first one arrives.
//! - The meeting place holds at most one waiting creature. The next one to
//!   arrive is paired with it: one meeting is used up and the protocol's
//!   [`Protocol::pair`] tells the pair.
//! - Once the meetings are used up, every creature that comes gets the
//!   protocol's stop message, reports its tally and stops itself. At that
//!   point nobody is waiting (the last meeting just paired the last waiter),
//!   so every creature does come back. When all have reported, the meeting
//!   place sends the tallies to the driver and stops.
//!
//! The creatures are spawned by the meeting place, on a worker, rather than
//! by the driver thread: an actor first scheduled from outside the pool waits
//! in the pool's shared injector queue, which a busy worker reads only every
//! 61 tasks. Spawned from the driver, creatures would join the game late
//! (before that fairness rule existed, half of them never ran until the
//! other half had used up every meeting); spawned here, all start at once.
//!
//! The meeting place is generic over the protocol, not a trait object: each
//! protocol gets its own compiled place, and [`Protocol::pair`] is a static
//! call the compiler inlines, so sharing the place adds nothing per meeting.
//! Creatures are named by their index in the place's table of refs, so a
//! per-meeting message carries a colour and a `u32` instead of an
//! `ActorRef`, which would cost two reference-count updates per hop. Only
//! the once-per-game `Start` and `Report` are boxed, to keep the
//! per-meeting message at 16 bytes.

use std::marker::PhantomData;
use std::sync::{mpsc, Arc};

use troupe::prelude::*;

use crate::experiments::chameneos::colour::Colour;
use crate::experiments::chameneos::output::{Game, Tally};
use crate::experiments::chameneos::GAME_DEADLINE;
use crate::runner::WorkloadError;

/// Every creature of a game, indexed by id; shared, read-only.
pub type Table<M> = Arc<[ActorRef<M>]>;

/// What differs between the protocols: the creatures and what a pairing
/// tells them. Implemented by a unit type per protocol.
pub trait Protocol: Send + 'static {
    /// What a creature of this protocol receives.
    type Msg: Send + 'static;
    /// The creature actor.
    type Creature: Actor<Msg = Self::Msg>;
    /// The message that tells a creature the meetings are used up: it
    /// reports its tally ([`Seat::report`]) and stops.
    const STOP: Self::Msg;

    /// The creature in `seat`, before it has started.
    fn creature(seat: Seat) -> Self::Creature;

    /// Called once every creature is spawned, before the place handles any
    /// `Meet`.
    fn seated(creatures: &Table<Self::Msg>) {
        let _ = creatures;
    }

    /// Tells the creatures of one meeting: `first` was waiting, `second`
    /// just came. Each is `(colour, id)` as the creature announced it.
    fn pair(creatures: &[ActorRef<Self::Msg>], first: (Colour, u32), second: (Colour, u32));
}

/// A creature's tally at the end of a game, sent once to the meeting place.
pub struct Report {
    /// The creature's index in the game.
    pub id: u32,
    /// Its meetings.
    pub tally: Tally,
}

/// Where a meeting place sends the tallies at the end of a game, or why the
/// game could not be played.
type Done = mpsc::Sender<Result<Vec<Tally>, String>>;

/// What a game needs to start; sent once, boxed.
pub struct Start {
    colours: Vec<Colour>,
    meetings: u64,
    done: Done,
}

/// What the meeting place receives, whatever the protocol.
pub enum PlaceMsg {
    /// The game's creatures, meetings and where to report; boxed, it comes
    /// once.
    Start(Box<Start>),
    /// Creature `id`, now of colour `colour`, comes to meet.
    Meet {
        /// The creature's colour as it comes.
        colour: Colour,
        /// The creature's index.
        id: u32,
    },
    /// A creature that was told to stop reports its tally.
    Report(Box<Report>),
}

/// The meeting place of protocol `P`; its state is only meaningful after
/// `Start`.
struct MeetingPlace<P: Protocol> {
    creatures: Table<P::Msg>,
    /// Meetings still to arrange.
    remaining: u64,
    /// The creature waiting for a partner, with its colour.
    waiting: Option<(Colour, u32)>,
    tallies: Vec<Tally>,
    reported: usize,
    done: Option<Done>,
    protocol: PhantomData<fn() -> P>,
}

impl<P: Protocol> Default for MeetingPlace<P> {
    fn default() -> Self {
        MeetingPlace {
            creatures: Arc::from([]),
            remaining: 0,
            waiting: None,
            tallies: Vec::new(),
            reported: 0,
            done: None,
            protocol: PhantomData,
        }
    }
}

impl<P: Protocol> Actor for MeetingPlace<P> {
    type Msg = PlaceMsg;

    fn receive(&mut self, ctx: &mut Context<'_, Self>, msg: PlaceMsg) {
        match msg {
            PlaceMsg::Meet { colour, id } => {
                if self.remaining == 0 {
                    self.creatures[id as usize].tell(P::STOP);
                    return;
                }
                match self.waiting.take() {
                    None => self.waiting = Some((colour, id)),
                    Some(first) => {
                        self.remaining -= 1;
                        P::pair(&self.creatures, first, (colour, id));
                    }
                }
            }
            PlaceMsg::Start(start) => self.start(ctx, *start),
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

impl<P: Protocol> MeetingPlace<P> {
    /// Spawns the creatures as children and keeps the table of their refs.
    fn start(&mut self, ctx: &mut Context<'_, Self>, start: Start) {
        let Start {
            colours,
            meetings,
            done,
        } = start;
        let mut creatures = Vec::with_capacity(colours.len());
        for (id, colour) in (0u32..).zip(colours) {
            let place = ctx.myself();
            let spawned = ctx.spawn(Props::new(move || {
                P::creature(Seat {
                    id,
                    colour,
                    place: place.clone(),
                    tally: Tally::default(),
                })
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
        let table: Table<P::Msg> = creatures.into();
        P::seated(&table);
        self.tallies = vec![Tally::default(); table.len()];
        self.remaining = meetings;
        self.done = Some(done);
        self.creatures = table;
    }
}

/// What every creature has, whatever the protocol: its index, its colour,
/// the meeting place and its tally.
pub struct Seat {
    /// The creature's index in the game.
    pub id: u32,
    /// Its colour now.
    pub colour: Colour,
    place: ActorRef<PlaceMsg>,
    tally: Tally,
}

impl Seat {
    /// Counts a meeting with creature `partner`.
    pub fn met(&mut self, partner: u32) {
        self.tally.meetings += 1;
        if partner == self.id {
            self.tally.self_meetings += 1;
        }
    }

    /// Comes to the meeting place with the current colour.
    pub fn come(&self) {
        self.place.tell(PlaceMsg::Meet {
            colour: self.colour,
            id: self.id,
        });
    }

    /// Sends the tally to the meeting place, once the meetings are used up.
    pub fn report(&self) {
        self.place.tell(PlaceMsg::Report(Box::new(Report {
            id: self.id,
            tally: self.tally,
        })));
    }
}

/// Plays one game of `meetings` meetings of protocol `P` among creatures of
/// the given starting colours on `system`, and returns every creature's
/// tally.
///
/// The actors are spawned for the game and stop themselves at its end. The
/// result is not validated here: the caller decides what a failure means.
pub fn play<P: Protocol>(
    system: &ActorSystem,
    colours: &[Colour],
    meetings: u64,
) -> Result<Game, WorkloadError> {
    let place = system
        .spawn(Props::new(MeetingPlace::<P>::default))
        .map_err(|e| WorkloadError::new(format!("cannot spawn: {e}")))?;
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

/// Waits for the tallies a meeting place sends at the end of its game.
fn await_tallies(
    tallies: &mpsc::Receiver<Result<Vec<Tally>, String>>,
    creatures: usize,
) -> Result<Vec<Tally>, WorkloadError> {
    match tallies.recv_timeout(GAME_DEADLINE) {
        Ok(result) => result.map_err(WorkloadError::new),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(WorkloadError::new(format!(
            "the game of {creatures} creatures did not finish within {} s",
            GAME_DEADLINE.as_secs()
        ))),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(WorkloadError::new(format!(
            "the meeting place of {creatures} creatures stopped without reporting"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_message_stays_small() {
        assert!(std::mem::size_of::<PlaceMsg>() <= 16);
    }
}

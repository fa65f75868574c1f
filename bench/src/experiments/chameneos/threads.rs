//! The baseline without actors: chameneos-redux the way the fast Benchmarks
//! Game entries play it, one thread per creature around a meeting place that
//! is a single atomic word changed with compare-and-swap.
//!
//! # State
//!
//! The meeting place is one `AtomicU64`:
//!
//! ```text
//!  63 ............ 24 | 23 .... 16 | 15 ........ 0
//!  meetings remaining | its colour | waiter id + 1 (0: nobody waits)
//! ```
//!
//! Each creature also owns an answer word on a cache line of its own, which
//! only its partner writes (`1 << 63 | colour << 32 | partner id`) and only it
//! reads and clears.
//!
//! # Protocol
//!
//! A creature reads the word and then, by one CAS:
//! - no meetings left: it goes home with its tally;
//! - nobody waits: it registers itself and its colour as the waiter, then
//!   waits for its answer word to become non-zero;
//! - somebody waits: it takes one meeting and clears the waiter, then writes
//!   its own colour and id into the waiter's answer word.
//!
//! Both partners then take the complement colour and come back. A failed CAS
//! means another creature changed the word first; the creature retries on the
//! value it got back. A waiter is always answered: the count only goes down
//! by pairing with the waiter, so while somebody waits there are meetings
//! left and the others keep coming.
//!
//! # Ordering
//!
//! The successful CAS is `AcqRel`, so the pairing creature sees the waiter's
//! registration with its colour; the answer is a release store read with
//! acquire. The waiter clears its answer word before it registers again (with
//! a release CAS), so the next answer can never be wiped by that clear.
//!
//! # Waiting
//!
//! A waiter spins briefly and then yields its core, as the fast entries do
//! with `sched_yield`: with 3 or 10 creature threads on 2 cores, a waiter
//! that only spun would keep its partner off the CPU. Creatures are spawned
//! inside the clock, as the actor version spawns its actors: both pay for
//! creating their creatures.

use std::hint;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use crate::experiments::chameneos::colour::{complement, Colour};
use crate::experiments::chameneos::output::{Game, Tally};
use crate::runner::WorkloadError;

/// Where the remaining meetings start in the meeting-place word.
const REMAINING_SHIFT: u32 = 24;
/// Where the waiter's colour sits.
const COLOUR_SHIFT: u32 = 16;
/// The waiter's id + 1, or 0 when nobody waits.
const WAITER_MASK: u64 = 0xffff;
/// The most meetings the word can count.
pub const MAX_MEETINGS: u64 = (1 << (64 - REMAINING_SHIFT)) - 1;
/// The most creatures the word can name.
pub const MAX_CREATURES: usize = WAITER_MASK as usize - 1;

/// Marks an answer word as written (an answer may be colour 0 from id 0).
const ANSWERED: u64 = 1 << 63;

/// Spins of a waiter before it starts yielding its core: about a meeting's
/// worth, so that an answer that is about to arrive costs no system call.
const SPINS_BEFORE_YIELD: u32 = 100;

/// A creature's answer word, alone on its cache line (128 bytes: two lines,
/// because adjacent-line prefetching pairs them on x86) so that one waiter's
/// spinning does not slow the others.
#[repr(align(128))]
struct Answer(AtomicU64);

/// The meeting-place word with `remaining` meetings and `waiter` waiting.
fn pack(remaining: u64, waiter: Option<(usize, Colour)>) -> u64 {
    let waiter = waiter.map_or(0, |(id, colour)| {
        (u64::from(colour as u8) << COLOUR_SHIFT) | (id as u64 + 1)
    });
    (remaining << REMAINING_SHIFT) | waiter
}

/// Meetings remaining and the waiter, if any, of a meeting-place word.
fn unpack(word: u64) -> (u64, Option<(usize, Colour)>) {
    let remaining = word >> REMAINING_SHIFT;
    let waiter = match word & WAITER_MASK {
        0 => None,
        id => Some((id as usize - 1, colour_at(word, COLOUR_SHIFT))),
    };
    (remaining, waiter)
}

/// The colour stored in the byte of `word` at `shift`; every writer stores a
/// valid colour there.
fn colour_at(word: u64, shift: u32) -> Colour {
    Colour::from_code((word >> shift) as u8).expect("a colour was stored")
}

/// Plays one game of `meetings` meetings with one thread per creature and
/// returns every creature's tally (not validated).
pub fn play(colours: &[Colour], meetings: u64) -> Result<Game, WorkloadError> {
    if meetings > MAX_MEETINGS || colours.len() > MAX_CREATURES {
        return Err(WorkloadError::new(format!(
            "the thread baseline plays at most {MAX_MEETINGS} meetings among {MAX_CREATURES} \
             creatures"
        )));
    }
    let place = AtomicU64::new(pack(meetings, None));
    let answers: Vec<Answer> = colours.iter().map(|_| Answer(AtomicU64::new(0))).collect();
    // Creatures wait at the gate until all exist: if one cannot be spawned,
    // the others must not start a game that could leave one of them waiting
    // for a partner forever.
    let gate = Gate::default();
    let tallies = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(colours.len());
        for (id, &colour) in colours.iter().enumerate() {
            let (place, answers, gate) = (&place, &answers[..], &gate);
            let spawned = thread::Builder::new()
                .name(format!("creature-{id}"))
                .spawn_scoped(scope, move || {
                    gate.wait().then(|| creature(place, answers, id, colour))
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    gate.open(false);
                    return Err(WorkloadError::new(format!("cannot spawn a creature: {e}")));
                }
            }
        }
        gate.open(true);
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(Some(tally)) => Ok(tally),
                _ => Err(WorkloadError::new("a creature thread panicked")),
            })
            .collect::<Result<Vec<Tally>, WorkloadError>>()
    })?;
    Ok(Game {
        colours: colours.to_vec(),
        tallies,
    })
}

/// One creature's life: meet until the meetings are used up.
fn creature(place: &AtomicU64, answers: &[Answer], me: usize, mut colour: Colour) -> Tally {
    let mut tally = Tally::default();
    let mut word = place.load(Ordering::Acquire);
    loop {
        let (remaining, waiter) = unpack(word);
        if remaining == 0 {
            return tally;
        }
        let (next, partner) = match waiter {
            None => (pack(remaining, Some((me, colour))), None),
            Some(w) => (pack(remaining - 1, None), Some(w)),
        };
        if let Err(current) =
            place.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
        {
            word = current;
            continue;
        }
        let (other, other_colour) = match partner {
            Some((other, other_colour)) => {
                let answer = ANSWERED | (u64::from(colour as u8) << 32) | me as u64;
                answers[other].0.store(answer, Ordering::Release);
                (other, other_colour)
            }
            None => {
                let answer = await_answer(&answers[me].0);
                ((answer & 0xffff_ffff) as usize, colour_at(answer, 32))
            }
        };
        tally.meetings += 1;
        if other == me {
            tally.self_meetings += 1;
        }
        colour = complement(colour, other_colour);
        word = place.load(Ordering::Acquire);
    }
}

/// Waits for a partner's answer, spinning and then yielding, and clears it.
fn await_answer(slot: &AtomicU64) -> u64 {
    let mut spins = 0;
    loop {
        let answer = slot.load(Ordering::Acquire);
        if answer != 0 {
            // Only this creature clears its slot, and no partner can write
            // again before this creature registers anew (after this store).
            slot.store(0, Ordering::Relaxed);
            return answer;
        }
        if spins < SPINS_BEFORE_YIELD {
            spins += 1;
            hint::spin_loop();
        } else {
            thread::yield_now();
        }
    }
}

/// A start gate: closed until every creature thread exists.
#[derive(Default)]
struct Gate {
    opened: AtomicBool,
    go: AtomicBool,
}

impl Gate {
    /// Opens the gate; `go` says whether the game is on.
    fn open(&self, go: bool) {
        self.go.store(go, Ordering::Relaxed);
        self.opened.store(true, Ordering::Release);
    }

    /// Waits until the gate opens; true when the game is on.
    fn wait(&self) -> bool {
        while !self.opened.load(Ordering::Acquire) {
            thread::yield_now();
        }
        self.go.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::chameneos::colour::{GAME_TEN, GAME_THREE};

    #[test]
    fn words_round_trip() {
        assert_eq!(unpack(pack(7, None)), (7, None));
        assert_eq!(
            unpack(pack(MAX_MEETINGS, Some((0, Colour::Blue)))),
            (MAX_MEETINGS, Some((0, Colour::Blue)))
        );
        assert_eq!(
            unpack(pack(1, Some((MAX_CREATURES - 1, Colour::Yellow)))),
            (1, Some((MAX_CREATURES - 1, Colour::Yellow)))
        );
    }

    #[test]
    fn both_games_are_valid() {
        for colours in [&GAME_THREE[..], &GAME_TEN[..]] {
            for meetings in [1, 2, 600, 20_000] {
                play(colours, meetings).unwrap().validate(meetings).unwrap();
            }
        }
    }

    #[test]
    fn oversized_games_are_refused() {
        assert!(play(&GAME_THREE, MAX_MEETINGS + 1).is_err());
    }
}

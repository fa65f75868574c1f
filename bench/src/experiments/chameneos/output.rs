//! What a game produces (each creature's meetings and self-meetings), the
//! check every run must pass, and the program's output in the exact format of
//! the Benchmarks Game's chameneos-redux.
//!
//! The output, for N = 600 (per-creature counts vary from run to run):
//!
//! ```text
//! blue + blue -> blue
//! ... the nine pairs, blue red yellow by blue red yellow ...
//! yellow + yellow -> yellow
//!
//!  blue red yellow
//! 400 zero
//! 400 zero
//! 400 zero
//!  one two zero zero
//!
//!  blue red yellow red yellow blue red yellow red blue
//! 120 zero
//! ... one line per creature ...
//!  one two zero zero
//!
//! ```
//!
//! Each creature line is its meeting count followed by its self-meetings
//! (meetings with itself, which a correct meeting place never arranges)
//! spelled out; the last line of a game is the total, always 2N, spelled digit
//! by digit. Every spelled number has a space before each digit.

use std::fmt::Write as _;

use crate::experiments::chameneos::colour::{complement, Colour};
use crate::runner::WorkloadError;

/// What one creature did in a game.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Meetings this creature took part in.
    pub meetings: u64,
    /// Meetings whose partner was this creature itself: always zero when the
    /// meeting place is correct.
    pub self_meetings: u64,
}

/// The result of one game, in creature order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    /// The creatures' starting colours.
    pub colours: Vec<Colour>,
    /// Each creature's tally, in the same order.
    pub tallies: Vec<Tally>,
}

impl Game {
    /// Meetings summed over the creatures: each meeting counts twice, once
    /// for each partner.
    pub fn total(&self) -> u64 {
        self.tallies.iter().map(|t| t.meetings).sum()
    }

    /// Checks the game against the rules for `meetings` meetings: one tally
    /// per creature, a total of exactly twice the meetings, and no creature
    /// that met itself.
    pub fn validate(&self, meetings: u64) -> Result<(), WorkloadError> {
        let creatures = self.colours.len();
        if self.tallies.len() != creatures {
            return Err(WorkloadError::new(format!(
                "validation failed: {} tallies for {creatures} creatures",
                self.tallies.len()
            )));
        }
        let expected = meetings
            .checked_mul(2)
            .ok_or_else(|| WorkloadError::new(format!("{meetings} meetings overflow the total")))?;
        if self.total() != expected {
            return Err(WorkloadError::new(format!(
                "validation failed: the {creatures} creatures met {} times in all, expected \
                 2 × {meetings} = {expected}",
                self.total()
            )));
        }
        if let Some((i, t)) = self
            .tallies
            .iter()
            .enumerate()
            .find(|(_, t)| t.self_meetings != 0)
        {
            return Err(WorkloadError::new(format!(
                "validation failed: creature {i} of {creatures} met itself {} times",
                t.self_meetings
            )));
        }
        Ok(())
    }
}

/// `n` spelled digit by digit, each digit after a space: 1200 is
/// `" one two zero zero"`, 0 is `" zero"`.
pub fn spell(n: u64) -> String {
    const DIGITS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let mut out = String::new();
    for digit in n.to_string().bytes() {
        out.push(' ');
        out.push_str(DIGITS[usize::from(digit - b'0')]);
    }
    out
}

/// The program's whole output: the complement table, a blank line, then each
/// game followed by a blank line.
pub fn render(games: &[Game]) -> String {
    let mut out = String::new();
    for a in Colour::ALL {
        for b in Colour::ALL {
            let _ = writeln!(out, "{a} + {b} -> {}", complement(a, b));
        }
    }
    out.push('\n');
    for game in games {
        for colour in &game.colours {
            let _ = write!(out, " {colour}");
        }
        out.push('\n');
        for tally in &game.tallies {
            let _ = writeln!(out, "{}{}", tally.meetings, spell(tally.self_meetings));
        }
        let _ = writeln!(out, "{}", spell(game.total()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::chameneos::colour::{GAME_TEN, GAME_THREE};

    fn game(colours: &[Colour], meetings: &[u64]) -> Game {
        Game {
            colours: colours.to_vec(),
            tallies: meetings
                .iter()
                .map(|&m| Tally {
                    meetings: m,
                    self_meetings: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn numbers_are_spelled_digit_by_digit_with_leading_spaces() {
        assert_eq!(spell(0), " zero");
        assert_eq!(spell(7), " seven");
        assert_eq!(spell(1200), " one two zero zero");
        assert_eq!(spell(12_000_000), " one two zero zero zero zero zero zero");
        assert_eq!(
            spell(9_876_543_210),
            " nine eight seven six five four three two one zero"
        );
    }

    #[test]
    fn output_is_exactly_the_benchmarks_game_format() {
        let games = [
            game(&GAME_THREE, &[400, 401, 399]),
            game(
                &GAME_TEN,
                &[120, 121, 119, 120, 120, 120, 120, 120, 120, 120],
            ),
        ];
        let expected = "\
blue + blue -> blue
blue + red -> yellow
blue + yellow -> red
red + blue -> yellow
red + red -> red
red + yellow -> blue
yellow + blue -> red
yellow + red -> blue
yellow + yellow -> yellow

 blue red yellow
400 zero
401 zero
399 zero
 one two zero zero

 blue red yellow red yellow blue red yellow red blue
120 zero
121 zero
119 zero
120 zero
120 zero
120 zero
120 zero
120 zero
120 zero
120 zero
 one two zero zero

";
        assert_eq!(render(&games), expected);
    }

    #[test]
    fn self_meetings_are_spelled_on_the_creature_line() {
        let mut g = game(&GAME_THREE, &[2, 2, 2]);
        g.tallies[1].self_meetings = 12;
        assert!(render(&[g]).contains("\n2 one two\n"));
    }

    #[test]
    fn validation_accepts_a_correct_game() {
        assert_eq!(game(&GAME_THREE, &[400, 401, 399]).validate(600), Ok(()));
    }

    #[test]
    fn validation_refuses_a_wrong_total() {
        let err = game(&GAME_THREE, &[400, 400, 399])
            .validate(600)
            .unwrap_err();
        assert!(err.to_string().contains("met 1199 times"), "{err}");
    }

    #[test]
    fn validation_refuses_a_self_meeting() {
        let mut g = game(&GAME_THREE, &[400, 400, 400]);
        g.tallies[2].self_meetings = 1;
        let err = g.validate(600).unwrap_err();
        assert!(
            err.to_string().contains("creature 2 of 3 met itself"),
            "{err}"
        );
    }

    #[test]
    fn validation_refuses_a_missing_creature() {
        let mut g = game(&GAME_THREE, &[600, 600, 0]);
        g.tallies.pop();
        assert!(g.validate(600).is_err());
    }
}

//! The chameneos colours, the complement rule two creatures apply when they
//! meet, and the starting colours of the games.
//!
//! The complement is a `match` over the nine pairs rather than arithmetic on
//! colour numbers (the usual `3 - a - b` trick): the Benchmarks Game asks for
//! the rule to be written out, and a table that reads like the printed one is
//! easier to check than a formula.

use std::fmt;

/// A creature's colour. One byte, so that a meeting message stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Colour {
    /// Blue.
    Blue = 0,
    /// Red.
    Red = 1,
    /// Yellow.
    Yellow = 2,
}

impl Colour {
    /// Every colour, in the order the complement table is printed.
    pub const ALL: [Colour; 3] = [Colour::Blue, Colour::Red, Colour::Yellow];

    /// The colour's name as the output spells it.
    pub fn name(self) -> &'static str {
        match self {
            Colour::Blue => "blue",
            Colour::Red => "red",
            Colour::Yellow => "yellow",
        }
    }

    /// The colour whose `self as u8` is `code`, for packed atomic words.
    pub fn from_code(code: u8) -> Option<Colour> {
        match code {
            0 => Some(Colour::Blue),
            1 => Some(Colour::Red),
            2 => Some(Colour::Yellow),
            _ => None,
        }
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The colour a creature of colour `mine` takes after meeting one of colour
/// `theirs`: the same colour stays, two different colours give the third.
pub fn complement(mine: Colour, theirs: Colour) -> Colour {
    use Colour::{Blue, Red, Yellow};
    match (mine, theirs) {
        (Blue, Blue) => Blue,
        (Blue, Red) => Yellow,
        (Blue, Yellow) => Red,
        (Red, Blue) => Yellow,
        (Red, Red) => Red,
        (Red, Yellow) => Blue,
        (Yellow, Blue) => Red,
        (Yellow, Red) => Blue,
        (Yellow, Yellow) => Yellow,
    }
}

/// The first game of chameneos-redux: three creatures.
pub const GAME_THREE: [Colour; 3] = [Colour::Blue, Colour::Red, Colour::Yellow];

/// The second game of chameneos-redux: ten creatures.
pub const GAME_TEN: [Colour; 10] = [
    Colour::Blue,
    Colour::Red,
    Colour::Yellow,
    Colour::Red,
    Colour::Yellow,
    Colour::Blue,
    Colour::Red,
    Colour::Yellow,
    Colour::Red,
    Colour::Blue,
];

/// The starting colours of Savina's chameneos: creature `i` takes colour
/// `i mod 3`.
pub fn cycling(creatures: usize) -> Vec<Colour> {
    (0..creatures).map(|i| Colour::ALL[i % 3]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complement_keeps_equal_colours_and_gives_the_third_for_different_ones() {
        for a in Colour::ALL {
            assert_eq!(complement(a, a), a);
            for b in Colour::ALL.into_iter().filter(|&b| b != a) {
                let c = complement(a, b);
                assert!(c != a && c != b, "{a} + {b} -> {c}");
                assert_eq!(complement(b, a), c, "the rule is symmetric");
            }
        }
    }

    #[test]
    fn complement_matches_the_benchmarks_game_table() {
        use Colour::{Blue, Red, Yellow};
        assert_eq!(complement(Blue, Red), Yellow);
        assert_eq!(complement(Blue, Yellow), Red);
        assert_eq!(complement(Red, Yellow), Blue);
    }

    #[test]
    fn codes_round_trip_and_reject_the_rest() {
        for c in Colour::ALL {
            assert_eq!(Colour::from_code(c as u8), Some(c));
        }
        assert_eq!(Colour::from_code(3), None);
    }

    #[test]
    fn games_have_the_benchmarks_game_colours() {
        let names = |g: &[Colour]| g.iter().map(|c| c.name()).collect::<Vec<_>>().join(" ");
        assert_eq!(names(&GAME_THREE), "blue red yellow");
        assert_eq!(
            names(&GAME_TEN),
            "blue red yellow red yellow blue red yellow red blue"
        );
        assert_eq!(names(&cycling(4)), "blue red yellow blue");
    }
}

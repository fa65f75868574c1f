//! Chameneos-redux (the Benchmarks Game's): a meeting-place actor pairs
//! creature actors, as troupe's actor rows and the Pekko peer do; both games
//! (3 and 10 creatures), each warmed up and measured on its own, each run
//! validated (the creatures' meetings add up to 2N, nobody met itself), and
//! the program's output in the Benchmarks Game's format from the last run
//! of each game (`output`), which the bench checks against its own
//! rendering of the reported tallies.
//!
//! Arguments: `--meetings 600000 --threads 2`. RESULT: `meetings`,
//! `threads`, per game `_3`/`_10` the protocol's fields and `tallies`
//! (`[[meetings, self_meetings], ...]` in creature order), `output`.

mod actix;
mod kameo;
mod ractor;

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::Check;
use crate::steady::Steady;
use crate::Library;

/// Blue, red, yellow.
pub const BLUE: u8 = 0;
/// Red.
pub const RED: u8 = 1;
/// Yellow.
pub const YELLOW: u8 = 2;
const NAMES: [&str; 3] = ["blue", "red", "yellow"];

/// The first game's creatures.
pub const THREE: [u8; 3] = [BLUE, RED, YELLOW];
/// The second game's creatures.
pub const TEN: [u8; 10] = [BLUE, RED, YELLOW, RED, YELLOW, BLUE, RED, YELLOW, RED, BLUE];

/// The colour a creature of colour `mine` takes after meeting `theirs`.
pub fn complement(mine: u8, theirs: u8) -> u8 {
    if mine == theirs {
        mine
    } else {
        3 - mine - theirs
    }
}

/// What a creature did in a game: its meetings, and those with itself.
pub type Tally = [u64; 2];

/// Checks a game of `n` meetings.
fn check(n: u64, tallies: &[Tally], checks: &mut Check) {
    let sum: u64 = tallies.iter().map(|t| t[0]).sum();
    let selves: u64 = tallies.iter().map(|t| t[1]).sum();
    checks.that(selves == 0, || {
        format!("creatures met themselves {selves} times")
    });
    checks.that(sum == 2 * n, || {
        format!("meetings sum to {sum}, expected {}", 2 * n)
    });
}

/// `n` spelled digit by digit, each digit after a space.
fn spell(n: u64) -> String {
    const DIGITS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    n.to_string()
        .bytes()
        .map(|d| format!(" {}", DIGITS[usize::from(d - b'0')]))
        .collect()
}

/// The program's output for these games (colours, tallies).
fn render(games: &[(&[u8], &[Tally])]) -> String {
    let mut out = String::new();
    for a in 0..3u8 {
        for b in 0..3u8 {
            let _ = writeln!(
                out,
                "{} + {} -> {}",
                NAMES[a as usize],
                NAMES[b as usize],
                NAMES[complement(a, b) as usize]
            );
        }
    }
    out.push('\n');
    for (colours, tallies) in games {
        for c in *colours {
            let _ = write!(out, " {}", NAMES[*c as usize]);
        }
        out.push('\n');
        for t in *tallies {
            let _ = writeln!(out, "{}{}", t[0], spell(t[1]));
        }
        let _ = writeln!(out, "{}", spell(tallies.iter().map(|t| t[0]).sum()));
        out.push('\n');
    }
    out
}

/// One game on a library: plays `colours` for `n` meetings and returns the
/// seconds it took and the tallies.
pub trait Games {
    /// Plays one game.
    fn game(&mut self, colours: &[u8], n: u64) -> Result<(f64, Vec<Tally>), String>;
}

/// Runs both games on `library` and returns the RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let n = a.num("meetings", 600_000)?;
    if n == 0 {
        return Err("--meetings must be at least 1".into());
    }
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let mut games: Box<dyn Games> = match library {
        Library::Kameo => Box::new(kameo::Runner::new(threads)?),
        Library::Ractor => Box::new(ractor::Runner::new(threads)?),
        Library::Actix => Box::new(actix::Runner::new(threads)),
    };
    let mut checks = Check::default();
    let mut json = Map::new();
    let mut last: Vec<Vec<Tally>> = Vec::new();
    for colours in [&THREE[..], &TEN[..]] {
        let mut tallies = Vec::new();
        let what = format!("{} chameneos-{}", library.name(), colours.len());
        let measured = steady.measure(&what, |_| {
            let (seconds, t) = games.game(colours, n)?;
            check(n, &t, &mut checks);
            tallies = t;
            Ok(seconds * 1e9 / n as f64)
        })?;
        let suffix = format!("_{}", colours.len());
        measured.write_json(&mut json, &suffix);
        json.insert(
            format!("seconds{suffix}"),
            json!(measured.median() * n as f64 / 1e9),
        );
        json.insert(format!("tallies{suffix}"), json!(tallies));
        last.push(tallies);
    }
    json.insert("experiment".into(), json!("chameneos"));
    json.insert("meetings".into(), json!(n));
    json.insert("threads".into(), json!(threads));
    json.insert(
        "output".into(),
        json!(render(&[
            (&THREE[..], &last[0][..]),
            (&TEN[..], &last[1][..])
        ])),
    );
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_is_the_benchmarks_games_format() {
        let out = render(&[(&THREE[..], &[[400, 0], [401, 0], [399, 0]][..])]);
        assert!(
            out.starts_with("blue + blue -> blue\nblue + red -> yellow\n"),
            "{out}"
        );
        assert!(
            out.ends_with(
                "\n blue red yellow\n400 zero\n401 zero\n399 zero\n one two zero zero\n\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn a_wrong_game_fails_its_check() {
        let mut c = Check::default();
        check(600, &[[400, 0], [400, 1], [400, 0]], &mut c);
        assert!(c.failure().unwrap().contains("met themselves 1 times"));
        let mut c = Check::default();
        check(600, &[[400, 0], [400, 0], [399, 0]], &mut c);
        assert!(c.failure().unwrap().contains("sum to 1199"));
    }
}

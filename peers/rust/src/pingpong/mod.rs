//! Ping-pong: one pair bouncing one ball (ns per hop), and many pairs with
//! several balls in flight, as troupe's rows and the Pekko peer's. Checked
//! as theirs: every hop arrives (the players' counts add up to the hops
//! sent, per ball and pair) and in order (each ball's hop counter, as a
//! player sees it, goes down by exactly two from one visit to the next).
//!
//! Arguments: `--msgs 2000000 --pairs 1 --in-flight 1 --threads 2`.
//! RESULT: `msgs` (hops per run), `pairs`, `balls`, `threads`, `ns_per_msg`
//! (median) and the protocol's fields.

mod actix;
mod kameo;
mod ractor;

use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::Check;
use crate::steady::Steady;
use crate::Library;

/// The size of one game.
#[derive(Clone, Copy)]
pub struct Spec {
    /// Pairs playing at once.
    pub pairs: usize,
    /// Balls in flight per pair.
    pub balls: usize,
    /// Hops per ball: the first visit carries this counter, the last 0.
    pub per_ball: u64,
}

impl Spec {
    /// The hops of one run.
    pub fn hops(&self) -> u64 {
        self.per_ball * (self.pairs * self.balls) as u64
    }
}

/// One player's counts after a game.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    /// Hops received.
    pub received: u64,
    /// Hops whose counter was not the one expected.
    pub disorder: u64,
    /// Hops the library refused to send.
    pub refused: u64,
}

/// What a player expects of each ball: the counter of its next visit.
pub struct Expect {
    next: Vec<u64>,
    tally: Tally,
}

impl Expect {
    /// A player of `balls` balls whose first visit carries `first` (the hops
    /// per ball for the server, one less for the other).
    pub fn new(balls: usize, first: u64) -> Expect {
        Expect {
            next: vec![first; balls],
            tally: Tally::default(),
        }
    }

    /// Records a visit of `ball` with counter `left`.
    pub fn visit(&mut self, ball: usize, left: u64) {
        self.tally.received += 1;
        if self.next.get(ball) != Some(&left) {
            self.tally.disorder += 1;
        }
        if let Some(n) = self.next.get_mut(ball) {
            *n = left.wrapping_sub(2);
        }
    }

    /// Records a hop the library refused.
    pub fn refused(&mut self) {
        self.tally.refused += 1;
    }

    /// The counts so far.
    pub fn tally(&self) -> Tally {
        self.tally
    }
}

/// Checks one game's counts, summed over every player.
pub fn check(spec: &Spec, total: Tally, check: &mut Check) {
    // Each ball is received with counters per_ball down to 0.
    let expected = (spec.per_ball + 1) * (spec.pairs * spec.balls) as u64;
    check.that(total.received == expected, || {
        format!(
            "the players received {} hops, expected {expected}",
            total.received
        )
    });
    check.that(total.disorder == 0, || {
        format!("{} hops arrived out of order", total.disorder)
    });
    check.that(total.refused == 0, || {
        format!("the library refused to send {} hops", total.refused)
    });
}

/// Runs the experiment on `library` and returns its RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let msgs = a.num("msgs", 2_000_000)?;
    let pairs = a.num("pairs", 1)? as usize;
    let balls = a.num("in-flight", 1)? as usize;
    let threads = a.threads()?;
    let per_ball = msgs / (pairs * balls).max(1) as u64;
    if per_ball < 1 || pairs == 0 || balls == 0 {
        return Err("--msgs must be at least pairs × in-flight, both at least 1".into());
    }
    let spec = Spec {
        pairs,
        balls,
        per_ball,
    };
    let steady = Steady::from_args(a)?;
    let mut checks = Check::default();
    let what = format!("{} pingpong", library.name());
    let measured = match library {
        Library::Kameo => kameo::measure(threads, spec, &steady, &what, &mut checks)?,
        Library::Ractor => ractor::measure(threads, spec, &steady, &what, &mut checks)?,
        Library::Actix => actix::measure(threads, spec, &steady, &what, &mut checks)?,
    };
    let mut json = Map::new();
    json.insert("experiment".into(), json!("pingpong"));
    json.insert("msgs".into(), json!(spec.hops()));
    json.insert("pairs".into(), json!(pairs));
    json.insert("balls".into(), json!(balls));
    json.insert("threads".into(), json!(threads));
    json.insert("ns_per_msg".into(), json!(measured.median()));
    measured.write_json(&mut json, "");
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

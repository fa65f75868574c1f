//! The original chameneos sweep (docs/experiments.md, chameneos): both games of chameneos-redux at 1, 10, 100, ...
//! meetings, on actors and on threads, one row per implementation, game and
//! point (`actor-3-n1000`), and a table of seconds per point.
//!
//! The post timed whole programs (JVM start included) and found 1,000,000
//! meetings took 12.8 s with Scala actors and 34.4 s with Akka in 2009. Here
//! a point is timed from spawning the creatures to the last tally, so the
//! smallest points show what a game costs to set up and tear down.

use serde_json::Value;

use crate::experiments::chameneos::colour::{GAME_TEN, GAME_THREE};
use crate::experiments::chameneos::{game_workload, seconds, Dispatcher, Implementation};
use crate::report::Row;
use crate::runner::Workload;
use crate::shared::group_thousands;
use crate::table::{Align, Table};

/// The sweep's rows go under their own experiment name, so that their table
/// is separate from the main rows'.
pub const EXPERIMENT: &str = "chameneos-sweep";

/// The meeting counts of the sweep up to `max`: the powers of ten.
pub fn points(max: u64) -> Vec<u64> {
    std::iter::successors(Some(1u64), |n| n.checked_mul(10))
        .take_while(|&n| n <= max)
        .collect()
}

/// Every sweep row: per point, threads then actors, 3 then 10 creatures.
pub fn workloads(max: u64, dispatcher: Dispatcher) -> Vec<Workload> {
    let mut rows = Vec::new();
    for meetings in points(max) {
        for implementation in [Implementation::Threads, Implementation::Actor] {
            for colours in [&GAME_THREE[..], &GAME_TEN[..]] {
                let variant = format!("{}-{}-n{meetings}", implementation.name(), colours.len());
                rows.push(
                    game_workload(
                        variant,
                        implementation,
                        colours.to_vec(),
                        meetings,
                        dispatcher,
                    )
                    .param("sweep", true),
                );
            }
        }
    }
    rows
}

/// The sweep as a table of median seconds: per point, each game and both
/// games for actors and for threads, and the ratio of the two totals. A game
/// that did not run (filtered out) shows as `-`.
pub fn table(rows: &[&Row]) -> Table {
    let sweep: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.experiment == EXPERIMENT)
        .collect();
    let lookup = |implementation: &str, creatures: u64, meetings: u64| {
        sweep
            .iter()
            .find(|r| {
                r.params.get("implementation").and_then(Value::as_str) == Some(implementation)
                    && r.params.get("creatures").and_then(Value::as_u64) == Some(creatures)
                    && r.msgs == meetings
            })
            .and_then(|r| seconds(r))
    };
    let mut meetings: Vec<u64> = sweep.iter().map(|r| r.msgs).collect();
    meetings.sort_unstable();
    meetings.dedup();
    let header = [
        "meetings",
        "actor 3",
        "actor 10",
        "actor both",
        "threads 3",
        "threads 10",
        "threads both",
        "actor/threads",
    ]
    .map(String::from)
    .to_vec();
    let fmt = |s: Option<f64>| s.map_or_else(|| "-".to_string(), |s| format!("{s:.6}"));
    let mut table = Vec::new();
    for n in meetings {
        let game = |implementation| {
            let (three, ten) = (lookup(implementation, 3, n), lookup(implementation, 10, n));
            let both = three.zip(ten).map(|(a, b)| a + b);
            (three, ten, both)
        };
        let (a3, a10, actor) = game("actor");
        let (t3, t10, threads) = game("threads");
        let ratio = actor
            .zip(threads)
            .map_or_else(|| "-".to_string(), |(a, t)| format!("{:.2}", a / t));
        table.push(vec![
            group_thousands(n),
            fmt(a3),
            fmt(a10),
            fmt(actor),
            fmt(t3),
            fmt(t10),
            fmt(threads),
            ratio,
        ]);
    }
    Table {
        align: vec![Align::Right; header.len()],
        header,
        rows: table,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;
    use crate::runner::{Measurement, Sample};

    #[test]
    fn points_are_the_powers_of_ten_up_to_the_cap() {
        assert_eq!(points(1), [1]);
        assert_eq!(points(999), [1, 10, 100]);
        assert_eq!(points(10_000_000).len(), 8);
        assert_eq!(points(u64::MAX).last(), Some(&10_000_000_000_000_000_000));
    }

    #[test]
    fn every_point_has_four_uniquely_named_rows() {
        let rows = workloads(100, Dispatcher::DEFAULT);
        let names: Vec<&str> = rows.iter().map(Workload::variant).collect();
        assert_eq!(
            names[..4],
            ["threads-3-n1", "threads-10-n1", "actor-3-n1", "actor-10-n1"]
        );
        assert_eq!(names.len(), 12);
    }

    fn row(implementation: &str, creatures: u64, meetings: u64, seconds: f64) -> Row {
        let mut params = Map::new();
        params.insert("implementation".into(), implementation.into());
        params.insert("creatures".into(), creatures.into());
        params.insert("seconds".into(), seconds.into());
        let sample = Sample {
            msgs: meetings,
            elapsed: std::time::Duration::from_secs_f64(seconds),
        };
        let m = Measurement::new(sample, vec![sample]);
        Row::new(EXPERIMENT, "x", params, &m)
    }

    #[test]
    fn the_table_adds_the_games_and_divides_the_totals() {
        let rows = [
            row("actor", 3, 1000, 0.5),
            row("actor", 10, 1000, 1.0),
            row("threads", 3, 1000, 0.25),
            row("threads", 10, 1000, 0.5),
            row("actor", 3, 10, 0.001),
        ];
        let table = table(&rows.iter().collect::<Vec<_>>()).markdown();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[0].contains("| actor both |"));
        assert!(
            lines[2].starts_with("|       10 | 0.001000 |        - |"),
            "{table}"
        );
        assert!(lines[3].contains("|   1.500000 |"), "{table}");
        assert!(lines[3].ends_with("|          2.00 |"), "{table}");
    }
}

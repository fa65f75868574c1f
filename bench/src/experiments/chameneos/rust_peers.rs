//! The chameneos experiment's Rust peer rows: both games of chameneos-redux
//! on kameo, ractor and actix, on each thread count troupe's `actor-3` and
//! `actor-10` rows are played on ([`Settings::dispatchers`]), each row
//! compared with troupe's row of the same threads (`kameo-3-w1` with
//! `actor-3-w1-tp100`, ...). The libraries have no throughput setting.
//!
//! Besides the peer's own checks (meetings add up to 2N, nobody met
//! itself), the program's output the peer printed from its last run of
//! each game must be exactly this bench's rendering of the tallies it
//! reported ([`output::render`]), which [`Game::validate`] checks again.

use serde_json::{json, Map, Value};

use super::colour::{GAME_TEN, GAME_THREE};
use super::output::{self, Game, Tally};
use super::{add_seconds, Settings, EXPERIMENT};
use crate::peer::suffixed;
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::rust_peers::{row, run, LIBRARIES};

/// One row per library, game and thread count; a process per thread count.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let n = settings.meetings.to_string();
    let repeats = options.repeats.to_string();
    let mut rows = Vec::new();
    for library in LIBRARIES {
        for dispatcher in settings.dispatchers() {
            let threads = dispatcher.workers.to_string();
            let r = run(
                library,
                &[
                    "chameneos",
                    "--meetings",
                    &n,
                    "--threads",
                    &threads,
                    "--repeats",
                    &repeats,
                ],
            )?;
            let output_failure = check_output(&r, settings.meetings).err();
            for creatures in [3, 10] {
                let mut p = suffixed(&r, &format!("_{creatures}"));
                p.remove("seconds");
                p.remove("tallies");
                // Both games share the process, its runtime and its checks.
                for key in ["failure", "threads"] {
                    if let Some(v) = r.get(key) {
                        p.insert(key.into(), v.clone());
                    }
                }
                if let Some(why) = &output_failure {
                    p.entry("failure").or_insert_with(|| json!(why));
                }
                let variant = format!("{library}-{creatures}-w{}", dispatcher.workers);
                p.insert("implementation".into(), json!(library));
                p.insert("creatures".into(), json!(creatures));
                p.insert("meetings".into(), json!(settings.meetings));
                let mut row = row(
                    library,
                    EXPERIMENT,
                    &variant,
                    &format!("actor-{creatures}-{}", dispatcher.label()),
                    settings.meetings,
                    p,
                )?;
                add_seconds(&mut row);
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// Checks the peer's program output against this bench's rendering of the
/// tallies it reported, and the tallies against the game's rules.
fn check_output(r: &Map<String, Value>, meetings: u64) -> Result<(), String> {
    let tallies = |key: &str| -> Result<Vec<Tally>, String> {
        let list = r
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("the peer reported no {key}"))?;
        list.iter()
            .map(|t| match t.as_array().map(|a| a.as_slice()) {
                Some([m, s]) => Ok(Tally {
                    meetings: m.as_u64().unwrap_or(u64::MAX),
                    self_meetings: s.as_u64().unwrap_or(u64::MAX),
                }),
                _ => Err(format!("{key}: {t} is not [meetings, self-meetings]")),
            })
            .collect()
    };
    let games = [
        Game {
            colours: GAME_THREE.to_vec(),
            tallies: tallies("tallies_3")?,
        },
        Game {
            colours: GAME_TEN.to_vec(),
            tallies: tallies("tallies_10")?,
        },
    ];
    for game in &games {
        game.validate(meetings).map_err(|e| e.to_string())?;
    }
    let printed = r.get("output").and_then(Value::as_str).unwrap_or_default();
    if printed != output::render(&games) {
        return Err(format!(
            "the peer's program output is not the Benchmarks Game's for its tallies:\n{printed}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(output: &str, second: u64) -> Map<String, Value> {
        let r = json!({
            "tallies_3": [[400, 0], [second, 0], [400, 0]],
            "tallies_10": [[120, 0], [120, 0], [120, 0], [120, 0], [120, 0],
                           [120, 0], [120, 0], [120, 0], [120, 0], [120, 0]],
            "output": output,
        });
        r.as_object().unwrap().clone()
    }

    #[test]
    fn the_peers_output_must_be_the_programs_for_its_tallies() {
        let games = |second| {
            [
                Game {
                    colours: GAME_THREE.to_vec(),
                    tallies: [400, second, 400]
                        .map(|m| Tally {
                            meetings: m,
                            self_meetings: 0,
                        })
                        .to_vec(),
                },
                Game {
                    colours: GAME_TEN.to_vec(),
                    tallies: vec![
                        Tally {
                            meetings: 120,
                            self_meetings: 0
                        };
                        10
                    ],
                },
            ]
        };
        let good = output::render(&games(400));
        assert_eq!(check_output(&result(&good, 400), 600), Ok(()));
        // Output that does not match the reported tallies.
        let err = check_output(&result(&good.replace("400 zero", "401 zero"), 400), 600);
        assert!(err.unwrap_err().contains("not the Benchmarks Game's"));
        // Tallies that break the rules, whatever the output says.
        let bad = output::render(&games(399));
        let err = check_output(&result(&bad, 399), 600).unwrap_err();
        assert!(err.contains("expected 2 × 600"), "{err}");
    }
}

//! The chameneos experiment's Apache Pekko rows: both games of
//! chameneos-redux on the peer, on each dispatcher setting troupe's
//! `actor-3`/`actor-10` rows are played on ([`Settings::dispatchers`]), so
//! that every Pekko row has a troupe row of the same setting to be
//! compared with (`pekko-3-w2-tp5` with `actor-3-w2-tp5`, ...).

use serde_json::json;

use super::{add_seconds, Settings, EXPERIMENT};
use crate::peer::{row, run, suffixed};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// One row per game and setting, like troupe's; a JVM per setting.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let n = settings.meetings.to_string();
    let repeats = options.repeats.to_string();
    let mut rows = Vec::new();
    for dispatcher in settings.dispatchers() {
        let threads = dispatcher.workers.to_string();
        let throughput = dispatcher.throughput.to_string();
        let r = run(&[
            "chameneos",
            "--meetings",
            &n,
            "--repeats",
            &repeats,
            "--threads",
            &threads,
            "--throughput",
            &throughput,
        ])?;
        for creatures in [3, 10] {
            // The game's own samples, warm-up and protocol (`samples_3`, ...).
            let mut p = suffixed(&r, &format!("_{creatures}"));
            p.remove("seconds");
            // Both games share the JVM, its dispatcher and its checks.
            for key in ["failure", "threads"] {
                if let Some(v) = r.get(key) {
                    p.insert(key.into(), v.clone());
                }
            }
            let label = dispatcher.label();
            p.insert(
                "variant".into(),
                json!(format!("pekko-{creatures}-{label}")),
            );
            p.insert("implementation".into(), json!("pekko"));
            p.insert("creatures".into(), json!(creatures));
            p.insert("meetings".into(), json!(settings.meetings));
            p.insert("workers".into(), json!(dispatcher.workers));
            p.insert("throughput".into(), json!(dispatcher.throughput));
            let mut row = row(
                EXPERIMENT,
                &format!("pekko-{creatures}-{label}"),
                &format!("actor-{creatures}-{label}"),
                settings.meetings,
                p,
            )?;
            add_seconds(&mut row);
            rows.push(row);
        }
    }
    Ok(rows)
}

//! The chameneos experiment's Apache Pekko rows: both games of chameneos-redux on the peer.

use serde_json::{json, Map};

use super::{Settings, EXPERIMENT};
use crate::peer::{num, row, run};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};

/// Both games of chameneos-redux, one row per game like troupe's.
pub fn rows(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let n = settings.meetings.to_string();
    let repeats = options.repeats.to_string();
    let r = run(&["chameneos", "--meetings", &n, "--repeats", &repeats])?;
    Ok([(3, "seconds_3"), (10, "seconds_10")]
        .iter()
        .map(|&(creatures, key)| {
            let seconds = num(&r, key);
            let mut p = Map::new();
            p.insert("implementation".into(), json!("pekko"));
            p.insert("creatures".into(), json!(creatures));
            p.insert("meetings".into(), json!(settings.meetings));
            p.insert("seconds".into(), json!(seconds));
            p.insert(
                "meetings_per_s".into(),
                json!(settings.meetings as f64 / seconds),
            );
            row(
                EXPERIMENT,
                &format!("pekko-{creatures}"),
                &format!("actor-{creatures}"),
                settings.meetings,
                seconds * 1e9 / settings.meetings as f64,
                p,
            )
        })
        .collect())
}

//! `troupe-bench compare OLD.json NEW.json`: the change of every row between
//! two saved runs, for regression tracking.
//!
//! Rows are matched by experiment, variant and the parameters that define
//! the workload: the keys of the experiment that owns the row
//! ([`crate::experiments::Experiment::keys`]; for rows no experiment owns,
//! `clients`, `txlog`, `meetings`, `creatures`, `connections` and `jobs`). The compared figure is the median ns per message
//! (for trading: wall time per order), so a positive change is slower. A
//! change beyond the threshold is flagged; the command still exits 0 (it
//! reports, it does not judge noise).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::report::{Report, Row};

/// The keys of rows no experiment owns.
const KEY_PARAMS: [&str; 6] = [
    "clients",
    "txlog",
    "meetings",
    "creatures",
    "connections",
    "jobs",
];

/// What identifies a row across runs: experiment, variant and the
/// experiment's key parameters.
pub fn key(r: &Row) -> String {
    let mut k = format!("{} {}", r.experiment, r.variant);
    let keys = crate::experiments::find(&r.experiment).map_or(&KEY_PARAMS[..], |e| e.keys());
    for &p in keys {
        if let Some(v) = r.params.get(p) {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let _ = write!(k, " {p}={v}");
        }
    }
    k
}

/// Loads a saved run.
pub fn load(path: &Path) -> Result<Report, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a troupe-bench JSON file: {e}", path.display()))
}

/// The comparison as a Markdown table plus the unmatched rows.
pub fn render(old: &Report, new: &Report, threshold_pct: f64) -> String {
    let old_rows: BTreeMap<String, &Row> = old.rows.iter().map(|r| (key(r), r)).collect();
    let new_rows: BTreeMap<String, &Row> = new.rows.iter().map(|r| (key(r), r)).collect();
    let mut out =
        String::from("| row | old ns/msg | new ns/msg | change | |\n|---|---:|---:|---:|---|\n");
    let (mut worse, mut better) = (0, 0);
    for (k, n) in &new_rows {
        let Some(o) = old_rows.get(k) else { continue };
        let change = (n.ns_per_msg - o.ns_per_msg) / o.ns_per_msg * 100.0;
        let flag = if change > threshold_pct {
            worse += 1;
            "slower"
        } else if change < -threshold_pct {
            better += 1;
            "faster"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {k} | {:.1} | {:.1} | {change:+.1}% | {flag} |",
            o.ns_per_msg, n.ns_per_msg
        );
    }
    let _ = writeln!(
        out,
        "\n{worse} rows slower and {better} faster by more than {threshold_pct}%."
    );
    for (k, _) in old_rows.iter().filter(|(k, _)| !new_rows.contains_key(*k)) {
        let _ = writeln!(out, "only in the old run: {k}");
    }
    for (k, _) in new_rows.iter().filter(|(k, _)| !old_rows.contains_key(*k)) {
        let _ = writeln!(out, "only in the new run: {k}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Machine, RunInfo};
    use serde_json::json;

    fn row(variant: &str, clients: u64, ns: f64) -> Row {
        Row {
            experiment: "trading".into(),
            variant: variant.into(),
            msgs: 1,
            repeats: 1,
            ns_per_msg: ns,
            msgs_per_s: 1e9 / ns,
            min_ns_per_msg: ns,
            max_ns_per_msg: ns,
            samples_ns_per_msg: vec![ns],
            warmup_ns_per_msg: ns,
            params: json!({"clients": clients, "txlog": "off"})
                .as_object()
                .unwrap()
                .clone(),
            protocol: String::new(),
            failure: None,
        }
    }

    fn report(rows: Vec<Row>) -> Report {
        Report {
            machine: Machine::detect(),
            run: RunInfo {
                command: vec![],
                started_unix_s: 0,
                peak_rss_bytes: None,
                duration_s: None,
            },
            rows,
        }
    }

    #[test]
    fn rows_match_by_workload_and_changes_are_flagged() {
        let old = report(vec![
            row("one-way/off", 1, 100.0),
            row("one-way/off", 10, 100.0),
            row("sync/off", 1, 10.0),
        ]);
        let new = report(vec![
            row("one-way/off", 1, 150.0),
            row("one-way/off", 10, 95.0),
            row("rr/off", 1, 5.0),
        ]);
        let text = render(&old, &new, 10.0);
        assert!(
            text.contains(
                "| trading one-way/off clients=1 txlog=off | 100.0 | 150.0 | +50.0% | slower |"
            ),
            "{text}"
        );
        assert!(
            text.contains("clients=10 txlog=off | 100.0 | 95.0 | -5.0% |  |"),
            "{text}"
        );
        assert!(text.contains("1 rows slower and 0 faster"));
        assert!(text.contains("only in the old run: trading sync/off"));
        assert!(text.contains("only in the new run: trading rr/off"));
    }
}

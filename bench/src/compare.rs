//! `troupe-bench compare OLD.json NEW.json`: the change of every row between
//! two saved runs, for regression tracking.
//!
//! Rows are matched by experiment, variant and the parameters that define
//! the workload: the keys of the experiment that owns the row
//! ([`crate::experiments::Experiment::KEYS`]; for rows no experiment owns,
//! `clients`, `txlog`, `meetings`, `creatures`, `connections` and `jobs`). The compared figure is the median ns per message
//! (for trading: wall time per order), so a positive change is slower. A
//! change beyond the threshold is flagged; the command still exits 0 (it
//! reports, it does not judge noise).
//!
//! Each side may be several runs (`--old`/`--new` repeated: runs of the two
//! binaries taken in turn, so that both meet the machine's moods alike). A
//! side's figure is then the median of its runs' medians, and every row also
//! shows each side's spread: the fastest and slowest measured sample of all
//! its runs. A change beyond the threshold whose two spreads overlap is
//! flagged as inside the spread: the runs of one side alone vary that much.
//! Rows that carry the cache-line probe (`core_rtt_ns`) show its range per
//! side, so a change that follows the machine's mode can be told from one
//! that follows the code (docs/experiments.md, "Reading the figures").

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::report::{Report, Row};
use crate::runner::summarize;

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

/// One side's runs of one row.
struct Side<'a> {
    rows: Vec<&'a Row>,
}

impl Side<'_> {
    /// The median of the runs' medians.
    fn figure(&self) -> f64 {
        let medians: Vec<f64> = self.rows.iter().map(|r| r.ns_per_msg).collect();
        summarize(&medians).map_or(f64::NAN, |s| s.median)
    }

    /// The fastest and slowest measured sample over the side's runs.
    fn spread(&self) -> (f64, f64) {
        let min = self
            .rows
            .iter()
            .map(|r| r.min_ns_per_msg)
            .fold(f64::INFINITY, f64::min);
        let max = self
            .rows
            .iter()
            .map(|r| r.max_ns_per_msg)
            .fold(f64::NEG_INFINITY, f64::max);
        (min, max)
    }

    /// The range of the cache-line probes taken around the side's runs of
    /// the row, if it has any.
    fn probes(&self) -> String {
        let probes: Vec<f64> = self
            .rows
            .iter()
            .filter_map(|r| r.params.get(crate::core_latency::PARAM))
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(Value::as_f64)
            .collect();
        match summarize(&probes) {
            Some(s) => format!("{:.0}-{:.0}", s.min, s.max),
            None => "-".into(),
        }
    }
}

/// Every side's rows by key, in key order.
fn by_key(runs: &[Report]) -> BTreeMap<String, Side<'_>> {
    let mut sides: BTreeMap<String, Side<'_>> = BTreeMap::new();
    for row in runs.iter().flat_map(|r| &r.rows) {
        sides
            .entry(key(row))
            .or_insert_with(|| Side { rows: Vec::new() })
            .rows
            .push(row);
    }
    sides
}

/// The comparison as a Markdown table plus the unmatched rows. `old` and
/// `new` each hold one or more runs (module header).
pub fn render(old: &[Report], new: &[Report], threshold_pct: f64) -> String {
    let old_rows = by_key(old);
    let new_rows = by_key(new);
    let mut out = format!(
        "{} old run(s), {} new run(s); figure: median of the runs' medians; \
         spread: fastest..slowest sample of a side's runs; probes: core_rtt_ns\n\n",
        old.len(),
        new.len()
    );
    out.push_str(
        "| row | old ns/msg | new ns/msg | change | old spread | new spread | old probes | new probes | |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let (mut worse, mut worse_apart, mut better, mut better_apart) = (0, 0, 0, 0);
    for (k, n) in &new_rows {
        let Some(o) = old_rows.get(k) else { continue };
        let (of, nf) = (o.figure(), n.figure());
        let change = (nf - of) / of * 100.0;
        let (omin, omax) = o.spread();
        let (nmin, nmax) = n.spread();
        let apart = omax < nmin || nmax < omin;
        let flag = if change > threshold_pct {
            worse += 1;
            worse_apart += usize::from(apart);
            if apart {
                "slower"
            } else {
                "slower, inside the spread"
            }
        } else if change < -threshold_pct {
            better += 1;
            better_apart += usize::from(apart);
            if apart {
                "faster"
            } else {
                "faster, inside the spread"
            }
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {k} | {of:.1} | {nf:.1} | {change:+.1}% | {omin:.1}-{omax:.1} | {nmin:.1}-{nmax:.1} | {} | {} | {flag} |",
            o.probes(),
            n.probes()
        );
    }
    let _ = writeln!(
        out,
        "\n{worse} rows slower and {better} faster by more than {threshold_pct}%; \
         of these, {worse_apart} slower and {better_apart} faster with spreads apart."
    );
    for k in old_rows.keys().filter(|k| !new_rows.contains_key(*k)) {
        let _ = writeln!(out, "only in the old run: {k}");
    }
    for k in new_rows.keys().filter(|k| !old_rows.contains_key(*k)) {
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
        let mut row = crate::report::tests::row("trading", variant, &[ns]);
        row.params = json!({"clients": clients, "txlog": "off"})
            .as_object()
            .unwrap()
            .clone();
        row
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
        let text = render(&[old], &[new], 10.0);
        assert!(
            text.contains(
                "| trading one-way/off clients=1 txlog=off | 100.0 | 150.0 | +50.0% \
                 | 100.0-100.0 | 150.0-150.0 | - | - | slower |"
            ),
            "{text}"
        );
        assert!(
            text.contains("clients=10 txlog=off | 100.0 | 95.0 | -5.0% |"),
            "{text}"
        );
        assert!(text.contains("1 rows slower and 0 faster"), "{text}");
        assert!(text.contains("only in the old run: trading sync/off"));
        assert!(text.contains("only in the new run: trading rr/off"));
    }

    /// A row with a spread of samples and the probes taken around it.
    fn spread_row(ns: f64, min: f64, max: f64, probes: [f64; 2]) -> Row {
        let mut r = row("one-way/off", 10, ns);
        r.min_ns_per_msg = min;
        r.max_ns_per_msg = max;
        r.params
            .insert(crate::core_latency::PARAM.into(), json!(probes));
        r
    }

    #[test]
    fn several_runs_per_side_pool_into_median_spread_and_probes() {
        let old = [
            report(vec![spread_row(100.0, 98.0, 104.0, [60.0, 70.0])]),
            report(vec![spread_row(110.0, 105.0, 180.0, [300.0, 320.0])]),
            report(vec![spread_row(104.0, 101.0, 106.0, [65.0, 66.0])]),
        ];
        // 10 % slower at the median, but inside the old side's spread.
        let new = [
            report(vec![spread_row(114.0, 112.0, 118.0, [61.0, 64.0])]),
            report(vec![spread_row(115.0, 113.0, 116.0, [62.0, 63.0])]),
        ];
        let text = render(&old, &new, 3.0);
        assert!(
            text.contains(
                "| 104.0 | 114.5 | +10.1% | 98.0-180.0 | 112.0-118.0 | 60-320 | 61-64 \
                 | slower, inside the spread |"
            ),
            "{text}"
        );
        assert!(text.contains("3 old run(s), 2 new run(s)"), "{text}");
        assert!(
            text.contains("1 rows slower and 0 faster by more than 3%; of these, 0 slower"),
            "{text}"
        );
        // Without the slow old run the spreads are apart.
        let text = render(&[old[0].clone(), old[2].clone()], &new, 3.0);
        assert!(text.contains("| 102.0 | 114.5 | +12.3% |"), "{text}");
        assert!(text.contains("| slower |"), "{text}");
    }
}

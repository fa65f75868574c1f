//! `--processes N`: the same command run in N fresh processes, one after
//! the other, and every row summarised over them. A runtime can settle
//! into a different steady state depending on how its process started
//! (thread placement, memory layout), which the runs inside one process
//! never show; the merged row's figure is the median of the processes'
//! medians, its min and max the fastest and the slowest process, and its
//! parameters keep every process's median (`process_ns_per_msg`) and the
//! ratio of the slowest to the fastest (`process_spread`).
//!
//! Each child gets the parent's arguments minus `--processes` and the
//! outputs the parent writes itself (`--json`, `--readme`, `--docs`,
//! `--report`),
//! plus `--json` to a file of its own and, for `all`, `--no-report`.

use std::collections::BTreeMap;
use std::process::Stdio;

use serde_json::{json, Map, Value};

use crate::compare;
use crate::experiments;
use crate::report::Row;
use crate::runner::summarize;

/// Flags the parent handles; each takes a value.
const PARENT_ONLY: [&str; 5] = ["--processes", "--json", "--readme", "--docs", "--report"];

/// The child's arguments: `args` (without the program) minus the
/// parent-only flags and their values.
pub fn child_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        let flag = arg.split('=').next().unwrap_or(arg);
        if PARENT_ONLY.contains(&flag) {
            skip_value = !arg.contains('=');
            continue;
        }
        out.push(arg.clone());
    }
    out
}

/// Runs this binary with `args` (the parent's, program excluded) in `n`
/// fresh processes and returns every row merged over them.
pub fn run(n: u32, args: &[String], is_all: bool) -> Result<Vec<Row>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let base = child_args(args);
    let mut runs = Vec::new();
    for i in 1..=n {
        eprintln!("troupe-bench: process {i} of {n}");
        let json = dir.path().join(format!("process-{i}.json"));
        let mut command = crate::child::this_binary().map_err(|e| e.to_string())?;
        command.args(&base).arg("--json").arg(&json);
        if is_all && !base.iter().any(|a| a == "--no-report") {
            command.arg("--no-report");
        }
        // The children's tables would repeat what the merged one says.
        let status = command
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot start process {i}: {e}"))?;
        // A failed row still writes its JSON (and fails the child): merge
        // what was measured and let the merged row carry the failure.
        let rows = compare::load(&json)
            .map(|r| r.rows)
            .map_err(|e| format!("process {i} wrote no results ({status}): {e}"))?;
        runs.push(rows);
    }
    let merged = merge(&runs);
    for (entry, rows) in experiments::group(&merged) {
        print!("{}", experiments::text(entry, &rows));
    }
    for row in &merged {
        let rates: Vec<String> = row
            .samples_ns_per_msg
            .iter()
            .map(|ns| format!("{:.0}", 1e9 / ns))
            .collect();
        let rtts = row
            .params
            .get("process_core_rtt_ns")
            .map(|v| format!("; cache-line round trip (ns, before/after) per process {v}"))
            .unwrap_or_default();
        println!(
            "{}: msgs/s per process {}; slowest/fastest {:.2}{rtts}",
            compare::key(row),
            rates.join(", "),
            row.min_ns_per_msg / row.max_ns_per_msg
        );
    }
    Ok(merged)
}

/// Every row of `runs` (one list per process) merged by workload (the
/// key `compare` matches rows by: experiment, variant and the parameters
/// that identify the workload), in the first process's order.
pub fn merge(runs: &[Vec<Row>]) -> Vec<Row> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for rows in runs {
        for row in rows {
            let key = compare::key(row);
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push(row);
        }
    }
    order
        .into_iter()
        .map(|key| merge_one(&groups[&key], runs.len()))
        .collect()
}

/// One row over the processes that produced it.
fn merge_one(rows: &[&Row], processes: usize) -> Row {
    let first = rows[0];
    let medians: Vec<f64> = rows.iter().map(|r| r.ns_per_msg).collect();
    let summary = summarize(&medians).expect("at least one process");
    let mut params = Map::new();
    for (key, value) in &first.params {
        // Figures a process measured (latency percentiles, rates): the
        // median over the processes; settings: as the first had them.
        let numbers: Vec<f64> = rows
            .iter()
            .filter_map(|r| r.params.get(key).and_then(Value::as_f64))
            .collect();
        let merged = if value.is_f64() && numbers.len() == rows.len() {
            json!(summarize(&numbers).expect("not empty").median)
        } else {
            value.clone()
        };
        params.insert(key.clone(), merged);
    }
    params.insert("processes".into(), json!(rows.len()));
    params.insert("runs_per_process".into(), json!(first.repeats));
    params.insert("process_ns_per_msg".into(), json!(medians));
    // The machine's cache-line round trip around each process's row.
    let rtts: Vec<Value> = rows
        .iter()
        .filter_map(|r| r.params.get(crate::core_latency::PARAM).cloned())
        .collect();
    if !rtts.is_empty() {
        params.insert("process_core_rtt_ns".into(), Value::Array(rtts));
    }
    params.insert("process_spread".into(), json!(summary.max / summary.min));
    let failures: Vec<String> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.failure
                .as_ref()
                .map(|f| format!("process {}: {f}", i + 1))
        })
        .collect();
    let mut failure = (!failures.is_empty()).then(|| failures.join("; "));
    if rows.len() < processes {
        let missing = format!("in {} of {processes} processes only", rows.len());
        failure = Some(failure.map_or(missing.clone(), |f| format!("{f}; {missing}")));
    }
    Row {
        experiment: first.experiment.clone(),
        variant: first.variant.clone(),
        msgs: first.msgs,
        repeats: rows.len(),
        ns_per_msg: summary.median,
        msgs_per_s: 1e9 / summary.median,
        min_ns_per_msg: summary.min,
        max_ns_per_msg: summary.max,
        samples_ns_per_msg: medians,
        warmup_ns_per_msg: first.warmup_ns_per_msg,
        protocol: format!(
            "{} fresh processes, each: {}; figure: the median of the processes' medians, \
             min-max: the fastest and the slowest process",
            rows.len(),
            first.protocol
        ),
        params,
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, ns: f64, p50: f64) -> Row {
        let mut row = crate::report::tests::row("trading", variant, &[ns]);
        row.params.insert("clients".into(), json!(10));
        row.params.insert("p50_us".into(), json!(p50));
        row
    }

    #[test]
    fn the_parent_only_flags_and_their_values_are_left_out() {
        let args: Vec<String> = [
            "trading",
            "--processes",
            "10",
            "--json=a.json",
            "--clients",
            "10,40",
            "--readme",
            "README.md",
            "--docs",
            "docs/benchmarks.md",
            "--peer",
            "pekko",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            child_args(&args),
            ["trading", "--clients", "10,40", "--peer", "pekko"]
        );
    }

    #[test]
    fn a_row_is_the_median_of_the_process_medians_with_the_spread_kept() {
        let runs = vec![
            vec![
                row("one-way/c10", 300.0, 10.0),
                row("one-way/c40", 400.0, 40.0),
            ],
            vec![
                row("one-way/c10", 700.0, 30.0),
                row("one-way/c40", 410.0, 41.0),
            ],
            vec![row("one-way/c10", 310.0, 20.0)],
        ];
        let merged = merge(&runs);
        assert_eq!(merged.len(), 2);
        let c10 = &merged[0];
        assert_eq!(
            (c10.variant.as_str(), c10.ns_per_msg),
            ("one-way/c10", 310.0)
        );
        assert_eq!((c10.min_ns_per_msg, c10.max_ns_per_msg), (300.0, 700.0));
        assert_eq!(c10.num("process_spread"), Some(700.0 / 300.0));
        assert_eq!(c10.num("p50_us"), Some(20.0));
        assert_eq!(c10.num("clients"), Some(10.0));
        assert!(c10.failure.is_none());
        // A row some process did not produce is not a full measurement.
        let c40 = &merged[1];
        assert_eq!(c40.repeats, 2);
        assert!(c40.failure.as_deref().unwrap().contains("2 of 3"));
    }
}

//! The summary table the report opens with: per experiment, its headline
//! figure for troupe, the best baseline, Pekko and the best Rust peer
//! (the fastest of kameo, ractor and actix), and troupe's ratio to each, one line per thread count (and workload) so that every ratio pairs
//! rows that ran on the same number of threads, and says how many.
//!
//! A line whose rows do not record their threads shows the figures without
//! ratios; a failed row is never the best of its runtime, and when it is
//! the only one it shows as FAILED with its reason.

use crate::experiments::{self, Entry, Headline};
use crate::pairing::{runtime, threads, threads_text};
use crate::report::Row;
use crate::rust_peers::is_rust_peer;
use crate::table::{param_text, Align, Table};

/// The header of the summary table.
const HEADER: [&str; 10] = [
    "experiment",
    "figure",
    "threads",
    "troupe",
    "best baseline",
    "Pekko",
    "best Rust peer",
    "troupe vs baseline",
    "troupe vs Pekko",
    "troupe vs best Rust peer",
];

/// The columns of the three ratios, for callers that pick columns.
pub const RATIO_COLUMNS: [usize; 3] = [7, 8, 9];

/// The summary table of `rows` (empty when no experiment has a headline).
pub fn table(rows: &[Row]) -> Table {
    let mut lines = Vec::new();
    for (entry, mine) in experiments::group(rows) {
        if let Some(headline) = entry.headline() {
            lines.extend(experiment_lines(entry, &headline, &mine));
        }
    }
    let mut table = Table::new(&HEADER, lines);
    // Every cell names its row beside the figure: text, left-aligned.
    table.align = vec![Align::Left; HEADER.len()];
    table
}

/// The best row of the runtimes `of` in a group: valid rows by the figure;
/// when every row of those runtimes failed, the first failed one.
fn best<'a>(group: &[&'a Row], of: impl Fn(&str) -> bool, headline: &Headline) -> Option<&'a Row> {
    let mine: Vec<&Row> = group.iter().copied().filter(|r| of(runtime(r))).collect();
    let valid = mine
        .iter()
        .copied()
        .filter(|r| r.failure.is_none())
        .filter_map(|r| Some((r, (headline.value)(r)?)))
        .filter(|(_, v)| v.is_finite());
    let best = if headline.lower_is_better {
        valid.min_by(|a, b| a.1.total_cmp(&b.1))
    } else {
        valid.max_by(|a, b| a.1.total_cmp(&b.1))
    };
    best.map(|(r, _)| r).or_else(|| mine.first().copied())
}

fn cell(row: Option<&Row>, headline: &Headline) -> String {
    match row {
        None => "-".into(),
        Some(r) => match (&r.failure, (headline.value)(r)) {
            (Some(why), _) => format!("{}: FAILED: {why}", r.variant),
            (None, Some(v)) => format!("{}: {}", r.variant, figure(v)),
            (None, None) => format!("{}: -", r.variant),
        },
    }
}

/// A figure with three significant digits or thousands separators.
fn figure(v: f64) -> String {
    if v.abs() >= 1000.0 {
        crate::shared::group_thousands(v.round() as u64)
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// troupe's advantage as "2.50x better" (above 1: troupe is better; "0.50x
/// (worse)" below 1), or why
/// there is no ratio.
fn ratio(troupe: Option<&Row>, other: Option<&Row>, threads: Option<u64>, h: &Headline) -> String {
    let (Some(t), Some(o)) = (troupe, other) else {
        return "-".into();
    };
    if t.failure.is_some() || o.failure.is_some() {
        return "- (a row failed)".into();
    }
    if threads.is_none() {
        return "- (threads not recorded)".into();
    }
    match ((h.value)(t), (h.value)(o)) {
        (Some(tv), Some(ov)) if tv > 0.0 && ov > 0.0 => {
            let r = if h.lower_is_better { ov / tv } else { tv / ov };
            // Below 1 troupe is behind: say so rather than "0.72x better".
            if r >= 1.0 {
                format!("{r:.2}x better")
            } else {
                format!("{r:.2}x (worse)")
            }
        }
        _ => "-".into(),
    }
}

/// One line per (thread count, workload) group of the selected rows that
/// has a troupe row.
fn experiment_lines(entry: &dyn Entry, headline: &Headline, rows: &[Row]) -> Vec<Vec<String>> {
    let selected: Vec<&Row> = rows.iter().filter(|r| (headline.select)(r)).collect();
    let workload = |r: &Row| {
        entry
            .keys()
            .iter()
            .map(|k| param_text(r, k))
            .collect::<Vec<_>>()
    };
    let mut groups: Vec<(Option<u64>, Vec<String>, Vec<&Row>)> = Vec::new();
    for r in &selected {
        let key = (threads(r), workload(r));
        match groups
            .iter_mut()
            .find(|(t, w, _)| (*t, w) == (key.0, &key.1))
        {
            Some((_, _, members)) => members.push(r),
            None => groups.push((key.0, key.1, vec![r])),
        }
    }
    groups.sort_by_key(|(t, _, _)| t.map_or(u64::MAX, |t| t));
    let mut out = Vec::new();
    for (threads, _, group) in groups {
        let Some(troupe) = best(&group, |r| r == "troupe", headline) else {
            continue;
        };
        let baseline = best(&group, |r| r == "baseline", headline);
        let pekko = best(&group, |r| r == "pekko", headline);
        let rust = best(&group, is_rust_peer, headline);
        out.push(vec![
            entry.name().to_string(),
            headline.figure.to_string(),
            threads.map_or_else(|| "not recorded".into(), threads_text),
            cell(Some(troupe), headline),
            cell(baseline, headline),
            cell(pekko, headline),
            cell(rust, headline),
            ratio(Some(troupe), baseline, threads, headline),
            ratio(Some(troupe), pekko, threads, headline),
            ratio(Some(troupe), rust, threads, headline),
        ]);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::report::tests::row;

    fn with(mut r: Row, params: &[(&str, Value)]) -> Row {
        for (k, v) in params {
            r.params.insert(k.to_string(), v.clone());
        }
        r
    }

    fn pingpong(variant: &str, runtime: &str, workers: Option<u64>, ns: f64) -> Row {
        let mut r = with(
            row("pingpong", variant, &[ns]),
            &[("runtime", runtime.into())],
        );
        if let Some(w) = workers {
            r.params.insert("workers".into(), w.into());
        }
        r
    }

    #[test]
    fn one_line_per_thread_count_with_ratios_of_matched_rows_only() {
        let rows = vec![
            pingpong("tokio-mpsc-ct", "baseline", Some(1), 400.0),
            pingpong("tokio-mpsc-mt-w2", "baseline", Some(2), 500.0),
            pingpong("actor-tp5-w1", "troupe", Some(1), 80.0),
            pingpong("actor-tp100-w1", "troupe", Some(1), 100.0),
            pingpong("actor-tp5-w2", "troupe", Some(2), 125.0),
            pingpong("pekko-pair", "pekko", Some(2), 250.0),
            pingpong("pekko-unknown", "pekko", None, 50.0),
            pingpong("kameo-pair-w1", "kameo", Some(1), 400.0),
            pingpong("actix-pair-w1", "actix", Some(1), 160.0),
            pingpong("ractor-pair-w1", "ractor", Some(1), 240.0),
        ];
        let t = table(&rows);
        assert_eq!(t.header, HEADER.map(String::from).to_vec());
        assert_eq!(t.rows.len(), 2, "{t:?}");
        let one = &t.rows[0];
        assert_eq!(one[2], "1 thread");
        assert_eq!(one[3], "actor-tp5-w1: 80.0");
        assert_eq!(one[4], "tokio-mpsc-ct: 400.0");
        assert_eq!(one[5], "-");
        // The best of the three Rust libraries on one thread.
        assert_eq!(one[6], "actix-pair-w1: 160.0");
        assert_eq!(one[7], "5.00x better");
        assert_eq!(one[9], "2.00x better");
        let two = &t.rows[1];
        assert_eq!(two[2], "2 threads");
        assert_eq!(two[3], "actor-tp5-w2: 125.0");
        assert_eq!(two[7], "4.00x better");
        assert_eq!(
            (two[5].as_str(), two[8].as_str()),
            ("pekko-pair: 250.0", "2.00x better")
        );
        // No Rust peer ran on two threads: no ratio.
        assert_eq!((two[6].as_str(), two[9].as_str()), ("-", "-"));
        // The Pekko row without a thread count forms no line (no troupe
        // row shares its group) and enters no ratio.
        assert!(!t.markdown().contains("pekko-unknown"));
    }

    #[test]
    fn higher_is_better_figures_divide_the_other_way_and_failures_show() {
        let trading = |variant: &str, runtime: &str, tps: f64| {
            with(
                row("trading", variant, &[1e9 / tps]),
                &[
                    ("runtime", runtime.into()),
                    ("txlog", "off".into()),
                    ("clients", 10.into()),
                    ("threads", 2.into()),
                ],
            )
        };
        let mut failed = trading("pekko-one-way/off", "pekko", 2e6);
        failed.failure = Some("not verified".into());
        let rows = vec![
            trading("sync/off", "baseline", 4e6),
            trading("one-way/off", "troupe", 2e6),
            failed,
        ];
        let t = table(&rows);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0][7], "0.50x (worse)");
        assert_eq!(t.rows[0][5], "pekko-one-way/off: FAILED: not verified");
        assert_eq!(t.rows[0][8], "- (a row failed)");
    }

    #[test]
    fn rows_without_threads_show_figures_but_no_ratio() {
        let rows = vec![
            with(row("delayed", "actor", &[1.0]), &[("total_s", 1.5.into())]),
            with(
                row("delayed", "tokio-sleep", &[2.0]),
                &[("total_s", 3.0.into()), ("runtime", "baseline".into())],
            ),
        ];
        let t = table(&rows);
        assert_eq!(t.rows[0][2], "not recorded");
        assert_eq!(t.rows[0][4], "tokio-sleep: 3.000");
        assert_eq!(t.rows[0][7], "- (threads not recorded)");
    }
}

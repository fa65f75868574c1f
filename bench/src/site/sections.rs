//! One section per experiment: its charts (like the seed posts' where there
//! is one) and its table. Experiments without a dedicated view get the
//! generic table.

use std::collections::BTreeMap;

use serde_json::Value;

use super::charts::{self, short, Series};
use crate::report::Row;

/// A table as text cells.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One experiment's part of the report.
pub struct Section {
    pub id: String,
    pub title: String,
    pub notes: Vec<String>,
    pub charts: Vec<String>,
    pub table: Table,
}

fn num(r: &Row, key: &str) -> Option<f64> {
    r.params.get(key).and_then(Value::as_f64)
}

fn text(r: &Row, key: &str) -> String {
    match r.params.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "yes" } else { "NO" }.into(),
        Some(Value::Number(n)) => n.as_f64().map_or(n.to_string(), short),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn runtime(r: &Row) -> String {
    text(r, "runtime")
}

/// The experiment-specific columns shown after the common ones.
fn extra_columns(experiment: &str) -> &'static [&'static str] {
    match experiment {
        "trading" => &[
            "txlog", "clients", "tps", "mean_us", "p5_us", "p50_us", "p95_us", "p99_us", "max_us",
            "verified",
        ],
        "primes" => &["rps", "errors", "p50_ms", "p95_ms", "p99_ms", "max_ms"],
        "delayed" => &[
            "jobs",
            "total_s",
            "late_p50_ms",
            "late_p99_ms",
            "peak_rss_mb",
            "bytes_per_job",
        ],
        "chameneos" | "chameneos-sweep" => &["creatures", "meetings", "seconds", "meetings_per_s"],
        "micro" => &["bytes_per_actor"],
        "soak" => &[
            "seconds",
            "rss_early_mib",
            "rss_late_mib",
            "rss_peak_mib",
            "rss_drift_pct",
        ],
        _ => &[],
    }
}

fn table(experiment: &str, rows: &[&Row]) -> Table {
    let extra = extra_columns(experiment);
    let with_runtime = rows.iter().any(|r| r.params.contains_key("runtime"));
    let mut header: Vec<String> = vec!["variant".into()];
    if with_runtime {
        header.push("runtime".into());
    }
    header.extend(["msgs", "ns/msg", "msgs/s"].map(String::from));
    header.extend(extra.iter().map(|s| s.to_string()));
    let rows = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.variant.clone()];
            if with_runtime {
                cells.push(runtime(r));
            }
            cells.push(r.msgs.to_string());
            cells.push(format!("{:.1}", r.ns_per_msg));
            cells.push(short(r.msgs_per_s));
            cells.extend(extra.iter().map(|k| text(r, k)));
            cells
        })
        .collect();
    Table { header, rows }
}

/// The report's sections, in the order experiments first appear.
pub fn sections(rows: &[Row]) -> Vec<Section> {
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        if !order.contains(&r.experiment.as_str()) {
            order.push(&r.experiment);
        }
    }
    order
        .into_iter()
        .map(|experiment| {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.experiment == experiment).collect();
            let (charts, notes) = match experiment {
                "pingpong" => (
                    pingpong(&mine),
                    vec!["Median nanoseconds per one-way message; lower is better.".into()],
                ),
                "trading" => trading(&mine),
                "chameneos-sweep" => (
                    chameneos_sweep(&mine),
                    vec!["Seconds per game against meetings, log-log, as in the seed post.".into()],
                ),
                "chameneos" => (chameneos(&mine), vec![]),
                "primes" => (
                    primes(&mine),
                    vec!["Latency per request at the client, send to full body.".into()],
                ),
                "delayed" => (
                    delayed(&mine),
                    vec!["First measured run of each variant.".into()],
                ),
                "soak" => (soak(&mine), vec![]),
                _ => (vec![], vec![]),
            };
            Section {
                id: experiment.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
                title: experiment.to_string(),
                notes,
                charts,
                table: table(experiment, &mine),
            }
        })
        .collect()
}

fn pingpong(rows: &[&Row]) -> Vec<String> {
    let bars: Vec<(String, f64)> = rows
        .iter()
        .map(|r| (r.variant.clone(), r.ns_per_msg))
        .collect();
    vec![charts::bars(
        "ping-pong: ns per message (median)",
        "ns/msg",
        &bars,
    )]
}

fn chameneos(rows: &[&Row]) -> Vec<String> {
    let bars: Vec<(String, f64)> = rows
        .iter()
        .filter_map(|r| Some((r.variant.clone(), num(r, "seconds")?)))
        .collect();
    vec![charts::bars(
        "chameneos: seconds per game (median)",
        "seconds",
        &bars,
    )]
}

fn chameneos_sweep(rows: &[&Row]) -> Vec<String> {
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        if let (Some(n), Some(s)) = (num(r, "meetings"), num(r, "seconds")) {
            let label = format!("{}-{}", text(r, "implementation"), text(r, "creatures"));
            by.entry(label).or_default().push((n, s));
        }
    }
    let series: Vec<Series> = by
        .into_iter()
        .map(|(label, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { label, points }
        })
        .collect();
    vec![charts::lines(
        "chameneos: seconds against meetings",
        "meetings",
        "seconds",
        &series,
        (true, true),
    )]
}

fn trading(rows: &[&Row]) -> (Vec<String>, Vec<String>) {
    let mut tps: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        if let (Some(c), Some(t)) = (num(r, "clients"), num(r, "tps")) {
            tps.entry(r.variant.clone()).or_default().push((c, t));
        }
    }
    let series = |m: BTreeMap<String, Vec<(f64, f64)>>| -> Vec<Series> {
        m.into_iter()
            .map(|(label, mut points)| {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series { label, points }
            })
            .collect()
    };
    let mut out = vec![charts::lines(
        "trading: orders/s against clients",
        "clients",
        "orders/s",
        &series(tps),
        (false, false),
    )];
    // Latency per variant (log off), the seed post's four lines.
    let mut variants: Vec<String> = Vec::new();
    for r in rows {
        if text(r, "txlog") == "off" && !variants.contains(&r.variant) {
            variants.push(r.variant.clone());
        }
    }
    for variant in variants {
        let mut lat: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.variant == variant) {
            let Some(c) = num(r, "clients") else { continue };
            for key in ["mean_us", "p5_us", "p50_us", "p95_us"] {
                if let Some(v) = num(r, key) {
                    lat.entry(key.trim_end_matches("_us").to_string())
                        .or_default()
                        .push((c, v));
                }
            }
        }
        out.push(charts::lines(
            &format!("trading {variant}: latency against clients"),
            "clients",
            "µs",
            &series(lat),
            (false, false),
        ));
    }
    let notes = vec![
        "orders/s is the median run; latencies merge every order of the measured runs. sync is the no-actor baseline.".into(),
    ];
    (out, notes)
}

fn primes(rows: &[&Row]) -> Vec<String> {
    let series: Vec<Series> = rows
        .iter()
        .map(|r| Series {
            label: r.variant.clone(),
            points: [
                (0.0, "min_ms"),
                (50.0, "p50_ms"),
                (95.0, "p95_ms"),
                (99.0, "p99_ms"),
                (100.0, "max_ms"),
            ]
            .iter()
            .filter_map(|(q, k)| Some((*q, num(r, k)?)))
            .collect(),
        })
        .collect();
    vec![charts::lines(
        "primes: latency by percentile",
        "percentile",
        "ms",
        &series,
        (false, false),
    )]
}

fn delayed(rows: &[&Row]) -> Vec<String> {
    let mut done = Vec::new();
    let mut rss = Vec::new();
    for r in rows {
        let Some(timeline) = r
            .params
            .get("runs")
            .and_then(|runs| runs.get(0))
            .and_then(|run| run.get("timeline"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let point = |i: usize| -> Vec<(f64, f64)> {
            timeline
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(i)?.as_f64()?)))
                .collect()
        };
        done.push(Series {
            label: r.variant.clone(),
            points: point(2),
        });
        rss.push(Series {
            label: r.variant.clone(),
            points: point(3),
        });
    }
    if done.is_empty() {
        return vec![];
    }
    vec![
        charts::lines(
            "delayed: completions over time",
            "seconds",
            "completed",
            &done,
            (false, false),
        ),
        charts::lines(
            "delayed: resident memory over time",
            "seconds",
            "MB",
            &rss,
            (false, false),
        ),
    ]
}

fn soak(rows: &[&Row]) -> Vec<String> {
    let series: Vec<Series> = rows
        .iter()
        .filter_map(|r| {
            let points = r
                .params
                .get("rss_series")?
                .as_array()?
                .iter()
                .filter_map(|p| {
                    Some((
                        p.get(0)?.as_f64()?,
                        p.get(1)?.as_f64()? / (1u64 << 20) as f64,
                    ))
                })
                .collect();
            Some(Series {
                label: r.variant.clone(),
                points,
            })
        })
        .collect();
    vec![charts::lines(
        "soak: resident memory",
        "seconds",
        "MiB",
        &series,
        (false, false),
    )]
}

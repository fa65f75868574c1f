//! The report folder `troupe-bench all` writes (default `report/`):
//! `results.json` (every row, with the machine and the command),
//! `index.html` (self-contained: tables and inline SVG charts, no scripts,
//! no external files) and `summary.md` (the tables and headline ratios).
//! `troupe-bench report --from results.json` renders the same folder from a
//! saved run.
//!
//! The page opens with the summary table (each experiment's headline figure
//! for troupe, the best baseline, Pekko and the best Rust peer, with ratios
//! between rows of the same thread count), then one section per experiment,
//! made by the experiment (see `experiments`). Rows carry `params.runtime`
//! (`troupe`, `baseline`, `pekko`, `kameo`, `ractor`, `actix`): tables show
//! it and charts colour by it.

pub mod charts;
mod sections;
pub mod summary;

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use crate::report::Report;
use crate::table::{Align, Table};
use sections::{sections, Section};

/// Writes `results.json`, `index.html` and `summary.md` into `dir`.
pub fn write(dir: &Path, report: &Report) -> io::Result<()> {
    fs::create_dir_all(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display())))?;
    let mut json = serde_json::to_string_pretty(report)?;
    json.push('\n');
    let sections = sections(&report.rows);
    for (name, text) in [
        ("results.json", json),
        ("index.html", html(report, &sections)),
        ("summary.md", summary_md(report, &sections)),
    ] {
        let path = dir.join(name);
        fs::write(&path, text).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
        })?;
    }
    Ok(())
}

/// Escapes text for HTML.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn machine_line(report: &Report) -> String {
    let m = &report.machine;
    format!(
        "{} ({} CPUs), {} {}, {}, {}{}",
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        m.logical_cpus.map_or("?".into(), |n| n.to_string()),
        m.os,
        m.kernel.as_deref().unwrap_or(""),
        m.rustc.as_deref().unwrap_or("rustc ?"),
        m.code(),
        report.run.duration_s.map_or_else(String::new, |s| format!(
            "; the run took {}",
            crate::report::duration_text(s)
        )),
    )
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:14px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td.l{text-align:left}td.failed{color:#b00;font-weight:bold}\
th{background:#f3f3f3}.charts svg{margin:0.5em 0;max-width:100%;height:auto}\
nav a{margin-right:1em}.note{color:#555}";

/// A table as HTML, numbers right-aligned.
fn html_table(table: &Table) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in &table.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (cell, align) in row.iter().zip(&table.align) {
            let class = match align {
                Align::Left => "l",
                Align::Right => "r",
            };
            let failed = if cell.contains("FAILED") {
                " failed"
            } else {
                ""
            };
            let _ = write!(out, "<td class=\"{class}{failed}\">{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

fn html(report: &Report, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>troupe benchmark report</title><style>{STYLE}</style></head><body>\n\
         <h1>troupe benchmark report</h1>\n<p>{}</p>\n<p class=\"note\">Command: <code>{}</code></p>\n",
        esc(&machine_line(report)),
        esc(&report.run.command.join(" ")),
    );
    let headline = summary::table(&report.rows);
    if !headline.rows.is_empty() {
        let _ = write!(
            out,
            "<section id=\"summary\"><h2>Summary</h2>\n<p class=\"note\">{}</p>\n{}</section>\n",
            esc(SUMMARY_NOTE),
            html_table(&headline)
        );
    }
    out.push_str("<nav>");
    for s in sections {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", s.id, esc(&s.title));
    }
    out.push_str("</nav>\n");
    for s in sections {
        let _ = writeln!(out, "<section id=\"{}\"><h2>{}</h2>", s.id, esc(&s.title));
        for note in &s.notes {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(note));
        }
        out.push_str("<div class=\"charts\">\n");
        for chart in &s.charts {
            out.push_str(chart);
            out.push('\n');
        }
        out.push_str("</div>\n");
        for (title, table) in &s.tables {
            let _ = writeln!(out, "<h3>{}</h3>", esc(title));
            out.push_str(&html_table(table));
        }
        if !s.lines.is_empty() {
            out.push_str("<ul>");
            for line in &s.lines {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body></html>\n");
    out
}

fn summary_md(report: &Report, sections: &[Section]) -> String {
    let mut out = format!("# troupe benchmark summary\n\n{}\n\n", machine_line(report));
    let headline = summary::table(&report.rows);
    if !headline.rows.is_empty() {
        let _ = write!(
            out,
            "## Summary\n\n{SUMMARY_NOTE}\n\n{}\n",
            headline.markdown()
        );
    }
    for s in sections {
        let _ = writeln!(out, "## {}\n", s.title);
        for note in &s.notes {
            let _ = writeln!(out, "{note}\n");
        }
        for (title, table) in &s.tables {
            let _ = writeln!(out, "{title}:\n\n{}", table.markdown());
        }
        for line in &s.lines {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    out
}

/// What the summary table's ratios mean.
const SUMMARY_NOTE: &str = "Each experiment's headline figure for troupe's best row, the best \
baseline, Pekko and the best Rust peer (the fastest of kameo, ractor and actix), one line per \
thread count: a ratio only pairs rows that ran on the same number of threads (above 1: troupe is \
better). Colours in every chart: troupe blue, baselines orange, Pekko green, kameo purple, ractor \
brown, actix pink.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Machine, Row, RunInfo};
    use serde_json::json;

    fn row(experiment: &str, variant: &str, params: serde_json::Value) -> Row {
        Row {
            experiment: experiment.into(),
            variant: variant.into(),
            msgs: 1000,
            repeats: 1,
            ns_per_msg: 50.0,
            msgs_per_s: 2e7,
            min_ns_per_msg: 49.0,
            max_ns_per_msg: 51.0,
            samples_ns_per_msg: vec![50.0],
            warmup_ns_per_msg: 55.0,
            params: params.as_object().unwrap().clone(),
            protocol: String::new(),
            failure: None,
        }
    }

    fn trading(variant: &str, clients: u64, tps: f64) -> Row {
        row(
            "trading",
            &format!("{variant}/off"),
            json!({"variant": variant, "txlog": "off", "clients": clients, "orders": 750000,
                   "tps": tps, "mean_us": 5.0, "p5_us": 1.0, "p25_us": 2.0, "p50_us": 3.0,
                   "p75_us": 4.0, "p95_us": 20.0, "p99_us": 50.0, "max_us": 900.0,
                   "trades": 375000, "verified": true, "runtime": "troupe"}),
        )
    }

    fn report(rows: Vec<Row>) -> Report {
        Report {
            machine: Machine::detect(),
            run: RunInfo {
                command: vec!["troupe-bench".into(), "all".into()],
                started_unix_s: 0,
                peak_rss_bytes: None,
                duration_s: None,
            },
            rows,
        }
    }

    #[test]
    fn the_page_has_a_section_table_and_chart_per_experiment_and_escapes_text() {
        let mut failed = trading("one-way", 40, 1.0e6);
        failed.failure = Some("standby differs".into());
        let r = report(vec![
            row("pingpong", "busy-spin", json!({"threads": 2})),
            row(
                "pingpong",
                "actor-tp1-w1 <fast>",
                json!({"runtime": "troupe"}),
            ),
            trading("one-way", 1, 1.4e6),
            trading("one-way", 10, 1.6e6),
            trading("request-reply", 10, 1.3e6),
            failed,
        ]);
        let sections = sections(&r.rows);
        let page = html(&r, &sections);
        assert!(
            page.contains("<section id=\"pingpong\">") && page.contains("<section id=\"trading\">")
        );
        assert!(page.contains("actor-tp1-w1 &lt;fast&gt;") && !page.contains("<fast>"));
        assert!(
            page.matches("<svg").count() >= 3,
            "bars + tps + latency charts"
        );
        assert!(!page.contains("<script"));
        let md = summary_md(&r, &sections);
        assert!(md.contains("## trading") && md.contains("| one-way/off "));
        // A failed row is marked in the page and in the summary.
        assert!(page.contains("<td class=\"l failed\">FAILED: standby differs</td>"));
        assert!(md.contains("FAILED: standby differs"));
        // The page opens with the summary table, before the sections.
        let summary = page.find("<section id=\"summary\">").unwrap();
        assert!(summary < page.find("<section id=\"pingpong\">").unwrap());
    }

    #[test]
    fn write_creates_the_three_files() {
        let dir = std::env::temp_dir().join(format!("troupe-site-{}", std::process::id()));
        write(&dir, &report(vec![trading("one-way", 10, 1.6e6)])).unwrap();
        for f in ["results.json", "index.html", "summary.md"] {
            assert!(dir.join(f).metadata().unwrap().len() > 0, "{f}");
        }
        let back: Report =
            serde_json::from_str(&fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
        assert_eq!(back.rows.len(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}

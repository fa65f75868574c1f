//! One section per experiment, made by the experiment itself (its notes,
//! charts, tables and the lines under them) plus the ratios that pair rows
//! with the same thread count. Rows no experiment owns (a file from another
//! version of the binary) get the plain per-message table.

use crate::experiments::{self, Entry};
use crate::pairing;
use crate::report::Row;
use crate::table::{rows_table, Table, PER_MESSAGE};

/// One experiment's part of the report.
pub struct Section {
    /// The HTML anchor.
    pub id: String,
    /// The heading.
    pub title: String,
    /// What the tables and charts show.
    pub notes: Vec<String>,
    /// SVG charts.
    pub charts: Vec<String>,
    /// Titled tables.
    pub tables: Vec<(String, Table)>,
    /// Lines under the tables: measured extras, then ratios.
    pub lines: Vec<String>,
}

fn anchor(name: &str) -> String {
    name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
}

fn section(entry: &dyn Entry, rows: &[Row]) -> Section {
    let refs: Vec<&Row> = rows.iter().collect();
    let mut lines = entry.extras(&refs);
    lines.extend(
        pairing::ratio_lines(rows, entry.keys())
            .into_iter()
            .map(|l| format!("ratio: {l}")),
    );
    Section {
        id: anchor(entry.name()),
        title: entry.name().to_string(),
        notes: entry.notes(),
        charts: entry.charts(&refs),
        tables: entry.tables(&refs),
        lines,
    }
}

/// The report's sections, in the order experiments first appear.
pub fn sections(rows: &[Row]) -> Vec<Section> {
    let mut out: Vec<Section> = experiments::group(rows)
        .iter()
        .map(|(entry, mine)| section(*entry, mine))
        .collect();
    let mut unknown: Vec<&str> = Vec::new();
    for r in rows {
        if experiments::find(&r.experiment).is_none() && !unknown.contains(&r.experiment.as_str()) {
            unknown.push(&r.experiment);
        }
    }
    for name in unknown {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.experiment == name).collect();
        out.push(Section {
            id: anchor(name),
            title: name.to_string(),
            notes: vec![],
            charts: vec![],
            tables: vec![(name.to_string(), rows_table(&PER_MESSAGE, &mine))],
            lines: vec![],
        });
    }
    out
}

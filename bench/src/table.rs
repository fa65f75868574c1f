//! The one table renderer every experiment uses, in the terminal, the README,
//! `summary.md` and the HTML report.
//!
//! An experiment describes its columns ([`Column`]); [`rows_table`] puts the
//! columns every table shares around them (variant, runtime, threads first;
//! the spread of the samples, the per-row protocol and, when a row failed,
//! its reason last) and [`Table::markdown`] lays the cells out with every
//! column as wide as its widest cell, so no value overflows its column
//! whatever its length.

use std::fmt::Write as _;

use serde_json::Value;

use crate::pairing::{runtime, threads};
use crate::report::Row;
use crate::shared::short;

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text: names, modes, reasons.
    Left,
    /// Numbers.
    Right,
}

/// What a cell shows for a row.
#[derive(Clone, Copy)]
pub enum Cell {
    /// The row's `params[key]`, numbers in short form, booleans yes/NO.
    Param(&'static str),
    /// Computed from the row.
    With(fn(&Row) -> String),
}

/// One experiment-specific column.
#[derive(Clone, Copy)]
pub struct Column {
    /// The header.
    pub header: &'static str,
    /// The cells.
    pub cell: Cell,
    /// How the cells line up.
    pub align: Align,
}

impl Column {
    /// A right-aligned column showing `params[key]`.
    pub const fn param(header: &'static str, key: &'static str) -> Self {
        Column {
            header,
            cell: Cell::Param(key),
            align: Align::Right,
        }
    }

    /// A left-aligned column showing `params[key]` (text values).
    pub const fn text(header: &'static str, key: &'static str) -> Self {
        Column {
            header,
            cell: Cell::Param(key),
            align: Align::Left,
        }
    }

    /// A right-aligned column computed from the row.
    pub const fn with(header: &'static str, cell: fn(&Row) -> String) -> Self {
        Column {
            header,
            cell: Cell::With(cell),
            align: Align::Right,
        }
    }

    fn render(&self, row: &Row) -> String {
        match self.cell {
            Cell::Param(key) => param_text(row, key),
            Cell::With(f) => f(row),
        }
    }
}

/// The columns most experiments show: messages per run, the median time
/// per message, the spread of the samples and the rate at the median.
pub const PER_MESSAGE: [Column; 4] = [
    Column::with("msgs", |r| crate::shared::group_thousands(r.msgs)),
    Column::with("ns/msg (median)", |r| format!("{:.1}", r.ns_per_msg)),
    Column::with("ns/msg min-max", spread_ns),
    Column::with("msgs/s", |r| {
        crate::shared::group_thousands(r.msgs_per_s.round() as u64)
    }),
];

/// `params[key]` as a cell: whole numbers with thousands separators, other
/// numbers short, booleans yes/NO, absent empty.
pub fn param_text(row: &Row, key: &str) -> String {
    match row.params.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "yes" } else { "NO" }.into(),
        // Counts (clients, jobs, creatures) in full; measured figures short.
        Some(Value::Number(n)) => match n.as_u64() {
            Some(count) => crate::shared::group_thousands(count),
            None => n.as_f64().map_or(n.to_string(), short),
        },
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The fastest and slowest measured run in ns per message, or what the
/// row has instead: one sample has no spread, and saying "1 sample" keeps a
/// single figure from passing for min = median = max.
pub fn spread_ns(row: &Row) -> String {
    if row.samples_ns_per_msg.len() < 2 {
        return "1 sample".into();
    }
    format!("{:.1}-{:.1}", row.min_ns_per_msg, row.max_ns_per_msg)
}

/// The same spread as a rate per second (slowest run first).
pub fn spread_rate(row: &Row) -> String {
    if row.samples_ns_per_msg.len() < 2 {
        return "1 sample".into();
    }
    format!(
        "{}-{}",
        short(1e9 / row.max_ns_per_msg),
        short(1e9 / row.min_ns_per_msg)
    )
}

/// How a row's samples were taken; rows saved before the protocol was
/// recorded say what can still be known.
pub fn protocol(row: &Row) -> String {
    if row.protocol.is_empty() {
        format!("{} measured run(s), protocol not recorded", row.repeats)
    } else {
        row.protocol.clone()
    }
}

/// A table as text cells, ready for Markdown or HTML.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column headers.
    pub header: Vec<String>,
    /// How each column lines up.
    pub align: Vec<Align>,
    /// One line of cells per row, as many as headers.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table whose first column is text and the rest numbers.
    pub fn new(header: &[&str], rows: Vec<Vec<String>>) -> Self {
        let align = (0..header.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            align,
            rows,
        }
    }

    /// Markdown whose columns are also aligned as plain text: each column is
    /// as wide as its widest cell (counted in characters), so the same text
    /// reads well in a terminal and pastes into a README.
    pub fn markdown(&self) -> String {
        let len = |s: &str| s.chars().count();
        let mut widths: Vec<usize> = self.header.iter().map(|h| len(h)).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(len(cell));
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            out.push('|');
            for ((cell, width), align) in cells.iter().zip(&widths).zip(&self.align) {
                let pad = " ".repeat(width - len(cell));
                match align {
                    Align::Left => {
                        let _ = write!(out, " {cell}{pad} |");
                    }
                    Align::Right => {
                        let _ = write!(out, " {pad}{cell} |");
                    }
                }
            }
            out.push('\n');
        };
        line(&self.header, &mut out);
        out.push('|');
        for (width, align) in widths.iter().zip(&self.align) {
            let dashes = "-".repeat(width + 1);
            match align {
                Align::Left => {
                    let _ = write!(out, "{dashes}-|");
                }
                Align::Right => {
                    let _ = write!(out, "{dashes}:|");
                }
            }
        }
        out.push('\n');
        for row in &self.rows {
            line(row, &mut out);
        }
        out
    }
}

/// One experiment's rows as a table: variant, runtime and threads, then
/// `columns`, then the spread, the protocol and (when any row failed) a
/// `result` column with FAILED and the reason.
pub fn rows_table(columns: &[Column], rows: &[&Row]) -> Table {
    let any_failed = rows.iter().any(|r| r.failure.is_some());
    let mut header = vec!["variant", "runtime", "threads"];
    let mut align = vec![Align::Left, Align::Left, Align::Right];
    for c in columns {
        header.push(c.header);
        align.push(c.align);
    }
    header.push("protocol");
    align.push(Align::Left);
    if any_failed {
        header.push("result");
        align.push(Align::Left);
    }
    let rows = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.variant.clone(),
                runtime(r).to_string(),
                threads(r).map_or_else(|| "-".to_string(), |t| t.to_string()),
            ];
            cells.extend(columns.iter().map(|c| c.render(r)));
            cells.push(protocol(r));
            if any_failed {
                cells.push(match &r.failure {
                    Some(reason) => format!("FAILED: {reason}"),
                    None => "ok".into(),
                });
            }
            cells
        })
        .collect();
    Table {
        header: header.into_iter().map(String::from).collect(),
        align,
        rows,
    }
}

/// The cost cell of a table row (see `cost.rs`): CPU ns per message, CPUs busy, and
/// steals / migrations / parks / wake-ups per million messages; `-` for a
/// row without them (Pekko rows have CPU only).
pub fn cost_cell(row: &Row) -> String {
    let Some(cpu) = row.num("cpu_ns_per_msg") else {
        return "-".into();
    };
    let busy = row
        .num("cpus_busy")
        .map_or(String::new(), |b| format!(" ({b:.2} CPUs)"));
    let sched = row.params.get("sched_per_m_msgs").and_then(|s| {
        let n = |k: &str| s.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        (n("runs") > 0.0).then(|| {
            format!(
                " · st/mig/park/wake per M: {:.0}/{:.0}/{:.0}/{:.0}",
                n("steals"),
                n("migrations"),
                n("parks"),
                n("wakeups")
            )
        })
    });
    // Shown only where a pool spread at all (eager, or adaptive that chose it).
    let spread = row
        .num("spread_share")
        .filter(|s| *s > 0.0)
        .map_or(String::new(), |s| format!(" · spread {:.0}%", s * 100.0));
    format!(
        "{cpu:.0} cpu-ns/msg{busy}{}{spread}",
        sched.unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::row;

    fn check_aligned(text: &str) {
        let lines: Vec<&str> = text.lines().collect();
        let bars = |l: &str| {
            l.chars()
                .enumerate()
                .filter(|(_, c)| *c == '|')
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        for l in &lines {
            assert_eq!(bars(l), bars(lines[0]), "misaligned:\n{text}");
        }
    }

    #[test]
    fn every_column_is_as_wide_as_its_widest_cell() {
        let mut long = row("trading", "pekko-request-reply/off", &[50.0, 40.0, 60.0]);
        long.params.insert("runtime".into(), "pekko".into());
        long.params.insert("clients".into(), 40.into());
        let short_row = row("trading", "sync/off", &[10.0, 11.0]);
        let columns = [
            Column::param("clients", "clients"),
            Column::with("ns/msg min-max", spread_ns),
        ];
        let table = rows_table(&columns, &[&short_row, &long]);
        let text = table.markdown();
        check_aligned(&text);
        assert!(text.contains("| pekko-request-reply/off |"), "{text}");
        assert!(text.contains("| sync/off                |"), "{text}");
        assert!(text.contains(" 40.0-60.0 |"), "{text}");
    }

    #[test]
    fn non_ascii_cells_count_as_one_character() {
        let t = Table::new(&["a", "µs"], vec![vec!["x".into(), "1.0".into()]]);
        check_aligned(&t.markdown());
    }

    #[test]
    fn a_single_sample_shows_no_spread_and_a_failed_row_shows_its_reason() {
        let one = row("delayed", "pekko", &[7.0]);
        let mut failed = row("delayed", "actor", &[5.0, 6.0]);
        failed.failure = Some("3 jobs never completed".into());
        let table = rows_table(&PER_MESSAGE, &[&one, &failed]);
        let spread = table
            .header
            .iter()
            .position(|h| h == "ns/msg min-max")
            .unwrap();
        assert_eq!(table.rows[0][spread], "1 sample");
        assert_eq!(table.rows[1][spread], "5.0-6.0");
        assert_eq!(table.header.last().unwrap(), "result");
        assert_eq!(table.rows[0].last().unwrap(), "ok");
        assert_eq!(
            table.rows[1].last().unwrap(),
            "FAILED: 3 jobs never completed"
        );
        let protocol = table.header.iter().position(|h| h == "protocol").unwrap();
        assert_eq!(table.rows[1][protocol], "1 warm-up, then 2 measured runs");
        check_aligned(&table.markdown());
    }

    #[test]
    fn no_result_column_when_every_row_passed() {
        let table = rows_table(&PER_MESSAGE, &[&row("pingpong", "a", &[1.0, 2.0])]);
        assert!(!table.header.iter().any(|h| h == "result"));
    }
}

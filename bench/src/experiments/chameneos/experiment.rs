//! Chameneos as an [`Experiment`]: its flags, its peers' rows, its two
//! tables (the games, and the sweep's seconds per point), the lines under
//! them and its charts. It owns two kinds of rows: `chameneos` and the
//! sweep's `chameneos-sweep`.

use std::collections::BTreeMap;

use clap::Args;

use super::{peer, program, run, rust_peers, seconds, sweep, sweep_cap, Settings, EXPERIMENT};
use crate::experiments::{Better::Lower, Experiment, Headline, Rows};
use crate::pairing::{runtime, threads, threads_text};
use crate::report::Row;
use crate::runner::{RunOptions, Scale, WorkloadError};
use crate::shared::group_thousands;
use crate::site::charts::{self, Bar};
use crate::table::{param_text, rows_table, Column, Table, PER_MESSAGE};

/// The chameneos experiment.
pub struct Chameneos;

/// Chameneos' own flags.
#[derive(Debug, Args)]
pub struct ChameneosArgs {
    /// Meetings per game (default 600,000; `--full`: 6,000,000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    meetings: Option<u64>,
    /// Also run the original post's sweep: 1, 10, 100, ... meetings per game.
    #[arg(long)]
    sweep: bool,
    /// Largest sweep point (default 1,000,000; `--full`: 10,000,000); implies --sweep.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    sweep_max: Option<u64>,
    /// Worker threads of the actor rows (default 1); the actor-3/-10 rows
    /// (and Pekko's) are also played on 2 workers with throughput 5.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    workers: Option<u64>,
    /// Throughput of the actor rows' dispatcher (default 100).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    throughput: Option<u64>,
}

/// The settings, and whether to print the program's output first (the
/// subcommand does, `all` does not).
pub struct Setup {
    settings: Settings,
    program: bool,
}

impl Setup {
    /// The rows, after the program's own output when it is asked for.
    fn rows(&self, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
        let s = &self.settings;
        if self.program {
            print!("{}", program(s.meetings, s.dispatcher)?);
        }
        run(s, options)
    }

    /// Pekko's rows at the same settings.
    fn peer_rows(&self, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
        peer::rows(&self.settings, options)
    }

    /// The Rust peers' rows at the same settings.
    fn rust_peer_rows(&self, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
        rust_peers::rows(&self.settings, options)
    }
}

impl Experiment for Chameneos {
    type Args = ChameneosArgs;
    type Settings = Setup;
    const NAME: &'static str = EXPERIMENT;
    const ABOUT: &'static str =
        "Chameneos: chameneos-redux on actors and threads; prints the program's output first, \
         then the table.";
    const RUN: Rows<Setup> = Setup::rows;
    const PEER: Option<Rows<Setup>> = Some(Setup::peer_rows);
    const RUST_PEERS: Option<Rows<Setup>> = Some(Setup::rust_peer_rows);
    const NOTES: &'static [&'static str] =
        &["The sweep: seconds per game against meetings, log-log, as in the original post."];
    const KEYS: &'static [&'static str] = &["meetings", "creatures"];
    const HEADLINE: Option<Headline> =
        Headline::new("seconds per game, 3 creatures", Lower, seconds, |r| {
            r.experiment == EXPERIMENT && r.num("creatures") == Some(3.0)
        });

    fn owns(&self, experiment: &str) -> bool {
        experiment == EXPERIMENT || experiment == sweep::EXPERIMENT
    }
    fn settings(&self, args: ChameneosArgs, scale: Scale, in_all: bool) -> Result<Setup, String> {
        let mut settings = Settings::for_scale(scale);
        if let Some(n) = args.meetings {
            settings.meetings = n;
        }
        // `all` runs the sweep too, at the scale's cap.
        if in_all || args.sweep || args.sweep_max.is_some() {
            settings.sweep_max = Some(args.sweep_max.unwrap_or_else(|| sweep_cap(scale)));
        }
        if let Some(w) = args.workers {
            settings.dispatcher.workers = w as usize;
        }
        if let Some(t) = args.throughput {
            settings.dispatcher.throughput = t as usize;
        }
        Ok(Setup {
            settings,
            program: !in_all,
        })
    }
    fn columns(&self) -> Vec<Column> {
        let mut columns = vec![
            Column::param("creatures", "creatures"),
            Column::param("meetings", "meetings"),
            Column::with("seconds", |r| {
                seconds(r).map_or_else(String::new, |s| format!("{s:.6}"))
            }),
            Column::param("meetings/s", "meetings_per_s"),
        ];
        columns.extend(PER_MESSAGE[1..3].iter().copied());
        columns.push(Column::with("cost", crate::table::cost_cell));
        columns
    }
    fn tables(&self, rows: &[&Row]) -> Vec<(String, Table)> {
        let (main, swept): (Vec<&Row>, Vec<&Row>) =
            rows.iter().partition(|r| r.experiment == EXPERIMENT);
        let mut out = Vec::new();
        if !main.is_empty() {
            out.push((EXPERIMENT.to_string(), rows_table(&self.columns(), &main)));
        }
        if !swept.is_empty() {
            out.push((
                format!("{}: median seconds per game", sweep::EXPERIMENT),
                sweep::table(&swept),
            ));
        }
        out
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        summary(rows)
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        let bars: Vec<Bar> = rows
            .iter()
            .filter(|r| r.experiment == EXPERIMENT)
            .filter_map(|r| {
                Some(Bar {
                    label: r.variant.clone(),
                    runtime: runtime(r).to_string(),
                    value: seconds(r)?,
                })
            })
            .collect();
        let mut out = Vec::new();
        if !bars.is_empty() {
            out.push(charts::bars(
                "chameneos: seconds per game (median)",
                "seconds",
                &bars,
            ));
        }
        let mut by: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.experiment == sweep::EXPERIMENT) {
            if let (Some(n), Some(s)) = (r.num("meetings"), seconds(r)) {
                let label = format!(
                    "{}-{}",
                    param_text(r, "implementation"),
                    param_text(r, "creatures")
                );
                by.entry((label, runtime(r).to_string()))
                    .or_default()
                    .push((n, s));
            }
        }
        if !by.is_empty() {
            let series = charts::series(by);
            out.push(charts::lines(
                "chameneos: seconds against meetings",
                "meetings",
                "seconds",
                &series,
                (true, true),
            ));
        }
        out
    }
}

/// The lines under the main table: both games per implementation and
/// dispatcher setting (with the threads each ran on) and their ratio to the
/// threads', the mall row and its dispatcher.
fn summary(rows: &[&Row]) -> Vec<String> {
    let mut out = Vec::new();
    let main: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.experiment == EXPERIMENT)
        .collect();
    let find = |v: &str| main.iter().find(|r| r.variant == v).copied();
    let on = |r: &Row| threads(r).map_or_else(|| "threads not recorded".into(), threads_text);
    // Both games per implementation and dispatcher setting: each `-3` row
    // with its `-10` twin (`actor-3-w2-tp5` with `actor-10-w2-tp5`).
    let mut both = Vec::new();
    for three in main.iter().filter(|r| {
        runtime(r) != "pekko" && (r.variant == "threads-3" || r.variant.starts_with("actor-3-"))
    }) {
        let name = three.variant.replacen("-3", "", 1);
        let Some(ten) = find(&three.variant.replacen("-3", "-10", 1)) else {
            continue;
        };
        let (Some(a), Some(b)) = (seconds(three), seconds(ten)) else {
            continue;
        };
        out.push(format!(
            "{name}: both games at {} meetings each in {:.6} s (3 creatures {a:.6} s on {} + 10 \
             creatures {b:.6} s on {})",
            group_thousands(three.msgs),
            a + b,
            on(three),
            on(ten)
        ));
        both.push((name, a + b));
    }
    if let Some((_, threads)) = both.iter().find(|(n, _)| n == "threads") {
        for (name, actor) in both.iter().filter(|(n, _)| n != "threads") {
            // Not a like-for-like pairing: the thread rows run one thread per
            // creature by design; the lines above say how many each side used.
            out.push(format!(
                "{name} / threads, both games: {:.2}x the time (different thread counts, see \
                 above)",
                actor / threads
            ));
        }
    }
    for row in main.iter().filter(|r| r.variant.starts_with("actor-mall")) {
        out.push(format!(
            "{}: {} meetings among {} creatures in {:.6} s ({} meetings/s)",
            row.variant,
            group_thousands(row.msgs),
            row.params["creatures"],
            seconds(row).unwrap_or(f64::NAN),
            group_thousands(row.msgs_per_s.round() as u64)
        ));
    }
    if let Some(mall) = main.iter().find(|r| r.variant.starts_with("actor-mall")) {
        out.push(format!(
            "{}: a pool of {} worker(s), throughput {}",
            mall.variant, mall.params["workers"], mall.params["throughput"]
        ));
    }
    out
}

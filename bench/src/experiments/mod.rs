//! The experiments, one folder each, and the one interface they share.
//!
//! An experiment implements [`Experiment`]: its name (the subcommand and
//! the `experiment` of its rows), its flags and settings, how it runs, its
//! Pekko rows, and how its rows are shown (table columns, lines under the
//! table, charts, the key parameters that identify a workload for
//! `compare` and for pairing rows in ratios, its headline figure). Everything
//! above this module (main.rs, the published results, the HTML report,
//! `compare`) goes through [`LIST`] and never names an experiment, so adding
//! one is a folder here plus one line in the `experiments!` list below.

use std::error::Error;

use clap::{ArgMatches, Args, FromArgMatches};

use crate::pairing;
use crate::report::Row;
use crate::runner::{RunOptions, Scale, WorkloadError};
use crate::table::{rows_table, Column, Table, PER_MESSAGE};

/// Declares the experiment modules and [`LIST`], in run order, from one
/// `module::Type` line per experiment.
macro_rules! experiments {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every experiment, in the order `all` runs them.
        pub const LIST: &[&dyn Entry] = &[$(&$module::$ty),*];
    };
}

experiments![
    pingpong::PingPong,
    micro::Micro,
    fan::Fan,
    delayed::Delayed,
    primes::Primes,
    trading::Trading,
    chameneos::Chameneos,
    remote::Remote,
    trading_cluster::TradingCluster,
    persistence::Persistence,
    sharding::Sharding,
    cluster_app::ClusterApp,
    soak::Soak,
];

/// How one invocation runs: the scale, the repeats and filter, which peers
/// run, and whether this is part of `all`.
#[derive(Clone, Debug)]
pub struct Context {
    /// `--quick`, the default or `--full`.
    pub scale: Scale,
    /// `--repeats` and `--filter`.
    pub options: RunOptions,
    /// Run the experiment's Pekko rows after troupe's.
    pub pekko: bool,
    /// Run the experiment's Rust peer rows (kameo, ractor, actix) after
    /// troupe's.
    pub rust: bool,
    /// Running under `all` (with every flag of the experiment at its default).
    pub in_all: bool,
}

/// A headline figure: what the report's summary table shows for an
/// experiment, per thread count and workload.
#[derive(Clone, Copy)]
pub struct Headline {
    /// What the figure is ("ns per one-way hop").
    pub figure: &'static str,
    /// The figure of a row.
    pub value: fn(&Row) -> Option<f64>,
    /// Whether a lower figure is better.
    pub lower_is_better: bool,
    /// The rows that may stand for the experiment (the others are detail).
    pub select: fn(&Row) -> bool,
}

/// How an experiment makes rows from its settings: its module's `run`, or
/// its peer module's `rows`.
pub type Rows<S> = fn(&S, &RunOptions) -> Result<Vec<Row>, WorkloadError>;

/// The flags of an experiment that takes only the common ones.
#[derive(Debug, Args)]
pub struct NoFlags {}

/// Which way a headline figure is better.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// A lower figure (a time).
    Lower,
    /// A higher figure (a rate).
    Higher,
}

impl Headline {
    /// The headline `figure`: `value` of the rows `select` takes, better
    /// the way `better` says.
    pub const fn new(
        figure: &'static str,
        better: Better,
        value: fn(&Row) -> Option<f64>,
        select: fn(&Row) -> bool,
    ) -> Option<Self> {
        Some(Headline {
            figure,
            value,
            lower_is_better: matches!(better, Better::Lower),
            select,
        })
    }
}

/// A row's nanoseconds per message, as a headline value.
pub fn ns_per_msg(row: &Row) -> Option<f64> {
    Some(row.ns_per_msg)
}

/// A row's messages per second, as a headline value.
pub fn msgs_per_s(row: &Row) -> Option<f64> {
    Some(row.msgs_per_s)
}

/// One experiment: the shell every experiment shares. An experiment states
/// what is its own (name, help, flags, how its settings are made, how it
/// runs, what it shows) as associated items; everything with a default only
/// needs writing when the experiment differs from it. The shell ([`Entry`]
/// for every `Experiment`) parses the flags, runs the rows and the peers'
/// and prints them.
pub trait Experiment: Sync {
    /// Its own flags, added to the common ones of its subcommand
    /// ([`NoFlags`] for none).
    type Args: Args;
    /// What `run` needs, made from the flags and the scale.
    type Settings;
    /// The subcommand, and the `experiment` field of its rows.
    const NAME: &'static str;
    /// One line of help for the subcommand.
    const ABOUT: &'static str;
    /// Makes troupe's and the baselines' rows (usually the module's `run`).
    const RUN: Rows<Self::Settings>;
    /// Makes the Pekko peer's rows at the same settings (usually the peer
    /// module's `rows`); none when the experiment has no peer.
    const PEER: Option<Rows<Self::Settings>> = None;
    /// Makes the Rust peers' rows (kameo, ractor, actix) at the same
    /// settings (usually the `rust_peers` module's `rows`); none when the
    /// experiment has no Rust peer.
    const RUST_PEERS: Option<Rows<Self::Settings>> = None;
    /// Whether `all` runs it.
    const IN_ALL: bool = true;
    /// Its own columns, after the shared per-message ones (see
    /// [`Experiment::columns`]).
    const COLUMNS: &'static [Column] = &[];
    /// What its tables and charts show, for the report.
    const NOTES: &'static [&'static str] = &[];
    /// The parameters that identify a workload besides the variant: rows are
    /// matched on them by `compare` and paired on them in ratios.
    const KEYS: &'static [&'static str] = &[];
    /// Its headline figure for the report's summary table.
    const HEADLINE: Option<Headline> = None;

    /// Whether rows of `experiment` belong to it (some own more than one
    /// kind of row).
    fn owns(&self, experiment: &str) -> bool {
        experiment == Self::NAME
    }
    /// The settings for these flags; `Err` for flags that make no sense.
    fn settings(
        &self,
        args: Self::Args,
        scale: Scale,
        in_all: bool,
    ) -> Result<Self::Settings, String>;
    /// Its table's columns: the shared per-message ones and
    /// [`Experiment::COLUMNS`].
    fn columns(&self) -> Vec<Column> {
        let mut columns = PER_MESSAGE.to_vec();
        columns.extend_from_slice(Self::COLUMNS);
        columns
    }
    /// Its tables, titled, each rendered by the shared renderer.
    fn tables(&self, rows: &[&Row]) -> Vec<(String, Table)> {
        vec![(Self::NAME.to_string(), rows_table(&self.columns(), rows))]
    }
    /// Lines under its tables (measured figures that are not columns).
    fn extras(&self, _rows: &[&Row]) -> Vec<String> {
        Vec::new()
    }
    /// Its charts, as SVG.
    fn charts(&self, _rows: &[&Row]) -> Vec<String> {
        Vec::new()
    }
}

/// An experiment with its types erased, as [`LIST`] holds it; implemented
/// for every [`Experiment`].
pub trait Entry: Sync {
    /// See [`Experiment::NAME`].
    fn name(&self) -> &'static str;
    /// See [`Experiment::IN_ALL`].
    fn in_all(&self) -> bool;
    /// See [`Experiment::owns`].
    fn owns(&self, experiment: &str) -> bool;
    /// See [`Experiment::ABOUT`].
    fn about(&self) -> &'static str;
    /// The subcommand with the experiment's own flags (not the common ones).
    fn command(&self) -> clap::Command;
    /// Makes the settings from parsed flags, runs troupe's rows and, when
    /// asked, the peers', and prints the tables and the lines under them.
    fn execute(&self, args: &ArgMatches, ctx: &Context) -> Result<Vec<Row>, Box<dyn Error>>;
    /// See [`Experiment::tables`].
    fn tables(&self, rows: &[&Row]) -> Vec<(String, Table)>;
    /// See [`Experiment::extras`].
    fn extras(&self, rows: &[&Row]) -> Vec<String>;
    /// See [`Experiment::NOTES`].
    fn notes(&self) -> Vec<String>;
    /// See [`Experiment::charts`].
    fn charts(&self, rows: &[&Row]) -> Vec<String>;
    /// See [`Experiment::KEYS`].
    fn keys(&self) -> &'static [&'static str];
    /// See [`Experiment::HEADLINE`].
    fn headline(&self) -> Option<Headline>;
}

impl<E: Experiment> Entry for E {
    fn name(&self) -> &'static str {
        E::NAME
    }
    fn in_all(&self) -> bool {
        E::IN_ALL
    }
    fn owns(&self, experiment: &str) -> bool {
        Experiment::owns(self, experiment)
    }
    fn about(&self) -> &'static str {
        E::ABOUT
    }
    fn command(&self) -> clap::Command {
        // The about goes last: augmenting would replace it with the doc
        // comment of the Args struct.
        E::Args::augment_args(clap::Command::new(E::NAME)).about(E::ABOUT)
    }
    fn execute(&self, args: &ArgMatches, ctx: &Context) -> Result<Vec<Row>, Box<dyn Error>> {
        let args = E::Args::from_arg_matches(args)?;
        let settings = self.settings(args, ctx.scale, ctx.in_all)?;
        let mut rows = (E::RUN)(&settings, &ctx.options)?;
        for (asked, peer) in [(ctx.pekko, E::PEER), (ctx.rust, E::RUST_PEERS)] {
            if let (true, Some(peer)) = (asked, peer) {
                rows.extend(peer(&settings, &ctx.options)?);
            }
        }
        if !rows.is_empty() {
            print!("{}", text(self, &rows));
        }
        Ok(rows)
    }
    fn tables(&self, rows: &[&Row]) -> Vec<(String, Table)> {
        Experiment::tables(self, rows)
    }
    fn extras(&self, rows: &[&Row]) -> Vec<String> {
        Experiment::extras(self, rows)
    }
    fn notes(&self) -> Vec<String> {
        E::NOTES.iter().map(|n| n.to_string()).collect()
    }
    fn charts(&self, rows: &[&Row]) -> Vec<String> {
        Experiment::charts(self, rows)
    }
    fn keys(&self) -> &'static [&'static str] {
        E::KEYS
    }
    fn headline(&self) -> Option<Headline> {
        E::HEADLINE
    }
}

/// The experiment that owns rows of `experiment`, if any.
pub fn find(experiment: &str) -> Option<&'static dyn Entry> {
    LIST.iter().copied().find(|e| e.owns(experiment))
}

/// The experiment's flags at their defaults, as `all` runs it.
pub fn default_args(entry: &dyn Entry) -> Result<ArgMatches, clap::Error> {
    entry.command().try_get_matches_from([entry.name()])
}

/// The rows of `rows` grouped by the experiment that owns them, in the order
/// their experiments first appear; rows no experiment owns (from a newer
/// or older binary) are left out.
pub fn group(rows: &[Row]) -> Vec<(&'static dyn Entry, Vec<Row>)> {
    let mut out: Vec<(&'static dyn Entry, Vec<Row>)> = Vec::new();
    for r in rows {
        let Some(entry) = find(&r.experiment) else {
            continue;
        };
        match out.iter_mut().find(|(e, _)| e.name() == entry.name()) {
            Some((_, mine)) => mine.push(r.clone()),
            None => out.push((entry, vec![r.clone()])),
        }
    }
    out
}

/// An experiment's rows as text for the terminal: each table under its
/// title, the lines under it, and the ratios (pairing rows with the same
/// thread count).
pub fn text(entry: &dyn Entry, rows: &[Row]) -> String {
    let refs: Vec<&Row> = rows.iter().collect();
    let mut out = String::new();
    for (title, table) in entry.tables(&refs) {
        out.push_str(&format!("{title}:\n\n{}\n", table.markdown()));
    }
    for line in entry.extras(&refs) {
        out.push_str(&format!("{line}\n"));
    }
    let ratios = pairing::ratio_lines(rows, entry.keys());
    if !ratios.is_empty() {
        out.push_str(
            "ratios (the other row's time per message over troupe's; above 1: troupe is faster):\n",
        );
        for line in ratios {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_has_a_unique_name_and_parses_its_defaults() {
        let mut names: Vec<&str> = LIST.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LIST.len(), "two experiments share a name");
        for entry in LIST {
            entry.command().debug_assert();
            default_args(*entry).unwrap_or_else(|e| panic!("{}: {e}", entry.name()));
            assert!(find(entry.name()).is_some_and(|e| e.name() == entry.name()));
        }
        assert_eq!(find("chameneos-sweep").map(|e| e.name()), Some("chameneos"));
        assert!(find("no-such-experiment").is_none());
    }

    #[test]
    fn rows_group_by_the_experiment_that_owns_them_in_first_seen_order() {
        use crate::report::tests::row;
        let rows = vec![
            row("trading", "a", &[1.0]),
            row("chameneos-sweep", "b", &[1.0]),
            row("unknown", "c", &[1.0]),
            row("chameneos", "d", &[1.0]),
            row("trading", "e", &[1.0]),
        ];
        let grouped = group(&rows);
        let groups: Vec<(&str, Vec<&str>)> = grouped
            .iter()
            .map(|(e, r)| (e.name(), r.iter().map(|r| r.variant.as_str()).collect()))
            .collect();
        assert_eq!(
            groups,
            [("trading", vec!["a", "e"]), ("chameneos", vec!["b", "d"])]
        );
    }
}

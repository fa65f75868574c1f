//! troupe-bench: the command line that runs the experiments of
//! `docs/experiments.md` on troupe, on baselines without actors and on the
//! peers (Apache Pekko; kameo, ractor and actix), prints one table per experiment and optionally writes the
//! results as JSON, a report folder, the results of `docs/benchmarks.md`
//! and the README's summary.
//!
//! This file only parses arguments and dispatches: every experiment is an
//! entry of [`experiments::LIST`] that brings its own subcommand and flags;
//! the commands that are not experiments (`all`, `report`, `compare` and the
//! hidden probes) are declared here.

#![forbid(unsafe_code)]

mod child;
mod compare;
mod core_latency;
mod cost;
mod experiments;
mod nats;
mod pairing;
mod peer;
mod processes;
mod progress;
mod readme;
mod report;
mod rss;
mod runner;
mod rust_peers;
mod shared;
mod site;
mod table;
mod warmup;

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::experiments::{cluster_app, delayed, micro, remote};
use crate::experiments::{Context, LIST};
use crate::report::{Machine, Report, Row, RunInfo};
use crate::runner::{RunOptions, Scale};
use crate::warmup::WarmUp;

/// Benchmarks troupe against plain threads, tokio, Apache Pekko and the Rust
/// actor libraries kameo, ractor and actix on the experiments of
/// docs/experiments.md.
#[derive(Debug, Parser)]
#[command(name = "troupe-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The commands that are not experiments (each experiment adds its own).
#[derive(Debug, Subcommand)]
enum Command {
    /// Internal: one run of the delayed experiment in a fresh process; prints JSON.
    #[command(hide = true)]
    DelayedProbe {
        #[arg(long)]
        variant: String,
        #[arg(long)]
        jobs: u64,
        #[arg(long)]
        workers: usize,
        #[arg(long)]
        capacity: usize,
        #[arg(long)]
        delay_ms: u64,
    },
    /// Internal: the echo process of the remote experiment; serves until
    /// its stdin closes.
    #[command(hide = true)]
    RemoteEcho {
        /// `troupe` or `nats`.
        #[arg(long)]
        transport: String,
        /// The nats-server's URL.
        #[arg(long)]
        url: String,
    },
    /// Internal: one more client process of the remote experiment's
    /// rows with several clients.
    #[command(hide = true)]
    RemoteClient {
        /// `troupe` or `nats`.
        #[arg(long)]
        transport: String,
        /// The nats-server's URL.
        #[arg(long)]
        url: String,
        /// The client's node name.
        #[arg(long)]
        name: String,
    },
    /// Internal: one node of the distributed trading experiment's cluster.
    #[command(hide = true)]
    TradingNode(trading::cluster::NodeArgs),
    /// Internal: one node process of the cluster-app experiment; serves
    /// until its stdin closes.
    #[command(hide = true)]
    ClusterAppNode {
        /// The nats-server's URL.
        #[arg(long)]
        url: String,
        /// The node's name.
        #[arg(long)]
        name: String,
        /// `jetstream` or `local`.
        #[arg(long)]
        journal: String,
        /// Shards of the entity type.
        #[arg(long)]
        shards: u32,
    },
    /// Internal: measures one spawn run in a fresh process and prints JSON.
    #[command(hide = true)]
    SpawnProbe {
        /// Actors to spawn.
        #[arg(long)]
        actors: usize,
    },
    /// Every experiment at its default sizes; writes the report folder.
    #[command(display_order = 100)]
    All {
        #[command(flatten)]
        common: CommonArgs,
        /// Where to write results.json, index.html and summary.md.
        #[arg(long, value_name = "DIR", default_value = "report")]
        report: PathBuf,
        /// Do not write the report folder.
        #[arg(long, conflicts_with = "report")]
        no_report: bool,
    },
    /// Renders the report folder from a saved JSON file.
    #[command(display_order = 100)]
    Report {
        /// A JSON file written by --json (or a report's results.json).
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// The folder to write.
        #[arg(long, value_name = "DIR", default_value = "report")]
        out: PathBuf,
        /// Also rewrite the summary section of this README from the saved
        /// run (as `all --readme` does at the end of a run).
        #[arg(long, value_name = "FILE")]
        readme: Option<PathBuf>,
        /// Also rewrite the results section of this page (docs/benchmarks.md)
        /// from the saved run (as `all --docs` does at the end of a run).
        #[arg(long, value_name = "FILE")]
        docs: Option<PathBuf>,
    },
    /// Prints the change of every row between two saved runs (or two sets
    /// of runs: `--old` and `--new`, each repeated).
    #[command(display_order = 100)]
    Compare {
        /// The earlier run's JSON.
        old: Option<PathBuf>,
        /// The later run's JSON.
        new: Option<PathBuf>,
        /// One more run of the earlier side (repeat the flag); a side's
        /// figure is then the median of its runs' medians.
        #[arg(long = "old", value_name = "FILE")]
        more_old: Vec<PathBuf>,
        /// One more run of the later side (repeat the flag).
        #[arg(long = "new", value_name = "FILE")]
        more_new: Vec<PathBuf>,
        /// Flag changes larger than this many percent.
        #[arg(long, default_value_t = 10.0)]
        threshold: f64,
    },
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
struct CommonArgs {
    /// Also write the results to FILE as JSON: {"machine": {...}, "run": {...}, "rows": [...]}.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Measured runs per row, after warm-up runs until three in a row agree
    /// within 3% (at least 3, at most 15).
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Smaller sizes, for CI smoke runs.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// Exactly N warm-up runs per row, instead of warming up until three
    /// runs in a row agree: for smoke runs, which check every result but
    /// not speed (each row's protocol says so).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    warmup: Option<u32>,
    /// The original posts' sizes, however long they take.
    #[arg(long)]
    full: bool,
    /// Run only the rows whose variant contains TEXT.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Run the whole command in N fresh processes, one after the other, and
    /// report every row over them: the median of the processes' medians,
    /// the fastest and the slowest process, and their ratio.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    processes: u32,
    /// Rewrite the short summary of this README (between its
    /// `<!-- summary:start -->` and `<!-- summary:end -->` markers).
    #[arg(long, value_name = "FILE")]
    readme: Option<PathBuf>,
    /// Rewrite the whole results in this page, usually docs/benchmarks.md
    /// (between its `<!-- results:start -->` and `<!-- results:end -->`
    /// markers).
    #[arg(long, value_name = "FILE")]
    docs: Option<PathBuf>,
    /// Also run peers after troupe's rows: `pekko` (peers/pekko, built with
    /// Maven if needed), `rust` (kameo, ractor and actix: peers/rust, built
    /// with cargo), `all` (both) or `none`. Without the flag, the `all`
    /// command runs every peer that can be built (saying which cannot) and
    /// an experiment's own command runs none.
    #[arg(long, value_name = "NAME", value_parser = ["pekko", "rust", "all", "none"])]
    peer: Option<String>,
}

impl CommonArgs {
    /// Puts `--warmup` in force for the whole process (see [`WarmUp::fix`]).
    fn apply_warmup(&self) {
        if let Some(runs) = self.warmup {
            WarmUp::fix(runs as usize);
        }
    }

    fn scale(&self) -> Scale {
        match (self.quick, self.full) {
            (true, _) => Scale::Quick,
            (_, true) => Scale::Full,
            _ => Scale::Default,
        }
    }

    /// Which peers to run, `(pekko, rust)`: as asked, or for `all` (`auto`)
    /// each whenever it can be built, saying so when it cannot. A peer asked
    /// for by name that cannot be built is an error.
    fn peers(&self, auto: bool) -> Result<(bool, bool), String> {
        let asked = |name: &str| match self.peer.as_deref() {
            Some("all") => Some(true),
            Some(p) => Some(p == name),
            None if auto => None,
            None => Some(false),
        };
        let decide = |name: &str, build: fn() -> Result<(), String>, what: &str| match asked(name) {
            Some(false) => Ok(false),
            Some(true) => build()
                .map(|()| true)
                .map_err(|e| format!("--peer {name}: {e}")),
            None => match build() {
                Ok(()) => Ok(true),
                Err(e) => {
                    eprintln!("troupe-bench: {what} skipped: {e}");
                    Ok(false)
                }
            },
        };
        Ok((
            decide("pekko", peer::ensure_built, "the Pekko peer is")?,
            decide(
                "rust",
                rust_peers::ensure_built,
                "the Rust peers (kameo, ractor, actix) are",
            )?,
        ))
    }

    fn context(&self, (pekko, rust): (bool, bool), in_all: bool) -> Context {
        Context {
            scale: self.scale(),
            options: self.options(),
            pekko,
            rust,
            in_all,
        }
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            repeats: self.repeats,
            filter: self.filter.clone(),
        }
    }
}

/// The whole command line: the declared commands, and one subcommand per
/// experiment (its own flags plus the common ones), listed first.
fn cli() -> clap::Command {
    let mut cli = Cli::command();
    for (order, entry) in LIST.iter().enumerate() {
        // The common flags' doc comment would replace the about: set it last.
        cli = cli.subcommand(
            CommonArgs::augment_args(entry.command())
                .about(entry.about())
                .display_order(order),
        );
    }
    cli
}

fn main() -> ExitCode {
    match run(cli().get_matches()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("troupe-bench: error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Says so when troupe's runtime metrics are compiled in: the figures then
/// include a sample per message (see `troupe::RUNTIME_METRICS`). Only for
/// the commands that measure, not for the helper processes they start.
fn warn_if_runtime_metrics() {
    if troupe::RUNTIME_METRICS {
        eprintln!(
            "troupe-bench: warning: this binary was built with troupe's runtime metrics on (a \
             build of the whole workspace turns them on through primes's default features): \
             every handled message pays for a sample, and the report says so. For figures \
             comparable with the published ones, build it alone: cargo build --release -p \
             troupe-bench"
        );
    }
}

fn run(matches: clap::ArgMatches) -> Result<(), Box<dyn Error>> {
    let started = SystemTime::now();
    // Read before anything runs: `--readme` and `--docs` rewrite tracked
    // files, which would otherwise make the checkout look dirty.
    let machine = Machine::detect();
    let mut report_dir: Option<PathBuf> = None;
    let experiment = matches
        .subcommand()
        .and_then(|(name, args)| Some((LIST.iter().find(|e| e.name() == name)?, args)));
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (common, rows) = if let Some((entry, args)) = experiment {
        warn_if_runtime_metrics();
        let common = CommonArgs::from_arg_matches(args)?;
        common.apply_warmup();
        let rows = if common.processes > 1 {
            processes::run(common.processes, &argv, false)?
        } else {
            entry.execute(args, &common.context(common.peers(false)?, false))?
        };
        (common, rows)
    } else {
        match Cli::from_arg_matches(&matches)?.command {
            Command::DelayedProbe {
                variant,
                jobs,
                workers,
                capacity,
                delay_ms,
            } => {
                let sizes = delayed::Settings {
                    jobs,
                    workers,
                    capacity,
                    delay: std::time::Duration::from_millis(delay_ms),
                };
                let outcome = delayed::probe::run_here(&variant, &sizes)?;
                println!("{}", serde_json::to_string(&outcome)?);
                return Ok(());
            }
            Command::RemoteEcho { transport, url } => {
                let transport = remote::Transport::parse(&transport)
                    .ok_or_else(|| format!("unknown transport {transport}"))?;
                remote::serve_echo(transport, &url)?;
                return Ok(());
            }
            Command::RemoteClient {
                transport,
                url,
                name,
            } => {
                let transport = remote::Transport::parse(&transport)
                    .ok_or_else(|| format!("unknown transport {transport}"))?;
                remote::serve_client(transport, &url, &name)?;
                return Ok(());
            }
            Command::TradingNode(args) => {
                args.run()?;
                return Ok(());
            }
            Command::ClusterAppNode {
                url,
                name,
                journal,
                shards,
            } => {
                cluster_app::node::serve(&url, &name, &journal, shards)?;
                return Ok(());
            }
            Command::SpawnProbe { actors } => {
                let probe = micro::spawn_probe(actors)?;
                println!("{}", serde_json::to_string(&probe)?);
                return Ok(());
            }
            Command::Report {
                from,
                out,
                readme,
                docs,
            } => {
                let report = compare::load(&from)?;
                site::write(&out, &report)?;
                readme::write_all(
                    docs.as_deref(),
                    readme.as_deref(),
                    &report.machine,
                    &report.run,
                    &report.rows,
                )?;
                eprintln!(
                    "troupe-bench: wrote {}/index.html, summary.md and results.json",
                    out.display()
                );
                return Ok(());
            }
            Command::Compare {
                old,
                new,
                more_old,
                more_new,
                threshold,
            } => {
                let side = |first: Option<PathBuf>, more: Vec<PathBuf>, name: &str| {
                    let paths: Vec<PathBuf> = first.into_iter().chain(more).collect();
                    if paths.is_empty() {
                        return Err(format!(
                            "compare: no {name} run given (OLD.json NEW.json, or --old FILE and --new FILE)"
                        ));
                    }
                    paths
                        .iter()
                        .map(|p| compare::load(p))
                        .collect::<Result<Vec<_>, _>>()
                };
                let old = side(old, more_old, "old")?;
                let new = side(new, more_new, "new")?;
                print!("{}", compare::render(&old, &new, threshold));
                return Ok(());
            }
            Command::All {
                common,
                report,
                no_report,
            } => {
                warn_if_runtime_metrics();
                common.apply_warmup();
                report_dir = (!no_report).then_some(report);
                if common.processes > 1 {
                    let rows = processes::run(common.processes, &argv, true)?;
                    return finish(machine, started, &common, rows, report_dir);
                }
                let ctx = common.context(common.peers(true)?, true);
                let mut rows = Vec::new();
                for entry in LIST.iter().filter(|e| e.in_all()) {
                    rows.extend(entry.execute(&experiments::default_args(*entry)?, &ctx)?);
                }
                (common, rows)
            }
        }
    };
    finish(machine, started, &common, rows, report_dir)
}

/// Writes what was asked (docs and README sections, JSON, report folder) and fails
/// the run when a row failed.
fn finish(
    machine: Machine,
    started: SystemTime,
    common: &CommonArgs,
    rows: Vec<Row>,
    report_dir: Option<PathBuf>,
) -> Result<(), Box<dyn Error>> {
    if rows.is_empty() {
        let filter = common.filter.as_deref().unwrap_or_default();
        return Err(format!("no rows match --filter {filter:?}").into());
    }
    readme::write_all(
        common.docs.as_deref(),
        common.readme.as_deref(),
        &machine,
        &RunInfo::new(started),
        &rows,
    )?;
    let mut report = Report {
        machine,
        run: RunInfo::new(started),
        rows,
    };
    if let Some(path) = &common.json {
        report.write_json(path)?;
        eprintln!("troupe-bench: wrote {}", path.display());
    }
    if let Some(seconds) = report.run.duration_s {
        eprintln!(
            "troupe-bench: the run took {}",
            report::duration_text(seconds)
        );
    }
    if let Some(dir) = report_dir {
        report.run.peak_rss_bytes = rss::peak_rss_bytes().ok();
        site::write(&dir, &report)?;
        eprintln!(
            "troupe-bench: wrote the report: {}/index.html, summary.md, results.json",
            dir.display()
        );
    }
    // A failed row is reported with the rest (so its figures and reason are
    // in every output), and then fails the run.
    let failed: Vec<String> = report
        .rows
        .iter()
        .filter_map(|r| {
            r.failure
                .as_ref()
                .map(|f| format!("{} {}: {f}", r.experiment, r.variant))
        })
        .collect();
    if !failed.is_empty() {
        return Err(format!("{} row(s) failed:\n  {}", failed.len(), failed.join("\n  ")).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent_and_keeps_every_documented_form() {
        cli().debug_assert();
        for line in [
            "troupe-bench all --quick --repeats 1 --peer none --report /tmp/r --json /tmp/a.json",
            "troupe-bench pingpong --repetitions 10 --filter tp5",
            "troupe-bench primes --connections 10 --requests 100 --rate 50 --n 20",
            "troupe-bench trading --variants sync,one-way --txlog off --clients 1,10",
            "troupe-bench trading --variants one-way --clients 10,40 --processes 10",
            "troupe-bench chameneos --meetings 100 --sweep --workers 2 --throughput 5",
            "troupe-bench delayed --jobs 10 --peer pekko",
            "troupe-bench pingpong --peer rust --quick",
            "troupe-bench all --peer all --quick",
            "troupe-bench soak --minutes 0.1 --quick",
            "troupe-bench micro --json /tmp/m.json",
            "troupe-bench compare a.json b.json --threshold 5",
            "troupe-bench report --from a.json --out dir",
            "troupe-bench delayed-probe --variant actor --jobs 1 --workers 1 --capacity 1 --delay-ms 1",
            "troupe-bench spawn-probe --actors 10",
        ] {
            cli()
                .try_get_matches_from(line.split(' '))
                .unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }
}

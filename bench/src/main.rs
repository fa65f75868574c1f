//! troupe-bench: the command line that runs the seed experiments of
//! `EXPERIMENTS.md` on troupe and on baselines without actors, prints one
//! table per experiment and optionally writes the results as JSON.
//!
//! This file only parses arguments and wires the pieces together: timing and
//! statistics live in `runner`, output in `report`, and each experiment in its
//! own module.

#![forbid(unsafe_code)]

mod compare;
mod experiments;
mod peer;
mod progress;
mod readme;
mod report;
mod rss;
mod runner;
mod site;

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand};

use crate::experiments::{chameneos, delayed, micro, pingpong, primes, soak, trading};

use crate::report::{Machine, Report, Row, RunInfo};
use crate::runner::{RunOptions, Scale};

/// Benchmarks troupe against plain threads and tokio on the seed experiments.
#[derive(Debug, Parser)]
#[command(name = "troupe-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ping-pong (seed 001): two parties bounce a message; reports ns per one-way hop.
    Pingpong {
        #[command(flatten)]
        common: CommonArgs,
        /// Round trips per run for every row, instead of the scale's sizes.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        repetitions: Option<u64>,
    },
    /// Micro-benchmarks: spawn cost, idle-actor memory, ask round trip from a thread.
    Micro {
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Delayed messages (seed 004): jobs answered by replies scheduled one second later.
    Delayed {
        #[command(flatten)]
        common: CommonArgs,
        /// Jobs per run (default 1,000,000; `--full`: 10,000,000).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
    },
    /// Primes REST service (seed 003): load against the actor, plain and blocking servers.
    Primes {
        #[command(flatten)]
        common: CommonArgs,
        /// Connections opened at once (default 1,000).
        #[arg(long, value_name = "C", value_parser = clap::value_parser!(u64).range(1..))]
        connections: Option<u64>,
        /// Requests per round (default 20,000).
        #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..))]
        requests: Option<u64>,
        /// The n of `/primes/<n>`.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        n: u64,
        /// Open loop: start requests at this fixed rate (requests per second).
        #[arg(long, value_name = "PER_S")]
        rate: Option<f64>,
        /// Load a server elsewhere (host:port) instead of the three in-process ones.
        #[arg(long, value_name = "ADDR")]
        url: Option<std::net::SocketAddr>,
    },
    /// Chameneos (seed 002): chameneos-redux on actors and threads; prints the
    /// program's output first, then the table.
    Chameneos {
        #[command(flatten)]
        common: CommonArgs,
        /// Meetings per game (default 600,000; `--full`: 6,000,000).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        meetings: Option<u64>,
        /// Also run the seed post's sweep: 1, 10, 100, ... meetings per game.
        #[arg(long)]
        sweep: bool,
        /// Largest sweep point (default 1,000,000; `--full`: 10,000,000); implies --sweep.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        sweep_max: Option<u64>,
        /// Worker threads of the actor rows (default 1).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
        workers: Option<u64>,
        /// Throughput of the actor rows' dispatcher (default 100).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        throughput: Option<u64>,
    },
    /// Trading system (seed 000): the seed scenario per variant, log mode and
    /// number of clients.
    Trading {
        #[command(flatten)]
        common: CommonArgs,
        /// Clients, comma-separated (default 1,10,40 with the log off and 10
        /// with it on; `--full`: the post's 1..40 for every mode).
        #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
        clients: Option<Vec<usize>>,
        /// Variants, comma-separated: sync, request-reply, one-way (default all).
        #[arg(long, value_name = "V,V,..", value_delimiter = ',')]
        variants: Option<Vec<::trading::Variant>>,
        /// Log modes, comma-separated: off, buffered, group-commit (default all).
        #[arg(long, value_name = "M,M,..", value_delimiter = ',')]
        txlog: Option<Vec<::trading::TxLog>>,
        /// Orders per run with the log off or buffered (default 750,000).
        #[arg(long, value_name = "N")]
        orders: Option<usize>,
        /// Orders per run under group commit (default 30,000; `--full`: 150,000).
        #[arg(long, value_name = "N")]
        synced_orders: Option<usize>,
        /// Directory under which each run's logs are written (and removed).
        #[arg(long, value_name = "DIR")]
        log_dir: Option<PathBuf>,
    },
    /// Soak: minutes of trading + primes + delayed + overload in one process, the
    /// resident memory sampled every second; reports the drift.
    Soak {
        #[command(flatten)]
        common: CommonArgs,
        /// How long (default 10 minutes; `--quick`: 1).
        #[arg(long, value_name = "MIN")]
        minutes: Option<f64>,
    },
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
    /// Internal: measures one spawn run in a fresh process and prints JSON.
    #[command(hide = true)]
    SpawnProbe {
        /// Actors to spawn.
        #[arg(long)]
        actors: usize,
    },
    /// Every experiment at its default sizes; writes the report folder.
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
    Report {
        /// A JSON file written by --json (or a report's results.json).
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// The folder to write.
        #[arg(long, value_name = "DIR", default_value = "report")]
        out: PathBuf,
    },
    /// Prints the change of every row between two saved runs.
    Compare {
        /// The earlier run's JSON.
        old: PathBuf,
        /// The later run's JSON.
        new: PathBuf,
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
    /// Measured runs per row, after one warm-up run.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Smaller sizes, for CI smoke runs.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The original posts' sizes, however long they take.
    #[arg(long)]
    full: bool,
    /// Run only the rows whose variant contains TEXT.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Rewrite the results section of this README (between its
    /// `<!-- results:start -->` and `<!-- results:end -->` markers).
    #[arg(long, value_name = "FILE")]
    readme: Option<PathBuf>,
    /// Also run a peer after troupe's rows: `pekko` (peers/pekko, built with
    /// Maven if needed) or `none`. `all` runs Pekko whenever java and mvn
    /// are present.
    #[arg(long, value_name = "NAME", value_parser = ["pekko", "none"])]
    peer: Option<String>,
}

impl CommonArgs {
    fn scale(&self) -> Scale {
        match (self.quick, self.full) {
            (true, _) => Scale::Quick,
            (_, true) => Scale::Full,
            _ => Scale::Default,
        }
    }

    /// Whether to run the Pekko peer: as asked, or for `all` (`auto`)
    /// whenever it can be built, saying so when it cannot.
    fn pekko(&self, auto: bool) -> Result<bool, String> {
        match self.peer.as_deref() {
            Some("none") => Ok(false),
            Some(_) => peer::ensure_built()
                .map(|()| true)
                .map_err(|e| format!("--peer pekko: {e}")),
            None if auto => match peer::ensure_built() {
                Ok(()) => Ok(true),
                Err(e) => {
                    eprintln!("troupe-bench: the Pekko peer is skipped: {e}");
                    Ok(false)
                }
            },
            None => Ok(false),
        }
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            repeats: self.repeats,
            filter: self.filter.clone(),
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("troupe-bench: error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn Error>> {
    let started = SystemTime::now();
    let mut report_dir: Option<PathBuf> = None;
    let (common, rows) = match cli.command {
        Command::Pingpong {
            common,
            repetitions,
        } => {
            let sizes = match repetitions {
                Some(n) => pingpong::Sizes::uniform(n),
                None => pingpong::Sizes::for_scale(common.scale()),
            };
            let rows = run_pingpong(&sizes, &common.options(), common.pekko(false)?)?;
            (common, rows)
        }
        Command::Primes {
            common,
            connections,
            requests,
            n,
            rate,
            url,
        } => {
            let mut settings = primes::Settings::for_scale(common.scale());
            if let Some(c) = connections {
                settings.connections = c as usize;
            }
            if let Some(r) = requests {
                settings.requests = r;
            }
            settings.n = n as usize;
            settings.rate = rate;
            settings.url = url;
            if rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
                return Err("--rate must be a positive number of requests per second".into());
            }
            let rows = run_primes(&settings, &common.options(), common.pekko(false)?)?;
            (common, rows)
        }
        Command::Delayed { common, jobs } => {
            let mut sizes = delayed::Sizes::for_scale(common.scale());
            if let Some(jobs) = jobs {
                sizes.jobs = jobs;
            }
            let rows = run_delayed(&sizes, &common.options(), common.pekko(false)?)?;
            (common, rows)
        }
        Command::DelayedProbe {
            variant,
            jobs,
            workers,
            capacity,
            delay_ms,
        } => {
            let sizes = delayed::Sizes {
                jobs,
                workers,
                capacity,
                delay: std::time::Duration::from_millis(delay_ms),
            };
            let outcome = delayed::probe::run_here(&variant, &sizes)?;
            println!("{}", serde_json::to_string(&outcome)?);
            return Ok(());
        }
        Command::SpawnProbe { actors } => {
            let probe = micro::spawn_probe(actors)?;
            println!("{}", serde_json::to_string(&probe)?);
            return Ok(());
        }
        Command::Chameneos {
            common,
            meetings,
            sweep,
            sweep_max,
            workers,
            throughput,
        } => {
            let mut settings = chameneos::Settings::for_scale(common.scale());
            if let Some(n) = meetings {
                settings.meetings = n;
            }
            if sweep || sweep_max.is_some() {
                settings.sweep_max =
                    Some(sweep_max.unwrap_or_else(|| chameneos::sweep_cap(common.scale())));
            }
            if let Some(w) = workers {
                settings.dispatcher.workers = w as usize;
            }
            if let Some(t) = throughput {
                settings.dispatcher.throughput = t as usize;
            }
            print!(
                "{}",
                chameneos::program(settings.meetings, settings.dispatcher)?
            );
            let rows = run_chameneos(&settings, &common.options(), common.pekko(false)?)?;
            (common, rows)
        }
        Command::Trading {
            common,
            clients,
            variants,
            txlog,
            orders,
            synced_orders,
            log_dir,
        } => {
            let mut settings = trading::Settings::for_scale(common.scale());
            settings.points.retain(|p| {
                variants.as_ref().is_none_or(|v| v.contains(&p.variant))
                    && txlog.as_ref().is_none_or(|m| m.contains(&p.txlog))
            });
            if let Some(clients) = clients {
                if clients.contains(&0) {
                    return Err("--clients: every count must be at least 1".into());
                }
                let mut points = Vec::new();
                let mut seen = std::collections::HashSet::new();
                for p in &settings.points {
                    if seen.insert((p.variant, p.txlog)) {
                        for &c in &clients {
                            points.push(trading::Point { clients: c, ..*p });
                        }
                    }
                }
                settings.points = points;
            }
            if let Some(n) = orders {
                settings.orders = n;
            }
            if let Some(n) = synced_orders {
                settings.synced_orders = n;
            }
            if let Some(dir) = log_dir {
                settings.log_root = dir;
            }
            let rows = run_trading(&settings, &common.options(), common.pekko(false)?)?;
            (common, rows)
        }
        Command::Soak { common, minutes } => {
            let minutes = minutes.unwrap_or(if common.quick { 1.0 } else { 10.0 });
            if !(minutes > 0.0 && minutes.is_finite()) {
                return Err("--minutes must be a positive number".into());
            }
            let rows = soak::run(std::time::Duration::from_secs_f64(minutes * 60.0))?;
            (common, rows)
        }
        Command::Micro { common } => {
            let rows = run_micro(&micro::Sizes::for_scale(common.scale()), &common.options())?;
            (common, rows)
        }
        Command::Report { from, out } => {
            let report = compare::load(&from)?;
            site::write(&out, &report)?;
            eprintln!(
                "troupe-bench: wrote {}/index.html, summary.md and results.json",
                out.display()
            );
            return Ok(());
        }
        Command::Compare {
            old,
            new,
            threshold,
        } => {
            let (old, new) = (compare::load(&old)?, compare::load(&new)?);
            print!("{}", compare::render(&old, &new, threshold));
            return Ok(());
        }
        Command::All {
            common,
            report,
            no_report,
        } => {
            report_dir = (!no_report).then_some(report);
            let pekko = common.pekko(true)?;
            let options = common.options();
            let sizes = pingpong::Sizes::for_scale(common.scale());
            let mut rows = run_pingpong(&sizes, &options, pekko)?;
            rows.extend(run_micro(
                &micro::Sizes::for_scale(common.scale()),
                &options,
            )?);
            rows.extend(run_delayed(
                &delayed::Sizes::for_scale(common.scale()),
                &options,
                pekko,
            )?);
            rows.extend(run_primes(
                &primes::Settings::for_scale(common.scale()),
                &options,
                pekko,
            )?);
            rows.extend(run_trading(
                &trading::Settings::for_scale(common.scale()),
                &options,
                pekko,
            )?);
            let mut cham = chameneos::Settings::for_scale(common.scale());
            cham.sweep_max = Some(chameneos::sweep_cap(common.scale()));
            rows.extend(run_chameneos(&cham, &options, pekko)?);
            (common, rows)
        }
    };
    if rows.is_empty() {
        let filter = common.filter.as_deref().unwrap_or_default();
        return Err(format!("no rows match --filter {filter:?}").into());
    }
    if let Some(path) = &common.readme {
        let section = readme::render(&Machine::detect(), &RunInfo::new(started), &rows);
        readme::update(path, &section)?;
        eprintln!("troupe-bench: updated the results in {}", path.display());
    }
    let mut report = Report {
        machine: Machine::detect(),
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

/// Runs ping-pong and prints its table (when any row was selected).
fn run_pingpong(
    sizes: &pingpong::Sizes,
    options: &RunOptions,
    pekko: bool,
) -> Result<Vec<Row>, Box<dyn Error>> {
    let mut rows = pingpong::run(sizes, options)?;
    if pekko {
        rows.extend(pingpong::peer::rows(sizes, options)?);
    }
    if !rows.is_empty() {
        report::print_table(pingpong::EXPERIMENT, &rows);
        print_ratios(&rows);
    }
    Ok(rows)
}

/// Runs the micro-benchmarks and prints their table and extra figures.
fn run_micro(sizes: &micro::Sizes, options: &RunOptions) -> Result<Vec<Row>, Box<dyn Error>> {
    let rows = micro::run(sizes, options)?;
    if !rows.is_empty() {
        report::print_table(micro::EXPERIMENT, &rows);
        micro::print_extras(&rows);
    }
    Ok(rows)
}

/// Runs the delayed-messages experiment and prints its table and figures.
fn run_delayed(
    sizes: &delayed::Sizes,
    options: &RunOptions,
    pekko: bool,
) -> Result<Vec<Row>, Box<dyn Error>> {
    let mut rows = delayed::run(sizes, options)?;
    if pekko {
        rows.extend(delayed::peer::rows(sizes, options)?);
    }
    if !rows.is_empty() {
        report::print_table(delayed::EXPERIMENT, &rows);
        delayed::print_extras(&rows);
        print_ratios(&rows);
    }
    Ok(rows)
}

/// Runs the primes experiment and prints its table and latency lines.
fn run_primes(
    settings: &primes::Settings,
    options: &RunOptions,
    pekko: bool,
) -> Result<Vec<Row>, Box<dyn Error>> {
    let mut rows = primes::run(settings, options)?;
    if pekko && settings.url.is_none() {
        rows.extend(primes::peer::rows(settings, options)?);
    }
    if !rows.is_empty() {
        report::print_table(primes::EXPERIMENT, &rows);
        primes::print_extras(&rows);
        print_ratios(&rows);
    }
    Ok(rows)
}

/// Runs the trading sweep and prints its table.
fn run_trading(
    settings: &trading::Settings,
    options: &RunOptions,
    pekko: bool,
) -> Result<Vec<Row>, Box<dyn Error>> {
    let mut rows = trading::run(settings, options)?;
    if pekko {
        rows.extend(trading::peer::rows(settings, options)?);
    }
    if !rows.is_empty() {
        let repeats = rows[0].repeats;
        println!(
            "{}: seed scenario; orders/s is the median of {repeats} measured runs after 1 warm-up, latencies merge every order of those runs\n",
            trading::EXPERIMENT
        );
        println!("{}", trading::render_table(&rows));
        print_ratios(&rows);
    }
    Ok(rows)
}

/// "troupe vs Pekko" lines for the peer rows among `rows`.
fn print_ratios(rows: &[Row]) {
    let ratios = peer::ratios(rows);
    if ratios.is_empty() {
        return;
    }
    println!("troupe vs Pekko (Pekko's time per message / troupe's; above 1: troupe is faster):");
    for (label, ratio) in ratios {
        println!("  {label}: {ratio:.2}x");
    }
    println!();
}

/// Runs the chameneos rows (and the sweep, when asked) and prints their
/// tables and the lines under them.
fn run_chameneos(
    settings: &chameneos::Settings,
    options: &RunOptions,
    pekko: bool,
) -> Result<Vec<Row>, Box<dyn Error>> {
    let mut rows = chameneos::run(settings, options)?;
    let main: Vec<Row> = rows
        .iter()
        .filter(|r| r.experiment == chameneos::EXPERIMENT)
        .cloned()
        .collect();
    if !main.is_empty() {
        report::print_table(chameneos::EXPERIMENT, &main);
        println!("{}", chameneos::summary(&main));
    }
    if pekko {
        let peer_rows = chameneos::peer::rows(settings, options)?;
        report::print_table("chameneos (Pekko)", &peer_rows);
        let mut both = main.clone();
        both.extend(peer_rows.iter().cloned());
        print_ratios(&both);
        rows.extend(peer_rows);
    }
    if rows.len() > main.len() {
        println!(
            "{}: median seconds per game\n",
            chameneos::sweep::EXPERIMENT
        );
        println!("{}", chameneos::sweep::render_table(&rows));
    }
    Ok(rows)
}

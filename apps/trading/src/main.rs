//! `trading`: the replay tool and a single-run driver of the trading system.
//!
//! ```text
//! trading replay --orders FILE --trades OUT   match a command file, write its trades
//! trading replay --journal DIR                rebuild books from an engine's log
//! trading generate --commands N --out FILE    write a reproducible random command file
//! trading run --variant one-way --clients 10  run the seed scenario once
//! trading run --scenario resting              ... or the one that leaves orders resting
//! trading cluster --clients 10 --orders 30000 a whole cluster of processes on this machine
//! trading cluster --kill-at-acked 30 --restart-killed   ... SIGKILL the primaries at 30% acknowledged
//! trading cluster --pause-primary-ms 3000   ... SIGSTOP them for 3 s instead
//! trading cluster --partition-primary-ms 3000   ... cut them off the network for 3 s
//! trading cluster --broker-outage-ms 1000   ... SIGKILL the nats-server, start it again 1 s later
//! trading node --role engines --nats URL --name N   one process of a cluster
//! ```

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use trading::cluster::{
    print_outcome, run_cluster, ClusterOptions, ClusterWork, NodeArgs, NodeCommand, NodeTuning,
};
use trading::{run, Pattern, RunConfig, Scenario, TxLog, Variant};

#[derive(Parser)]
#[command(
    name = "trading",
    about = "The trading system: replay tool and scenario runner"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Match a command file on one thread and write the trades, or rebuild
    /// books from a transaction log (`--journal DIR`).
    Replay {
        /// Command file (NEW,... / CANCEL,... lines).
        #[arg(long, required_unless_present = "journal", requires = "trades")]
        orders: Option<PathBuf>,
        /// Where to write the trades, one line each in execution order.
        #[arg(long)]
        trades: Option<PathBuf>,
        /// An engine's transaction log directory to rebuild books from.
        #[arg(long, conflicts_with_all = ["orders", "trades"])]
        journal: Option<PathBuf>,
    },
    /// Write a reproducible random command file.
    Generate {
        /// Number of commands.
        #[arg(long, default_value_t = 1_000_000)]
        commands: usize,
        /// Number of books.
        #[arg(long, default_value_t = 10)]
        books: usize,
        /// Random seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Run a scenario once and print what it measured.
    Run {
        /// sync, request-reply or one-way.
        #[arg(long, default_value = "one-way")]
        variant: Variant,
        /// seed (every book ends empty) or resting (half the asks rest).
        #[arg(long, default_value = "seed")]
        scenario: Pattern,
        /// Concurrent clients.
        #[arg(long, default_value_t = 10)]
        clients: usize,
        /// Orders in total (split evenly over the clients).
        #[arg(long, default_value_t = 750_000)]
        orders: usize,
        /// off, buffered or group-commit.
        #[arg(long, default_value = "off")]
        txlog: TxLog,
        /// Where the engines' logs go (a fresh directory is advised).
        #[arg(long)]
        log_dir: Option<PathBuf>,
        /// Dispatcher threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// How idle dispatcher threads take work from busy ones: adaptive
        /// (the runtime's default), eager or late.
        #[arg(long, default_value = "adaptive")]
        stealing: troupe::Stealing,
        /// Orders each client keeps in flight (request-reply and one-way).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        window: u64,
    },
    /// Run the distributed system on this machine: a nats-server, two
    /// engine nodes (primaries on one, standbys on the other), a receivers
    /// node and a clients node, each its own process; check what survived.
    Cluster {
        #[command(flatten)]
        work: ClusterWork,
        /// SIGKILL the primaries' process once this percentage (1 to 99) of
        /// the orders is acknowledged, as the clients report it (with
        /// --pause-primary-ms: pause it then; default 30 there).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=99))]
        kill_at_acked: Option<u64>,
        /// ... and not before this many ms after the clients start (an
        /// extra minimum delay; the share above still has to be reached).
        #[arg(long, requires = "kill_at_acked")]
        kill_after_ms: Option<u64>,
        /// Instead of a SIGKILL, SIGSTOP the primaries' process at the share
        /// above and SIGCONT it this many ms later (longer than the
        /// heartbeat timeout: the standbys take the leases over, and the
        /// paused node fail-stops when it resumes).
        #[arg(long, conflicts_with_all = ["kill_standby", "kill_host", "restart_killed"])]
        pause_primary_ms: Option<u64>,
        /// Instead of a SIGKILL, cut the primaries' node off the network at
        /// the share above and join it again this many ms later: the
        /// engine nodes run in network namespaces of their own (needs root
        /// and iproute2; one NATS server). Longer than the heartbeat
        /// timeout, the standbys take over and the cut-off node fail-stops.
        #[arg(long, conflicts_with_all = ["kill_standby", "kill_host", "restart_killed", "pause_primary_ms", "restart_all"])]
        partition_primary_ms: Option<u64>,
        /// Kill the standbys' process instead (the primaries go on alone).
        #[arg(long, requires = "kill_at_acked")]
        kill_standby: bool,
        /// NATS servers, joined as one cluster: one per simulated host
        /// (engines-a on the first, engines-b on the second, the rest on the
        /// third); the lease bucket keeps a copy on each (up to 3).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=5))]
        servers: u64,
        /// Kill the victim's NATS server with it: its whole host (needs
        /// --servers 3 or more).
        #[arg(long, requires = "kill_at_acked")]
        kill_host: bool,
        /// After the kill, start a fresh engine node that joins as standby.
        #[arg(long, requires = "kill_at_acked")]
        restart_killed: bool,
        /// Instead of a node, SIGKILL the NATS server at the share above
        /// (default 30) and start it again on the same port and store this
        /// many ms later (0: at once): every node reconnects and goes on
        /// (one server).
        #[arg(long, conflicts_with_all = ["kill_standby", "kill_host", "restart_killed", "pause_primary_ms", "partition_primary_ms", "restart_all"])]
        broker_outage_ms: Option<u64>,
        /// Instead of one node, SIGKILL every engine node at the share
        /// above, then start them again under their names, from their logs
        /// (a whole-cluster restart; needs --txlog buffered or group-commit).
        #[arg(long, requires = "kill_at_acked", conflicts_with_all = ["kill_standby", "kill_host", "restart_killed", "pause_primary_ms"])]
        restart_all: bool,
        /// The nats-server binary to run (default: $NATS_SERVER, else
        /// nats-server on PATH; from a checkout,
        /// `NATS_SERVER=$(scripts/nats-server.sh)` installs and names the
        /// pinned one).
        #[arg(long, value_name = "PATH")]
        nats_server: Option<PathBuf>,
        #[command(flatten)]
        common: NodeTuning,
        /// Write the outcome as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// One process of a cluster (what `trading cluster` starts).
    Node(NodeArgs),
}

fn main() -> ExitCode {
    // Logs on stderr as `RUST_LOG` asks (none by default): e.g.
    // `RUST_LOG=troupe::governor=debug` shows each trial of the pool's
    // adaptive stealing.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match run_cli(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trading: {e}");
            // As a shell reports a process ended by Ctrl-C (128 + SIGINT).
            if trading::cluster::interrupt::interrupted() {
                ExitCode::from(130)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run_cli(cli: Cli) -> Result<(), Box<dyn Error>> {
    match cli.command {
        Cmd::Replay {
            orders,
            trades,
            journal,
        } => {
            let start = Instant::now();
            match (orders, trades, journal) {
                (_, _, Some(dir)) => {
                    let (market, summary) = trading::replay::replay_journal(&dir)?;
                    println!("rebuilt from {}", dir.display());
                    println!("{summary}");
                    print!("{}", trading::replay::describe_books(&market));
                }
                (Some(orders), Some(trades), None) => {
                    let summary = trading::replay::replay_file(&orders, &trades)?;
                    println!("{summary}");
                    println!("trades written:  {}", trades.display());
                }
                _ => return Err("replay needs --orders FILE --trades OUT, or --journal DIR".into()),
            }
            println!("total time:      {:.3} s", start.elapsed().as_secs_f64());
        }
        Cmd::Generate {
            commands,
            books,
            seed,
            out,
        } => {
            trading::replay::generate_file(&out, commands, books, seed)?;
            println!(
                "wrote {commands} commands over {books} books to {}",
                out.display()
            );
        }
        Cmd::Run {
            variant,
            scenario,
            clients,
            orders,
            txlog,
            log_dir,
            threads,
            stealing,
            window,
        } => {
            let config = RunConfig {
                variant,
                scenario: Scenario::new(clients, orders)?.with_pattern(scenario),
                txlog,
                log_root: log_dir,
                threads,
                stealing,
                window: window as usize,
                timeout: Duration::from_secs(600),
            };
            let r = run(&config)?;
            let h = &r.latency_ns;
            let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
            println!(
                "{variant} {scenario} txlog={txlog} clients={clients}: {} orders in {:.3} s = {:.0} orders/s",
                r.orders(),
                r.duration.as_secs_f64(),
                r.tps()
            );
            println!(
                "latency us: mean {:.1} p5 {:.1} p50 {:.1} p95 {:.1} p99 {:.1} max {:.1}",
                h.mean() / 1e3,
                us(0.05),
                us(0.5),
                us(0.95),
                us(0.99),
                h.max() as f64 / 1e3
            );
            println!("trades: {}, resting: {}", r.trades, r.resting);
            if !r.verified() {
                return Err(format!("verification failed: {}", r.problems.join("; ")).into());
            }
            println!("verified");
        }
        Cmd::Cluster {
            work,
            kill_at_acked,
            kill_after_ms,
            pause_primary_ms,
            partition_primary_ms,
            kill_standby,
            servers,
            kill_host,
            restart_killed,
            restart_all,
            broker_outage_ms,
            nats_server,
            common,
            json,
        } => {
            if common.lease_replicas != 1 {
                return Err("trading cluster copies the lease bucket once per server \
                            (--servers); --lease-replicas is for `trading node`"
                    .into());
            }
            let options = ClusterOptions {
                node_command: NodeCommand::this_binary("node")?,
                clients: work.clients,
                orders: work.orders,
                window: work.window as usize,
                mode: work.variant,
                pattern: work.scenario,
                txlog: work.txlog,
                log_dir: work.log_dir,
                kill_at_acked: kill_at_acked.or(pause_primary_ms
                    .or(partition_primary_ms)
                    .or(broker_outage_ms)
                    .map(|_| 30)),
                kill_after: kill_after_ms.map(Duration::from_millis),
                pause_primary: pause_primary_ms.map(Duration::from_millis),
                partition_primary: partition_primary_ms.map(Duration::from_millis),
                kill_standby,
                kill_host,
                broker_outage: broker_outage_ms.map(Duration::from_millis),
                servers: servers as usize,
                nats_server,
                restart_killed,
                restart_all,
                dispatcher: common.dispatcher,
                threads: common.threads,
                snapshot_every: common.snapshot_every,
                retry: common.retry(),
                heartbeat: common.heartbeat(),
                timeout: Duration::from_secs(600),
                settle_within: trading::cluster::launch::SETTLE_WITHIN,
            };
            let outcome = run_cluster(&options, &mut |line| eprintln!("cluster: {line}"))?;
            print_outcome(&outcome, &mut std::io::stdout())?;
            if let Some(path) = json {
                std::fs::write(&path, serde_json::to_string_pretty(&outcome)?)?;
            }
            if !outcome.verified() {
                return Err("verification failed".into());
            }
            println!("verified");
        }
        Cmd::Node(args) => args.run()?,
    }
    Ok(())
}

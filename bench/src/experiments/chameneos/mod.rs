//! The chameneos experiment (see docs/experiments.md, chameneos): the
//! Benchmarks Game's chameneos-redux on troupe actors and on plain threads,
//! the original sweep of meeting counts (docs/experiments.md, chameneos), and Savina's mall variant.
//!
//! Creatures of colour blue, red or yellow go to a meeting place again and
//! again; two that meet both take the complement of the other's colour. A
//! game ends after N meetings; chameneos-redux plays two games, with 3 and
//! with 10 creatures. Rows, in the order they run:
//!
//! - `threads-3`, `threads-10`: one thread per creature around a meeting place
//!   that is one atomic word ([`threads`]), the shape of the fast entries.
//! - `actor-3-w1-tp100`, `actor-10-w1-tp100`: a meeting-place actor and
//!   creature actors ([`meeting_place`]) on one worker with throughput 100,
//!   troupe's best setting for this game ([`Dispatcher::DEFAULT`]);
//! - `actor-3-w2-tp5`, `actor-10-w2-tp5`: the same on two workers with
//!   throughput 5 ([`Dispatcher::POOL`]), Pekko's own setting on this
//!   machine, with troupe's default, adaptive stealing. The Pekko peer
//!   plays both settings too (`pekko-3-w1-tp100`, ...), and each Pekko row
//!   is compared with the troupe row of the same setting (its `peer_of`).
//! - `actor-3-w2-tp5-eager`, `-late` (and `actor-10-...`): the two-worker
//!   setting with each fixed way of stealing (`troupe::Stealing::Eager`,
//!   `Late`), to show what the adaptive governor chooses between; no
//!   Pekko twin.
//! - `actor-mall-100`: Savina's mall protocol with 100 creatures ([`mall`]),
//!   on the default setting.
//!
//! A row is one game, so `msgs` is the game's meetings and `ns_per_msg` is
//! nanoseconds per meeting; both games of the program are the sum of the
//! `-3` and `-10` rows. Each row's params also carry `variant`, `creatures`,
//! `meetings`, `seconds` (median) and `meetings_per_s`.
//!
//! Every run is validated: the creatures' meetings add up to exactly 2N, and
//! no creature met itself; a wrong run fails the experiment. The subcommand
//! first prints the program's output in the Benchmarks Game's format
//! ([`output`]) from one actor run of both games, validated the same way.

pub mod colour;
mod experiment;
pub mod mall;
pub mod meeting_place;
pub mod output;
pub mod peer;
pub mod place;
pub mod rust_peers;
pub mod sweep;
pub mod threads;

pub use experiment::Chameneos;

use std::time::Duration;

use serde_json::Value;
use troupe::prelude::*;
use troupe::{DispatcherConfig, Stealing};

use crate::experiments::chameneos::colour::{Colour, GAME_TEN, GAME_THREE};
use crate::experiments::chameneos::mall::Mall;
use crate::experiments::chameneos::meeting_place::Redux;
use crate::experiments::chameneos::output::Game;
use crate::report::Row;
use crate::runner::{RunOptions, Scale, Stopwatch, Workload, WorkloadError};
use crate::shared::run_experiment;
use crate::shared::SystemGuard;

/// The experiment's name in tables, progress lines and JSON.
pub const EXPERIMENT: &str = "chameneos";

/// The longest a game may take before its run is declared stuck.
const GAME_DEADLINE: Duration = Duration::from_secs(600);

/// The dispatcher the actor rows run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatcher {
    /// Worker threads of the pool.
    pub workers: usize,
    /// Messages an actor handles per run before its worker moves on.
    pub throughput: usize,
    /// How idle workers take work from busy ones.
    pub stealing: Stealing,
}

impl Dispatcher {
    /// The setting the actor rows use unless told otherwise.
    ///
    /// One worker: a meeting is a chain of four dependent messages through
    /// one meeting place, so a second worker adds cache-line traffic and
    /// wake-ups but no parallelism. On the 2-core machine two workers took
    /// about twice as long per meeting, and the meeting place on a thread of
    /// its own about three times. A large throughput lets the meeting place
    /// handle every creature that has arrived in one run (throughput 1 or 5
    /// was 10-30% slower).
    pub const DEFAULT: Dispatcher = Dispatcher {
        workers: 1,
        throughput: 100,
        stealing: Stealing::Adaptive,
    };

    /// Two workers (the machine's cores) and throughput 5: the setting the
    /// Pekko peer would use by itself, so that both runtimes are also seen
    /// side by side on a pool that is not tuned for this game.
    pub const POOL: Dispatcher = Dispatcher {
        workers: 2,
        throughput: 5,
        stealing: Stealing::Adaptive,
    };

    /// The setting as row names carry it: `w1-tp100`, `w2-tp5-late`
    /// (the default, adaptive stealing has no suffix).
    pub fn label(self) -> String {
        let stealing = match self.stealing {
            Stealing::Adaptive => "",
            other => &format!("-{other}"),
        };
        format!("w{}-tp{}{stealing}", self.workers, self.throughput)
    }
}

/// The sizes and settings of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Meetings per game of the chameneos-redux rows.
    pub meetings: u64,
    /// Creatures of the Savina mall row.
    pub mall_creatures: usize,
    /// Meetings of the Savina mall row.
    pub mall_meetings: u64,
    /// The largest point of the sweep, or `None` for no sweep.
    pub sweep_max: Option<u64>,
    /// The actor rows' dispatcher (also the mall row's and the sweep's).
    pub dispatcher: Dispatcher,
    /// A second setting the `actor-3`/`actor-10` rows (and the Pekko rows)
    /// are also played on, unless it equals `dispatcher`.
    pub also: Option<Dispatcher>,
}

impl Settings {
    /// The sizes for a scale, without the sweep; `Full` is the Benchmarks
    /// Game's 6,000,000 meetings.
    ///
    /// Savina's 100 creatures × 200,000 meetings take a fraction of a second,
    /// so the default already plays Savina's size; only `Quick` shrinks it.
    pub fn for_scale(scale: Scale) -> Self {
        let (meetings, mall_meetings) = match scale {
            Scale::Quick => (60_000, 20_000),
            Scale::Default => (600_000, 200_000),
            Scale::Full => (6_000_000, 200_000),
        };
        Settings {
            meetings,
            mall_creatures: 100,
            mall_meetings,
            sweep_max: None,
            dispatcher: Dispatcher::DEFAULT,
            also: Some(Dispatcher::POOL),
        }
    }

    /// The settings the `actor-3`/`actor-10` rows are played on, in order.
    pub fn dispatchers(&self) -> Vec<Dispatcher> {
        let mut all = vec![self.dispatcher];
        all.extend(self.also.filter(|d| *d != self.dispatcher));
        all
    }
}

/// The largest sweep point for a scale: the post went to 10,000,000; the
/// default stops at 1,000,000 so that `all` stays short.
pub fn sweep_cap(scale: Scale) -> u64 {
    match scale {
        Scale::Quick => 10_000,
        Scale::Default => 1_000_000,
        Scale::Full => 10_000_000,
    }
}

/// How a row plays its games.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// One thread per creature around an atomic meeting place.
    Threads,
    /// chameneos-redux with a meeting-place actor and creature actors.
    Actor,
    /// Savina's mall protocol on actors.
    Mall,
}

impl Implementation {
    /// The name rows start with.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Threads => "threads",
            Implementation::Actor => "actor",
            Implementation::Mall => "actor-mall",
        }
    }

    fn protocol(self) -> &'static str {
        match self {
            Implementation::Threads | Implementation::Actor => "redux",
            Implementation::Mall => "savina-mall",
        }
    }
}

/// Builds the actor system of the actor rows.
fn build_system(dispatcher: Dispatcher) -> Result<ActorSystem, WorkloadError> {
    let pool = DispatcherConfig::pool(dispatcher.workers)
        .throughput(dispatcher.throughput)
        .stealing(dispatcher.stealing);
    ActorSystem::builder()
        .name("chameneos")
        .dispatcher("default", pool)
        .build()
        .map_err(|e| WorkloadError::new(e.to_string()))
}

/// The row that plays one game of `meetings` meetings among creatures of the
/// given colours with `implementation`, validating every run.
pub fn game_workload(
    variant: String,
    implementation: Implementation,
    colours: Vec<Colour>,
    meetings: u64,
    dispatcher: Dispatcher,
) -> Workload {
    let creatures = colours.len();
    let workload = Workload::with_setup(variant.clone(), move || {
        let system = match implementation {
            Implementation::Threads => None,
            Implementation::Actor | Implementation::Mall => {
                Some(SystemGuard(build_system(dispatcher)?))
            }
        };
        Ok(move || {
            let clock = Stopwatch::start();
            let game = match (&system, implementation) {
                (None, _) => threads::play(&colours, meetings)?,
                (Some(s), Implementation::Mall) => place::play::<Mall>(&s.0, &colours, meetings)?,
                (Some(s), _) => place::play::<Redux>(&s.0, &colours, meetings)?,
            };
            let sample = clock.stop(meetings);
            game.validate(meetings)?;
            Ok(sample)
        })
    })
    .param("variant", variant)
    .param("implementation", implementation.name())
    .param("protocol", implementation.protocol())
    .param("creatures", creatures)
    .param("meetings", meetings);
    match implementation {
        Implementation::Threads => workload
            .param("runtime", "baseline")
            .param("threads", creatures),
        Implementation::Actor | Implementation::Mall => workload
            .param("runtime", "troupe")
            .param("workers", dispatcher.workers)
            .param("throughput", dispatcher.throughput)
            .param("stealing", dispatcher.stealing.to_string()),
    }
}

/// The main rows (see the module header), baseline first.
pub fn workloads(settings: &Settings) -> Vec<Workload> {
    let mut rows = Vec::new();
    for colours in [&GAME_THREE[..], &GAME_TEN[..]] {
        rows.push(game_workload(
            format!("threads-{}", colours.len()),
            Implementation::Threads,
            colours.to_vec(),
            settings.meetings,
            settings.dispatcher,
        ));
    }
    let mut dispatchers = settings.dispatchers();
    // The eager and late twins of each adaptive pool of more than one worker.
    let twins: Vec<Dispatcher> = dispatchers
        .iter()
        .filter(|d| d.workers > 1 && d.stealing == Stealing::Adaptive)
        .flat_map(|d| {
            [Stealing::Eager, Stealing::Late].map(|stealing| Dispatcher { stealing, ..*d })
        })
        .collect();
    dispatchers.extend(twins);
    for dispatcher in dispatchers {
        for colours in [&GAME_THREE[..], &GAME_TEN[..]] {
            rows.push(game_workload(
                format!("actor-{}-{}", colours.len(), dispatcher.label()),
                Implementation::Actor,
                colours.to_vec(),
                settings.meetings,
                dispatcher,
            ));
        }
    }
    rows.push(game_workload(
        format!("actor-mall-{}", settings.mall_creatures),
        Implementation::Mall,
        colour::cycling(settings.mall_creatures),
        settings.mall_meetings,
        settings.dispatcher,
    ));
    rows
}

/// Runs the selected main rows and, when asked, the sweep; returns all rows
/// with `seconds` and `meetings_per_s` in their params.
pub fn run(settings: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let mut rows = run_experiment(EXPERIMENT, workloads(settings), options)?;
    if let Some(max) = settings.sweep_max {
        rows.extend(run_experiment(
            sweep::EXPERIMENT,
            sweep::workloads(max, settings.dispatcher),
            options,
        )?);
    }
    for row in &mut rows {
        add_seconds(row);
    }
    Ok(rows)
}

/// Records the median game time and meeting rate in the row's params
/// (troupe's rows and the peers' alike).
pub(super) fn add_seconds(row: &mut Row) {
    let seconds = row.ns_per_msg * row.msgs as f64 / 1e9;
    row.params.insert("seconds".into(), seconds.into());
    row.params
        .insert("meetings_per_s".into(), row.msgs_per_s.into());
}

/// The median seconds of a row, as [`add_seconds`] recorded them.
fn seconds(row: &Row) -> Option<f64> {
    row.params.get("seconds").and_then(Value::as_f64)
}

/// Plays both games of chameneos-redux at `meetings` on actors, validates
/// them, and returns the program's output in the Benchmarks Game's format.
pub fn program(meetings: u64, dispatcher: Dispatcher) -> Result<String, WorkloadError> {
    let system = SystemGuard(build_system(dispatcher)?);
    let mut games: Vec<Game> = Vec::with_capacity(2);
    for colours in [&GAME_THREE[..], &GAME_TEN[..]] {
        let game = place::play::<Redux>(&system.0, colours, meetings)?;
        game.validate(meetings)
            .map_err(|e| e.context(&format!("{EXPERIMENT}: the game of {}", colours.len())))?;
        games.push(game);
    }
    Ok(output::render(&games))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both protocols on the shared meeting place, with the benchmark's
    /// games and with few and many creatures, on one and two workers; the
    /// meeting counts include the smallest games and odd ones.
    #[test]
    fn both_protocols_are_valid_for_few_and_many_creatures_on_one_and_two_workers() {
        let games = [
            GAME_THREE.to_vec(),
            GAME_TEN.to_vec(),
            colour::cycling(2),
            colour::cycling(100),
        ];
        for workers in [1, 2] {
            let system = ActorSystem::builder().threads(workers).build().unwrap();
            for colours in &games {
                for meetings in [1, 2, 7, 600, 5_000] {
                    let game = place::play::<Redux>(&system, colours, meetings).unwrap();
                    game.validate(meetings).unwrap();
                    let game = place::play::<Mall>(&system, colours, meetings).unwrap();
                    game.validate(meetings).unwrap();
                }
            }
            system.shutdown();
            system.await_termination().unwrap();
        }
    }

    /// Parses a creature line `<count><spelled self-meetings>`.
    fn creature_line(line: &str) -> (u64, &str) {
        let digits = line.find(' ').expect("a spelled number follows the count");
        (line[..digits].parse().expect("a count"), &line[digits..])
    }

    #[test]
    fn the_output_at_600_has_the_benchmarks_game_shape() {
        let text = program(600, Dispatcher::DEFAULT).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[..10],
            [
                "blue + blue -> blue",
                "blue + red -> yellow",
                "blue + yellow -> red",
                "red + blue -> yellow",
                "red + red -> red",
                "red + yellow -> blue",
                "yellow + blue -> red",
                "yellow + red -> blue",
                "yellow + yellow -> yellow",
                "",
            ]
        );
        let mut at = 10;
        for colours in [
            " blue red yellow",
            " blue red yellow red yellow blue red yellow red blue",
        ] {
            assert_eq!(lines[at], colours);
            let creatures = colours.split(' ').count() - 1;
            let mut total = 0;
            for line in &lines[at + 1..at + 1 + creatures] {
                let (count, self_meetings) = creature_line(line);
                assert_eq!(self_meetings, " zero", "{line}");
                total += count;
            }
            assert_eq!(total, 1200);
            assert_eq!(lines[at + 1 + creatures], " one two zero zero");
            assert_eq!(lines[at + 2 + creatures], "");
            at += creatures + 3;
        }
        // The text ends with the last game's blank line.
        assert_eq!(lines[at..], [""]);
        assert!(text.ends_with("zero\n\n"));
    }

    #[test]
    fn a_tiny_run_gives_validated_rows_with_the_required_params() {
        let _machine = crate::runner::tests::one_experiment_at_a_time();
        let mut settings = Settings::for_scale(Scale::Quick);
        settings.meetings = 300;
        settings.mall_creatures = 10;
        settings.mall_meetings = 300;
        settings.sweep_max = Some(10);
        let options = RunOptions {
            repeats: 1,
            filter: None,
        };
        // One warm-up run a row: the rows' contents are checked, not speed.
        let rows = crate::warmup::WarmUp::fixed_within(1, || run(&settings, &options)).unwrap();
        let variants: Vec<&str> = rows.iter().map(|r| r.variant.as_str()).collect();
        assert_eq!(
            variants[..11],
            [
                "threads-3",
                "threads-10",
                "actor-3-w1-tp100",
                "actor-10-w1-tp100",
                "actor-3-w2-tp5",
                "actor-10-w2-tp5",
                "actor-3-w2-tp5-eager",
                "actor-10-w2-tp5-eager",
                "actor-3-w2-tp5-late",
                "actor-10-w2-tp5-late",
                "actor-mall-10"
            ]
        );
        // Each setting's rows run on that setting.
        for row in rows.iter().filter(|r| r.variant.contains("-w2-tp5")) {
            assert_eq!(row.params["workers"], 2);
            assert_eq!(row.params["throughput"], 5);
            let stealing = row.variant.rsplit('-').next().unwrap();
            let stealing = if stealing == "tp5" {
                "adaptive"
            } else {
                stealing
            };
            assert_eq!(row.params["stealing"], stealing);
        }
        // Two sweep points (1 and 10), four rows each.
        assert_eq!(rows.len(), 11 + 8);
        for row in &rows {
            for key in [
                "variant",
                "creatures",
                "meetings",
                "seconds",
                "meetings_per_s",
            ] {
                assert!(row.params.contains_key(key), "{} has no {key}", row.variant);
            }
            assert_eq!(row.params["variant"], row.variant.as_str());
            assert_eq!(row.params["meetings"], row.msgs);
        }
        let refs: Vec<&Row> = rows.iter().collect();
        let text = crate::experiments::Experiment::extras(&Chameneos, &refs).join("\n");
        assert!(
            text.contains("actor-w1-tp100: both games at 300 meetings each"),
            "{text}"
        );
        assert!(text.contains("actor-w2-tp5 / threads"), "{text}");
    }
}

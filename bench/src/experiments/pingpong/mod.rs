//! The ping-pong experiment (see docs/experiments.md, pingpong): which rows
//! it has, how large each is, and running them through the runner.
//!
//! Every row is a round trip repeated `repetitions` times, and every row
//! reports time per one-way hop: `msgs` = 2 × repetitions, so `ns_per_msg` =
//! elapsed / (2 × repetitions), the post's formula. The post's figures: busy
//! spin about 50 ns per hop, Akka untuned 1,111 ns, Akka with `throughput = 1`
//! on two pinned cores 302 ns.
//!
//! Rows, in the order they run:
//! - `busy-spin`: two spinning threads and two atomic words, the floor.
//! - `tokio-mpsc-mt-w2`, `tokio-mpsc-ct`: two tokio tasks over bounded
//!   channels, on the multi-thread (2 workers) and current-thread schedulers.
//! - the troupe actor rows from [`actor_rows`], then the async actor rows
//!   (`async-*`, [`async_pair`]).

pub mod actor_pair;
pub mod async_pair;
pub mod baselines;
mod experiment;
pub mod many_pairs;
pub mod peer;
pub mod rust_peers;

use crate::report::Row;
use crate::runner::{RunOptions, Scale, Workload, WorkloadError};
use crate::shared::run_experiment;
use baselines::{busy_spin, tokio_mpsc};
pub use experiment::PingPong;

/// The experiment's name in tables, progress lines and JSON.
pub const EXPERIMENT: &str = "pingpong";

/// Channel capacity of the tokio rows: one message is ever in flight, so the
/// smallest bound is enough.
const TOKIO_CAPACITY: usize = 1;

/// Repetitions (round trips) per run for each family of rows.
///
/// Each family has its own size because their costs differ by orders of
/// magnitude: a size that makes the busy-spin row measurable would make an
/// actor row take minutes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Round trips of the busy-spin row.
    pub busy_spin: u64,
    /// Round trips of each tokio row.
    pub tokio: u64,
    /// Round trips of each single-pair troupe actor row.
    pub actor: u64,
    /// Pairs of the many-pairs row.
    pub pairs: usize,
    /// Round trips per pair of the many-pairs row.
    pub pair_repetitions: u64,
}

impl Settings {
    /// The sizes for a scale: `Full` is the post's 100 million repetitions.
    pub fn for_scale(scale: Scale) -> Self {
        match scale {
            Scale::Quick => Settings {
                busy_spin: 1_000_000,
                tokio: 100_000,
                actor: 100_000,
                pairs: 1_000,
                pair_repetitions: 100,
            },
            Scale::Default => Settings {
                busy_spin: 5_000_000,
                tokio: 500_000,
                actor: 1_000_000,
                pairs: 1_000,
                pair_repetitions: 2_000,
            },
            Scale::Full => Settings {
                busy_spin: 100_000_000,
                tokio: 100_000_000,
                actor: 100_000_000,
                pairs: 1_000,
                pair_repetitions: 100_000,
            },
        }
    }

    /// The same number of round trips for every row, as `--repetitions` asks.
    pub fn uniform(repetitions: u64) -> Self {
        Settings {
            busy_spin: repetitions,
            tokio: repetitions,
            actor: repetitions,
            pairs: 1_000,
            pair_repetitions: repetitions,
        }
    }
}

/// The one-way hops (`msgs` of a sample) of `repetitions` round trips: the
/// post's formula divides the elapsed time by 2 × repetitions.
///
/// Every ping-pong workload starts with this, so that zero repetitions (which
/// would make ns per hop undefined) and an overflowing count are refused the
/// same way everywhere.
pub fn hops(repetitions: u64) -> Result<u64, WorkloadError> {
    match repetitions.checked_mul(2) {
        Some(hops) if hops > 0 => Ok(hops),
        _ => Err(WorkloadError::new(format!(
            "ping-pong needs between 1 and {} repetitions, got {repetitions}",
            u64::MAX / 2
        ))),
    }
}

/// Every ping-pong row, baselines first.
pub fn workloads(sizes: &Settings) -> Vec<Workload> {
    let mut rows = baseline_rows(sizes);
    rows.extend(actor_rows(sizes));
    rows
}

/// The rows without actors.
fn baseline_rows(sizes: &Settings) -> Vec<Workload> {
    vec![
        busy_spin::workload(sizes.busy_spin),
        tokio_mpsc::workload(
            tokio_mpsc::Flavor::MultiThread { workers: 2 },
            sizes.tokio,
            TOKIO_CAPACITY,
        ),
        tokio_mpsc::workload(
            tokio_mpsc::Flavor::CurrentThread,
            sizes.tokio,
            TOKIO_CAPACITY,
        ),
    ]
}

/// The troupe actor rows: two actors sending Ping and Pong back and forth
/// under the dispatcher settings of the issue (throughput 1/5/100 on 1 and 2
/// workers, and pinned threads), then the many-pairs row for aggregate
/// throughput on every core.
pub fn actor_rows(sizes: &Settings) -> Vec<Workload> {
    let mut rows = Vec::new();
    for workers in [1, 2] {
        for throughput in [1, 5, 100] {
            rows.push(actor_pair::workload(
                actor_pair::Setting::Pool {
                    workers,
                    throughput,
                },
                sizes.actor,
            ));
        }
    }
    rows.push(actor_pair::workload(
        actor_pair::Setting::Pinned,
        sizes.actor,
    ));
    // The same pair with `async fn` handlers, at the throughput the
    // synchronous rows are compared at (5).
    for mode in [
        async_pair::Mode::Never,
        async_pair::Mode::Ready,
        async_pair::Mode::Yield,
    ] {
        for workers in [1, 2] {
            rows.push(async_pair::workload(mode, workers, sizes.actor));
        }
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    for (balls, throughput) in [(1, 5), (10, 5), (10, 100)] {
        rows.push(many_pairs::workload(
            sizes.pairs,
            balls,
            cores,
            throughput,
            sizes.pair_repetitions,
        ));
    }
    // The same parallel work on one worker: what the other cores add.
    if cores > 1 {
        rows.push(many_pairs::workload(
            sizes.pairs,
            10,
            1,
            5,
            sizes.pair_repetitions,
        ));
    }
    rows
}

/// Runs the selected ping-pong rows and returns their results.
pub fn run(sizes: &Settings, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    run_experiment(EXPERIMENT, workloads(sizes), options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_unique_and_baselines_come_first() {
        let rows = workloads(&Settings::for_scale(Scale::Quick));
        let names: Vec<&str> = rows.iter().map(Workload::variant).collect();
        assert_eq!(
            &names[..3],
            ["busy-spin", "tokio-mpsc-mt-w2", "tokio-mpsc-ct"]
        );
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "duplicate variant in {names:?}");
    }

    #[test]
    fn hops_are_two_per_repetition_and_refuse_zero_and_overflow() {
        assert_eq!(hops(1), Ok(2));
        assert_eq!(hops(u64::MAX / 2), Ok(u64::MAX - 1));
        assert!(hops(0).is_err());
        assert!(hops(u64::MAX / 2 + 1).is_err());
    }

    #[test]
    fn scales_grow_and_full_is_the_posts_size() {
        let quick = Settings::for_scale(Scale::Quick);
        let default = Settings::for_scale(Scale::Default);
        let full = Settings::for_scale(Scale::Full);
        assert!(quick.busy_spin < default.busy_spin && default.busy_spin < full.busy_spin);
        assert!(quick.tokio < default.tokio && default.tokio <= full.tokio);
        assert_eq!(full.busy_spin, 100_000_000);
    }

    #[test]
    fn a_tiny_run_produces_validated_rows_with_params() {
        let _machine = crate::runner::tests::one_experiment_at_a_time();
        let options = RunOptions {
            repeats: 1,
            filter: None,
        };
        // One warm-up run a row: the rows' contents are checked, not speed.
        let rows = crate::warmup::WarmUp::fixed_within(1, || run(&Settings::uniform(200), &options))
            .unwrap();
        assert!(rows.len() >= 3);
        for row in &rows {
            assert_eq!(row.experiment, "pingpong");
            // Many-pairs rows play the repetitions on every pair.
            let pairs = row
                .params
                .get("pairs")
                .and_then(|p| p.as_u64())
                .unwrap_or(1);
            assert_eq!(row.msgs, 400 * pairs, "{}", row.variant);
            assert_eq!(row.params["repetitions"], 200, "{}", row.variant);
            assert!(row.ns_per_msg > 0.0);
            // The report sets troupe and the baselines apart by this field.
            let expected = if row.variant.starts_with("actor") || row.variant.starts_with("async") {
                "troupe"
            } else {
                "baseline"
            };
            assert_eq!(row.params["runtime"], expected, "{}", row.variant);
        }
        assert_eq!(rows[1].params["workers"], 2);
        assert_eq!(rows[2].params["flavor"], "current_thread");
    }
}

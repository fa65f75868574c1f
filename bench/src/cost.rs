//! What a run cost besides its wall-clock time: the CPU time of the whole
//! process (every thread, the benchmark's own included) and what troupe's
//! pool dispatchers did (`DispatcherStats::process`: runs, steals,
//! migrations of actors between workers, parks, wake-ups, the adaptive
//! governor's trials and time spent spreading). Taken around
//! every run by the runner, so a row says why it is fast or slow and what
//! it costs: two workers that burn 1.7 CPUs for what one does alone show
//! it here. The runner's part (setup, validation) is inside the figure too;
//! it is small next to the runs, and the same for every runtime.

use std::time::Duration;

use cpu_time::ProcessTime;
use serde_json::{json, Map, Value};
use troupe::DispatcherStats;

/// A snapshot of the process's CPU time and dispatcher counters.
pub struct Cost {
    cpu: Option<ProcessTime>,
    sched: DispatcherStats,
}

/// What one run spent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    /// CPU time of the process during the run.
    pub cpu: Duration,
    /// What the pools did during the run.
    pub sched: DispatcherStats,
}

impl Cost {
    /// Now.
    pub fn now() -> Cost {
        Cost {
            cpu: ProcessTime::try_now().ok(),
            sched: DispatcherStats::process(),
        }
    }

    /// What the process spent since `self` was taken.
    pub fn spent(&self) -> Spent {
        Spent {
            cpu: self.cpu.map_or(Duration::ZERO, |t| t.elapsed()),
            sched: DispatcherStats::process().since(&self.sched),
        }
    }
}

/// The row params of runs that each moved `msgs` messages: the median CPU
/// nanoseconds per message and CPUs busy (CPU time over wall time), and the
/// median of each dispatcher counter per million messages. Nothing for no
/// runs.
pub fn params(spent: &[Spent], msgs: u64, elapsed: &[Duration]) -> Map<String, Value> {
    let mut params = Map::new();
    if spent.is_empty() || msgs == 0 {
        return params;
    }
    let median = |values: Vec<f64>| median(values);
    let per_msg =
        |f: &dyn Fn(&Spent) -> f64| median(spent.iter().map(|s| f(s) / msgs as f64).collect());
    params.insert(
        "cpu_ns_per_msg".into(),
        json!(per_msg(&|s| s.cpu.as_nanos() as f64)),
    );
    if elapsed.len() == spent.len() {
        let busy: Vec<f64> = spent
            .iter()
            .zip(elapsed)
            .map(|(s, e)| s.cpu.as_secs_f64() / e.as_secs_f64().max(1e-9))
            .collect();
        params.insert("cpus_busy".into(), json!(median(busy)));
        // The share of the run the pools spent spreading work (eager
        // stealing): what the adaptive governor chose, for pools that
        // have one. Summed over pools, so two spreading pools read 2.
        let spread: Vec<f64> = spent
            .iter()
            .zip(elapsed)
            .map(|(s, e)| s.sched.spread_us as f64 / (e.as_secs_f64() * 1e6).max(1e-3))
            .collect();
        params.insert("spread_share".into(), json!(median(spread)));
    }
    let per_m = |f: fn(&DispatcherStats) -> u64| per_msg(&|s| f(&s.sched) as f64) * 1e6;
    params.insert(
        "sched_per_m_msgs".into(),
        json!({
            "runs": per_m(|d| d.tasks),
            "steals": per_m(|d| d.steals),
            "migrations": per_m(|d| d.migrations),
            "parks": per_m(|d| d.parks),
            "wakeups": per_m(|d| d.wakeups),
            "probes": per_m(|d| d.probes),
            "givebacks": per_m(|d| d.givebacks),
        }),
    );
    params
}

/// The median of some values (the mean of the middle two for an even
/// count), as the runner's summaries compute it.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

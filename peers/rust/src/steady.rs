//! The measurement protocol of every run, the one the bench applies to
//! troupe's rows and the Pekko peer to its own (`warmup::WarmUp` in the
//! bench, `Steady.java`): warm up in this process until two run-to-run
//! changes in a row are below `--steady-pct` percent (three consecutive
//! runs agree), after at least `--min-warmup` and at most `--max-warmup`
//! runs; then `--repeats` measured runs, every one of them returned.

use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::args::Args;

/// The protocol's figures, from the command line.
pub struct Steady {
    tolerance: f64,
    min_warmup: usize,
    max_warmup: usize,
    repeats: usize,
}

/// What the protocol measured: every warm-up and measured run's figure
/// (ns per message, lower is better), the CPUs the process kept busy
/// during each measured run, and how it went, in words.
pub struct Measured {
    /// The warm-up runs' figures, in order.
    pub warmup: Vec<f64>,
    /// The measured runs' figures, in order.
    pub samples: Vec<f64>,
    /// The process's CPU time over the wall time of each measured run.
    pub cpus_busy: Vec<f64>,
    /// "warm-up: 4 runs, until 3 in a row were within 3% run to run; then 5 measured runs".
    pub protocol: String,
}

impl Steady {
    /// The protocol of `args` (the bench's figures by default).
    pub fn from_args(a: &Args) -> Result<Steady, String> {
        let min_warmup = a.num("min-warmup", 3)? as usize;
        let repeats = a.num("repeats", 5)? as usize;
        if repeats < 1 {
            return Err("--repeats must be at least 1".into());
        }
        Ok(Steady {
            tolerance: a.real("steady-pct", 3.0)? / 100.0,
            min_warmup,
            max_warmup: (a.num("max-warmup", 15)? as usize).max(min_warmup),
            repeats,
        })
    }

    /// The measured runs of one row: `trial(measured)` runs the workload
    /// once and returns its figure (`measured` is false while warming up).
    /// A trial that cannot finish returns `Err`, which ends the row.
    pub fn measure(
        &self,
        what: &str,
        mut trial: impl FnMut(bool) -> Result<f64, String>,
    ) -> Result<Measured, String> {
        let mut warmup: Vec<f64> = Vec::new();
        let (mut change, mut previous) = (f64::NAN, f64::NAN);
        while warmup.len() < self.max_warmup {
            let figure = trial(false)?;
            warmup.push(figure);
            let k = warmup.len();
            previous = change;
            if k >= 2 {
                change = (warmup[k - 1] - warmup[k - 2]).abs() / warmup[k - 2];
            }
            eprintln!(
                "{what}: warm-up {k}: {figure:.1}{}",
                if k >= 2 {
                    format!(" ({:+.1}%)", 100.0 * (warmup[k - 1] / warmup[k - 2] - 1.0))
                } else {
                    String::new()
                }
            );
            if k >= self.min_warmup && change < self.tolerance && previous < self.tolerance {
                break;
            }
        }
        let mut samples = Vec::with_capacity(self.repeats);
        let mut cpus_busy = Vec::with_capacity(self.repeats);
        for _ in 0..self.repeats {
            let (cpu0, wall0) = (process_cpu_ns(), Instant::now());
            samples.push(trial(true)?);
            let (cpu1, wall) = (process_cpu_ns(), wall0.elapsed().as_nanos() as f64);
            if let (Some(c0), Some(c1)) = (cpu0, cpu1) {
                if wall > 0.0 {
                    cpus_busy.push((c1 - c0) / wall);
                }
            }
        }
        // Only a complete set: a median over some of the runs would be another figure.
        if cpus_busy.len() != samples.len() {
            cpus_busy.clear();
        }
        let pct = format!("{:.0}%", self.tolerance * 100.0);
        let warm = if warmup.is_empty() {
            "no warm-up".to_string()
        } else if warmup.len() < 3 {
            // Too few runs to see two run-to-run changes (a capped warm-up).
            format!("warm-up: {} run(s)", warmup.len())
        } else if change < self.tolerance && previous < self.tolerance {
            format!(
                "warm-up: {} runs, until 3 in a row were within {pct} run to run",
                warmup.len()
            )
        } else {
            format!(
                "warm-up: {} runs (the cap; last changes {:.1}% and {:.1}%, not both <{pct})",
                warmup.len(),
                100.0 * previous,
                100.0 * change
            )
        };
        let s = if self.repeats == 1 { "" } else { "s" };
        Ok(Measured {
            warmup,
            samples,
            cpus_busy,
            protocol: format!("{warm}; then {} measured run{s}", self.repeats),
        })
    }
}

impl Measured {
    /// The median of the measured runs.
    pub fn median(&self) -> f64 {
        median(&self.samples)
    }

    /// Puts `samples`, `warmup_samples`, `warmup_ns_per_msg` (the last
    /// warm-up run), `protocol` and, when the CPU time was read,
    /// `cpus_busy` and `cpu_ns_per_msg` (medians), each key with `suffix`.
    pub fn write_json(&self, json: &mut Map<String, Value>, suffix: &str) {
        if !self.cpus_busy.is_empty() {
            let per_msg: Vec<f64> = self
                .cpus_busy
                .iter()
                .zip(&self.samples)
                .map(|(busy, ns)| busy * ns)
                .collect();
            json.insert(format!("cpus_busy{suffix}"), json!(median(&self.cpus_busy)));
            json.insert(format!("cpu_ns_per_msg{suffix}"), json!(median(&per_msg)));
        }
        json.insert(format!("samples{suffix}"), json!(self.samples));
        json.insert(format!("warmup_samples{suffix}"), json!(self.warmup));
        if let Some(last) = self.warmup.last() {
            json.insert(format!("warmup_ns_per_msg{suffix}"), json!(last));
        }
        json.insert(format!("protocol{suffix}"), json!(self.protocol));
    }
}

/// The median of `values` (NaN for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The q-quantile (0..1) of sorted values, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).saturating_sub(1);
    sorted[i.min(sorted.len() - 1)]
}

/// The CPU time of the whole process so far, in nanoseconds.
fn process_cpu_ns() -> Option<f64> {
    cpu_time::ProcessTime::try_now()
        .ok()
        .map(|t| t.as_duration().as_nanos() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steady(min: u64, max: u64, repeats: u64) -> Steady {
        let words: Vec<String> =
            format!("--min-warmup {min} --max-warmup {max} --repeats {repeats}")
                .split_whitespace()
                .map(String::from)
                .collect();
        Steady::from_args(&Args::parse(&words).unwrap()).unwrap()
    }

    #[test]
    fn the_warm_up_ends_when_three_runs_agree_and_every_measured_run_is_kept() {
        let mut figures = [500.0, 200.0, 201.0, 202.0, 9.0, 10.0, 11.0].into_iter();
        let m = steady(3, 15, 3)
            .measure("test", |_| Ok(figures.next().unwrap()))
            .unwrap();
        assert_eq!(m.warmup, [500.0, 200.0, 201.0, 202.0]);
        assert_eq!(m.samples, [9.0, 10.0, 11.0]);
        assert_eq!(m.median(), 10.0);
        assert!(
            m.protocol.starts_with("warm-up: 4 runs, until 3 in a row"),
            "{}",
            m.protocol
        );
    }

    #[test]
    fn a_machine_that_never_settles_stops_at_the_cap_and_says_so() {
        let mut i = 0;
        let m = steady(3, 5, 1)
            .measure("test", |_| {
                i += 1;
                Ok(if i % 2 == 0 { 100.0 } else { 150.0 })
            })
            .unwrap();
        assert_eq!(m.warmup.len(), 5);
        assert!(m.protocol.contains("the cap"), "{}", m.protocol);
        assert!(
            m.protocol.ends_with("then 1 measured run"),
            "{}",
            m.protocol
        );
    }

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.99), 4.0);
        assert_eq!(median(&v), 2.5);
    }
}

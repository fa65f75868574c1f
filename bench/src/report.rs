//! What a run reports: one [`Row`] per measured workload (printed by
//! `table` for people) written as JSON for tools, together with the machine
//! it ran on and the command that produced it.
//!
//! The JSON file is one object:
//!
//! ```text
//! {
//!   "machine": { "cpu_model", "logical_cpus", "available_parallelism", "os", "arch",
//!                "kernel", "rustc", "git_commit", "git_dirty" },
//!   "run":     { "command", "started_unix_s", "peak_rss_bytes" },
//!   "rows":    [ { "experiment", "variant", "msgs", "repeats", "ns_per_msg", "msgs_per_s",
//!                  "min_ns_per_msg", "max_ns_per_msg", "samples_ns_per_msg",
//!                  "warmup_ns_per_msg", "params": { ... }, "protocol",
//!                  "failure" (only when the row failed) }, ... ]
//! }
//! ```
//!
//! Machine facts that cannot be found (no procfs, no git) are `null` rather
//! than an error: a benchmark result is still worth keeping without them.

use std::fs;
use std::io;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::rss;
use crate::runner::{summarize, Measurement};

/// The result of one workload: its identity, its summary and every raw sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// The experiment this row belongs to ("pingpong").
    pub experiment: String,
    /// The variant within the experiment ("busy-spin", "tokio-mpsc-mt-w2").
    pub variant: String,
    /// Messages moved per run.
    pub msgs: u64,
    /// Number of measured runs (the warm-up not included).
    pub repeats: usize,
    /// Median nanoseconds per message over the measured runs.
    pub ns_per_msg: f64,
    /// Messages per second at the median.
    pub msgs_per_s: f64,
    /// Fastest measured run, in nanoseconds per message.
    pub min_ns_per_msg: f64,
    /// Slowest measured run, in nanoseconds per message.
    pub max_ns_per_msg: f64,
    /// Every measured run in the order it ran, in nanoseconds per message.
    pub samples_ns_per_msg: Vec<f64>,
    /// The warm-up run, kept for the record but not summarised.
    pub warmup_ns_per_msg: f64,
    /// The parameters that produced this row (workers, throughput, pairs,
    /// repetitions, ...).
    pub params: Map<String, Value>,
    /// How the samples were taken ("1 warm-up, then 5 measured runs"), so a
    /// table can say it per row instead of assuming every row ran alike.
    #[serde(default)]
    pub protocol: String,
    /// Why this row's result is not valid (a failed check, errors in the
    /// responses), or `None` when every check passed. A failed row is still
    /// reported, with its figures, and makes the run's exit status fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl Row {
    /// Summarises a measurement into a row.
    ///
    /// # Panics
    ///
    /// If the measurement has no samples, which [`crate::runner::measure`]
    /// never returns.
    pub fn new(
        experiment: &str,
        variant: &str,
        params: Map<String, Value>,
        measurement: &Measurement,
    ) -> Self {
        let samples = measurement.ns_per_msg();
        let summary = summarize(&samples).expect("a measurement has at least one sample");
        let mut params = params;
        let elapsed: Vec<_> = measurement.samples.iter().map(|s| s.elapsed).collect();
        params.extend(crate::cost::params(
            &measurement.costs,
            measurement.msgs(),
            &elapsed,
        ));
        Row {
            experiment: experiment.to_string(),
            variant: variant.to_string(),
            msgs: measurement.msgs(),
            repeats: samples.len(),
            ns_per_msg: summary.median,
            msgs_per_s: 1e9 / summary.median,
            min_ns_per_msg: summary.min,
            max_ns_per_msg: summary.max,
            samples_ns_per_msg: samples,
            warmup_ns_per_msg: measurement.warmup.ns_per_msg(),
            protocol: measurement.protocol(),
            params,
            failure: None,
        }
    }
}

impl Row {
    /// The number `params[key]`, if the row has one.
    pub fn num(&self, key: &str) -> Option<f64> {
        self.params.get(key).and_then(Value::as_f64)
    }
}

/// The machine a run happened on, as far as it can be found out.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// Logical CPUs listed in `/proc/cpuinfo`.
    pub logical_cpus: Option<usize>,
    /// CPUs this process may use (affinity and cgroup limits applied).
    pub available_parallelism: Option<usize>,
    /// Operating system family, as Rust names it.
    pub os: String,
    /// CPU architecture, as Rust names it.
    pub arch: String,
    /// Kernel release, from `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// `rustc --version` at run time.
    pub rustc: Option<String>,
    /// `git rev-parse --short HEAD` of the source tree, read when the run
    /// starts (before `--readme` or `--docs` rewrites a tracked file).
    pub git_commit: Option<String>,
    /// Whether tracked files differed from that commit when the run started.
    pub git_dirty: Option<bool>,
    /// The commit the benchmark binary was built from (recorded at build
    /// time), which is what the figures measure.
    #[serde(default)]
    pub build_commit: Option<String>,
    /// Whether tracked files differed from `build_commit` when the binary
    /// was built.
    #[serde(default)]
    pub build_dirty: Option<bool>,
    /// Whether the binary was built with troupe's runtime metrics on
    /// ([`troupe::RUNTIME_METRICS`]): a sample per handled message, a cost
    /// the figures then include (a build of the whole workspace turns it
    /// on through primes's default features).
    #[serde(default)]
    pub runtime_metrics: Option<bool>,
}

impl Machine {
    /// "commit abc1234", "commit abc1234 (with local changes)": the commit the
    /// binary was built from when it was recorded, else the checkout's.
    pub fn code(&self) -> String {
        let (commit, dirty) = match &self.build_commit {
            Some(c) => (c.as_str(), self.build_dirty),
            None => (
                self.git_commit.as_deref().unwrap_or("unknown"),
                self.git_dirty,
            ),
        };
        let changes = if dirty == Some(true) {
            " (with local changes)"
        } else {
            ""
        };
        let metrics = if self.runtime_metrics == Some(true) {
            ", troupe's runtime metrics on"
        } else {
            ""
        };
        format!("commit {commit}{changes}{metrics}")
    }

    /// Finds out what it can about this machine; never fails.
    pub fn detect() -> Self {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").ok();
        // Git runs in the source tree the binary was built from, so that the
        // commit is right whatever directory the benchmark is started in.
        let source = env!("CARGO_MANIFEST_DIR");
        Machine {
            cpu_model: cpuinfo.as_deref().and_then(cpu_model),
            logical_cpus: cpuinfo.as_deref().map(logical_cpus).filter(|&n| n > 0),
            available_parallelism: thread::available_parallelism().ok().map(|n| n.get()),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
            rustc: command_output("rustc", &["--version"]),
            git_commit: command_output("git", &["-C", source, "rev-parse", "--short", "HEAD"]),
            git_dirty: command_output(
                "git",
                &[
                    "-C",
                    source,
                    "status",
                    "--porcelain",
                    "--untracked-files=no",
                ],
            )
            .map(|changes| !changes.is_empty()),
            build_commit: Some(env!("TROUPE_BUILD_COMMIT"))
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            build_dirty: match env!("TROUPE_BUILD_DIRTY") {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            runtime_metrics: Some(troupe::RUNTIME_METRICS),
        }
    }
}

/// How this report came about.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInfo {
    /// The exact command line, program name first.
    pub command: Vec<String>,
    /// When the run started, in seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// Peak resident memory of the benchmark process when the report was written.
    pub peak_rss_bytes: Option<u64>,
    /// Wall-clock seconds from the start of the run to the moment this was
    /// made (the end of the run). Absent in reports written before it existed.
    #[serde(default)]
    pub duration_s: Option<f64>,
}

impl RunInfo {
    /// The current process's command line, with the given start time and
    /// the time since then as the run's duration.
    pub fn new(started: SystemTime) -> Self {
        RunInfo {
            command: std::env::args().collect(),
            started_unix_s: started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            peak_rss_bytes: None,
            duration_s: started.elapsed().ok().map(|d| d.as_secs_f64()),
        }
    }
}

/// A run's length in words: seconds under two minutes, minutes above.
pub fn duration_text(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{:.1} minutes", seconds / 60.0)
    }
}

/// The whole JSON file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// How it was started.
    pub run: RunInfo,
    /// One object per row, across every experiment that ran.
    pub rows: Vec<Row>,
}

impl Report {
    /// Writes the report as pretty-printed JSON to `path`, recording the peak
    /// resident memory at this moment (the end of the run).
    pub fn write_json(&mut self, path: &Path) -> io::Result<()> {
        self.run.peak_rss_bytes = rss::peak_rss_bytes().ok();
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        fs::write(path, text)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
    }
}

/// The first `model name` in `/proc/cpuinfo` text.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// The number of `processor` entries in `/proc/cpuinfo` text.
fn logical_cpus(cpuinfo: &str) -> usize {
    cpuinfo
        .lines()
        .filter(|line| {
            line.split_once(':')
                .is_some_and(|(key, _)| key.trim() == "processor")
        })
        .count()
}

/// The trimmed stdout of a command that succeeded, or `None`.
fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[cfg(test)]
pub mod tests {
    use std::time::Duration;

    use super::*;
    use crate::runner::Sample;

    /// A row of `experiment`/`variant` whose measured runs took `ns` ns per
    /// message each (1,000 messages a run, the warm-up like the first run).
    pub fn row(experiment: &str, variant: &str, ns: &[f64]) -> Row {
        let sample = |ns: f64| Sample {
            msgs: 1000,
            elapsed: Duration::from_nanos((ns * 1000.0) as u64),
        };
        Row::new(
            experiment,
            variant,
            Map::new(),
            &Measurement::new(sample(ns[0]), ns.iter().copied().map(sample).collect()),
        )
    }

    fn measurement(warmup_ns: u64, ns: &[u64]) -> Measurement {
        let sample = |nanos| Sample {
            msgs: 1000,
            elapsed: Duration::from_nanos(nanos),
        };
        Measurement::new(sample(warmup_ns), ns.iter().copied().map(sample).collect())
    }

    fn busy_spin() -> Row {
        let mut params = Map::new();
        params.insert("repetitions".into(), 500.into());
        Row::new(
            "pingpong",
            "busy-spin",
            params,
            &measurement(90_000, &[50_000, 40_000, 60_000]),
        )
    }

    #[test]
    fn row_summarises_from_the_median_sample() {
        let r = busy_spin();
        assert_eq!(r.msgs, 1000);
        assert_eq!(r.repeats, 3);
        assert_eq!(r.ns_per_msg, 50.0);
        assert_eq!(r.msgs_per_s, 20_000_000.0);
        assert_eq!((r.min_ns_per_msg, r.max_ns_per_msg), (40.0, 60.0));
        assert_eq!(r.samples_ns_per_msg, vec![50.0, 40.0, 60.0]);
        assert_eq!(r.warmup_ns_per_msg, 90.0);
    }

    #[test]
    fn json_has_machine_run_and_rows_with_every_row_field() {
        let report = Report {
            machine: Machine::detect(),
            run: RunInfo::new(SystemTime::now()),
            rows: vec![busy_spin()],
        };
        let json = serde_json::to_value(&report).unwrap();
        // serde_json's map sorts keys, so the order here is alphabetical; the
        // file itself keeps the struct's order.
        let top: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(top, ["machine", "rows", "run"]);
        for key in [
            "cpu_model",
            "logical_cpus",
            "rustc",
            "git_commit",
            "os",
            "arch",
        ] {
            assert!(json["machine"].get(key).is_some(), "machine.{key} missing");
        }
        assert!(json["run"]["command"].is_array());
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r["experiment"], "pingpong");
        assert_eq!(r["variant"], "busy-spin");
        assert_eq!(r["msgs"], 1000);
        assert_eq!(r["ns_per_msg"], 50.0);
        assert_eq!(r["msgs_per_s"], 20_000_000.0);
        assert_eq!(r["min_ns_per_msg"], 40.0);
        assert_eq!(r["max_ns_per_msg"], 60.0);
        assert_eq!(
            r["samples_ns_per_msg"],
            serde_json::json!([50.0, 40.0, 60.0])
        );
        assert_eq!(r["params"], serde_json::json!({ "repetitions": 500 }));
    }

    #[test]
    fn cpuinfo_gives_model_and_count() {
        let text = "processor\t: 0\nmodel name\t: Example CPU @ 3.00GHz\n\n\
                    processor\t: 1\nmodel name\t: Example CPU @ 3.00GHz\n";
        assert_eq!(cpu_model(text).as_deref(), Some("Example CPU @ 3.00GHz"));
        assert_eq!(logical_cpus(text), 2);
        assert_eq!(cpu_model("processor : 0\n"), None);
    }
}

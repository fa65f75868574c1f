//! The side-by-side peers' plumbing, and Apache Pekko's: the Maven project in `peers/pekko`
//! implements the same experiments with the same parameters and checks;
//! this module builds its jar when needed (`mvn -q package`), runs it after
//! troupe's rows in the same invocation, and turns each `RESULT {json}` line
//! into rows with `params.runtime = "pekko"` and `params.peer_of` naming the
//! troupe row it is compared with.
//!
//! Every peer row follows one protocol, [`WarmUp`]: warm the JVM up until
//! three runs in a row agree within a few percent (with a cap), then
//! take as many measured runs as troupe's rows, all of which the row keeps.
//! The peer says per row what it did (`protocol`), and a failed check comes
//! back as a RESULT with a `failure` field, which becomes the row's failure.
//!
//! The Rust peers (kameo, ractor, actix; the `rust_peers` module) speak the
//! same protocol through [`run_child`] and [`row_of`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use crate::report::Row;
use crate::runner::{Measurement, Sample, WorkloadError};
pub use crate::warmup::WarmUp;

/// The Pekko peer's project directory.
pub fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../peers/pekko")
}

fn jar() -> PathBuf {
    project_dir().join("target/troupe-pekko-peer.jar")
}

fn newest_source(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.join("src"), dir.join("pom.xml")];
    while let Some(path) = stack.pop() {
        let meta = std::fs::metadata(&path).ok()?;
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).ok()?.flatten().map(|e| e.path()));
        } else if let Ok(m) = meta.modified() {
            newest = newest.max(Some(m));
        }
    }
    newest
}

fn tool_present(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Builds the jar if it is missing or older than its sources. `Err` says
/// why the peer cannot run (no `java`, no `mvn`, a failed build).
pub fn ensure_built() -> Result<(), String> {
    if !tool_present("java", "-version") {
        return Err("java is not installed".into());
    }
    let dir = project_dir();
    let built = std::fs::metadata(jar()).and_then(|m| m.modified()).ok();
    if built.is_some() && built >= newest_source(&dir) {
        return Ok(());
    }
    if !tool_present("mvn", "-v") {
        return Err("mvn is not installed (needed to build peers/pekko)".into());
    }
    eprintln!("pekko: building peers/pekko (mvn -q -B package)");
    let status = Command::new("mvn")
        .args(["-q", "-B", "package", "-DskipTests"])
        .current_dir(&dir)
        .status()
        .map_err(|e| format!("cannot run mvn: {e}"))?;
    if !status.success() {
        return Err(format!("mvn package failed in {}", dir.display()));
    }
    Ok(())
}

fn java() -> Command {
    let mut c = Command::new("java");
    // A fixed heap: the delayed run holds a million scheduled replies.
    c.args(["-Xms1g", "-Xmx4g", "-jar"]).arg(jar());
    c
}

/// The arguments that give the Java peer the [`WarmUp`] rule.
fn warmup_args() -> [String; 6] {
    let (min, max) = WarmUp::bounds();
    [
        "--steady-pct".into(),
        WarmUp::STEADY_PCT.to_string(),
        "--min-warmup".into(),
        min.to_string(),
        "--max-warmup".into(),
        max.to_string(),
    ]
}

/// Runs one experiment of the Pekko peer (with the [`WarmUp`] rule) and
/// returns its RESULT object. A run whose checks failed still returns its
/// RESULT, with a `failure` field; a run with no RESULT at all is an error.
pub fn run(args: &[&str]) -> Result<Map<String, Value>, WorkloadError> {
    run_child("pekko", java(), args)
}

/// Runs `command` with `args` and the [`WarmUp`] rule's arguments, and
/// returns the RESULT object it printed (see [`run`]); `name` says which
/// peer in progress lines and errors.
pub fn run_child(
    name: &str,
    mut command: Command,
    args: &[&str],
) -> Result<Map<String, Value>, WorkloadError> {
    eprintln!("{name}: {}", args.join(" "));
    let rtt = crate::core_latency::Around::start();
    let output = command
        .args(args)
        .args(warmup_args())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| WorkloadError::new(format!("cannot start the {name} peer: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let Some(line) = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")) else {
        return Err(WorkloadError::new(format!(
            "{name} {}: no RESULT line ({}): {last}",
            args.join(" "),
            output.status
        )));
    };
    let mut map = match serde_json::from_str(line) {
        Ok(Value::Object(map)) => map,
        _ => {
            return Err(WorkloadError::new(format!(
                "{name}: unreadable RESULT line {line}"
            )))
        }
    };
    // The machine's cross-CPU cost around the peer's run (see
    // `core_latency`), as troupe's rows carry it.
    map.insert(crate::core_latency::PARAM.into(), rtt.finish());
    if !output.status.success() && !map.contains_key("failure") {
        return Err(WorkloadError::new(format!(
            "{name} {}: exited with {} without saying why: {last}",
            args.join(" "),
            output.status
        )));
    }
    Ok(map)
}

/// A row for a peer result of `msgs` messages per run, built from the
/// figures the peer reported in `params`: `samples` (ns per message of
/// every measured run; required), `warmup_ns_per_msg` (the last warm-up
/// run), `protocol` (moved to the row's protocol) and `failure` (moved to
/// the row's failure).
pub fn row(
    experiment: &str,
    variant: &str,
    peer_of: &str,
    msgs: u64,
    params: Map<String, Value>,
) -> Result<Row, WorkloadError> {
    row_of("pekko", experiment, variant, peer_of, msgs, params)
}

/// [`row`] for the peer `runtime` (`pekko`, or a Rust library: see
/// the `rust_peers` module), which becomes the row's `params.runtime`.
pub fn row_of(
    runtime: &str,
    experiment: &str,
    variant: &str,
    peer_of: &str,
    msgs: u64,
    mut params: Map<String, Value>,
) -> Result<Row, WorkloadError> {
    let sample = |ns: f64| Sample {
        msgs: msgs.max(1),
        elapsed: Duration::from_secs_f64(ns.max(0.0) * msgs.max(1) as f64 / 1e9),
    };
    let samples: Vec<Sample> = params
        .get("samples")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).map(sample).collect())
        .unwrap_or_default();
    if samples.is_empty() {
        return Err(WorkloadError::new(format!(
            "{runtime} {experiment}/{variant}: the peer reported no samples"
        )));
    }
    let warmup = params
        .get("warmup_ns_per_msg")
        .and_then(Value::as_f64)
        .map_or(samples[0], sample);
    params.insert("runtime".into(), json!(runtime));
    params.insert("peer_of".into(), json!(peer_of));
    let protocol = params.remove("protocol");
    let failure = params.remove("failure");
    let mut row = Row::new(
        experiment,
        variant,
        params,
        &Measurement::new(warmup, samples),
    );
    if let Some(Value::String(p)) = protocol {
        row.protocol = p;
    }
    row.failure = failure.map(|f| match f {
        Value::String(s) => s,
        other => other.to_string(),
    });
    Ok(row)
}

/// The fields of a RESULT object whose keys end in `suffix`, without it:
/// the chameneos peer reports each game's `samples_3`, `protocol_3`, ...
pub fn suffixed(result: &Map<String, Value>, suffix: &str) -> Map<String, Value> {
    result
        .iter()
        .filter_map(|(k, v)| Some((k.strip_suffix(suffix)?.to_string(), v.clone())))
        .collect()
}

/// The fields `keys` of a RESULT object, as a row's params, and the
/// machine's cross-CPU cost around the run (`core_rtt_ns`, see [`run`]).
pub fn params(result: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .chain(&[crate::core_latency::PARAM])
        .filter_map(|k| Some((k.to_string(), result.get(*k)?.clone())))
        .collect()
}

/// The fields of a RESULT object that every Pekko peer row keeps: the
/// warm-up protocol's figures and the failure.
pub const PROTOCOL: [&str; 5] = [
    "samples",
    "warmup_samples",
    "warmup_ns_per_msg",
    "protocol",
    "failure",
];

/// The number field `key` of a RESULT object.
pub fn num(result: &Map<String, Value>, key: &str) -> f64 {
    result.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// The Pekko HTTP primes server, running until dropped.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The threads of its dispatcher, as it reported them.
    pub threads: Option<u64>,
}

impl Server {
    /// Starts `primes-serve` on a free port and waits for `LISTENING`.
    pub fn start(max_n: usize) -> Result<Server, WorkloadError> {
        use std::io::{BufRead, BufReader};
        let mut child = java()
            .args(["primes-serve", "--port", "0", "--max-n", &max_n.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| WorkloadError::new(format!("cannot start java: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        // `THREADS <n>` (its dispatcher's threads), then `LISTENING <port>`.
        let mut threads = None;
        let mut port = None;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(n) = line.strip_prefix("THREADS ") {
                threads = n.trim().parse().ok();
            } else if let Some(p) = line.strip_prefix("LISTENING ") {
                port = p.trim().parse::<u16>().ok();
                break;
            }
        }
        let port =
            port.ok_or_else(|| WorkloadError::new("the Pekko primes server did not start"))?;
        Ok(Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            threads,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_row_keeps_every_sample_its_protocol_and_its_failure() {
        let result: Map<String, Value> = serde_json::from_str(
            r#"{"samples": [30.0, 10.0, 20.0], "warmup_ns_per_msg": 40.0,
                "protocol": "JVM warm-up: 4 runs", "failure": "2 hops arrived out of order"}"#,
        )
        .unwrap();
        let r = row("pingpong", "pekko-pair", "actor-tp5-w2", 1000, result).unwrap();
        assert_eq!(r.samples_ns_per_msg, [30.0, 10.0, 20.0]);
        assert_eq!(
            (r.min_ns_per_msg, r.ns_per_msg, r.max_ns_per_msg),
            (10.0, 20.0, 30.0)
        );
        assert_eq!(r.protocol, "JVM warm-up: 4 runs");
        assert_eq!(r.failure.as_deref(), Some("2 hops arrived out of order"));
        assert_eq!(r.params["peer_of"], "actor-tp5-w2");
        assert!(!r.params.contains_key("protocol"));
        // A RESULT without samples is refused rather than shown with no spread.
        assert!(row("pingpong", "pekko-pair", "actor", 1000, Map::new()).is_err());
    }
}

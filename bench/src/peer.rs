//! Apache Pekko as a side-by-side peer: the Maven project in `peers/pekko`
//! implements the same experiments with the same parameters and checks;
//! this module builds its jar when needed (`mvn -q package`), runs it after
//! troupe's rows in the same invocation, and turns each `RESULT {json}` line
//! into rows with `params.runtime = "pekko"` and `params.peer_of` naming the
//! troupe row it is compared with.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use crate::report::Row;
use crate::runner::{Measurement, Sample, WorkloadError};

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

/// Runs one experiment of the peer and returns its RESULT object.
pub fn run(args: &[&str]) -> Result<Map<String, Value>, WorkloadError> {
    eprintln!("pekko: {}", args.join(" "));
    let output = java()
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| WorkloadError::new(format!("cannot start java: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(WorkloadError::new(format!(
            "pekko {}: {last}",
            args.join(" ")
        )));
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .ok_or_else(|| WorkloadError::new(format!("pekko {}: no RESULT line", args.join(" "))))?;
    match serde_json::from_str(line) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(WorkloadError::new(format!(
            "pekko: unreadable RESULT line {line}"
        ))),
    }
}

/// A row for a peer result: `msgs` messages at a median of `ns_per_msg`,
/// with the measured runs' figures when the peer reported them
/// (`params.samples`, ns per message) and its median alone otherwise.
pub fn row(
    experiment: &str,
    variant: &str,
    peer_of: &str,
    msgs: u64,
    ns_per_msg: f64,
    mut params: Map<String, Value>,
) -> Row {
    let sample = |ns: f64| Sample {
        msgs: msgs.max(1),
        elapsed: Duration::from_secs_f64(ns.max(0.0) * msgs.max(1) as f64 / 1e9),
    };
    let samples: Vec<Sample> = params
        .get("samples")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).map(sample).collect())
        .filter(|v: &Vec<Sample>| !v.is_empty())
        .unwrap_or_else(|| vec![sample(ns_per_msg)]);
    let warmup = params
        .get("warmup_ns_per_msg")
        .and_then(Value::as_f64)
        .map_or(samples[0], sample);
    params.insert("runtime".into(), json!("pekko"));
    params.insert("peer_of".into(), json!(peer_of));
    Row::new(
        experiment,
        variant,
        params,
        &Measurement { warmup, samples },
    )
}

/// The fields `keys` of a RESULT object, as a row's params.
pub fn params(result: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| Some((k.to_string(), result.get(*k)?.clone())))
        .collect()
}

/// The number field `key` of a RESULT object.
pub fn num(result: &Map<String, Value>, key: &str) -> f64 {
    result.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// The Pekko HTTP primes server, running until dropped.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
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
        let mut lines = BufReader::new(stdout).lines();
        let port = lines
            .find_map(|l| {
                l.ok()?
                    .strip_prefix("LISTENING ")?
                    .trim()
                    .parse::<u16>()
                    .ok()
            })
            .ok_or_else(|| WorkloadError::new("the Pekko primes server did not start"))?;
        Ok(Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

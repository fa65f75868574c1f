//! The driving process: round trips to the echo actor in the other
//! process, with 1 or N in flight, as troupe-remote's rows do them: N
//! lanes (tokio tasks), each asking the echo in turn (`call_t!`, ractor's
//! ask with a timeout) and checking that the answer is its request's
//! sequence number. Every run must be answered in full; the time of every
//! round trip of the measured runs gives the percentiles.
//!
//! Arguments: `--in-flight 1 --msgs 20000 --size 100 --threads 2` and the
//! protocol's. RESULT: `experiment` ("remote"), `mode` ("pingpong"),
//! `msgs` (round trips per run), `in_flight`, `size`, `threads`,
//! `ns_per_msg` (median), `msgs_per_s`, `rtt_p50_us`, `rtt_p99_us` and
//! the protocol's fields.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ractor::{call_t, ActorRef};
use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::harness::{ns_per, tokio_runtime, Check};
use crate::node::{connect_and_find_echo, start, EchoMsg};
use crate::steady::{median, Steady};

/// How long one answer may take before the run fails (troupe's rows
/// wait as long).
const ANSWER_MS: u64 = 10_000;

/// How long the echo process may take to start and be found.
const STARTUP: Duration = Duration::from_secs(60);

/// The echo process; dropping it closes its stdin (it leaves) and reaps
/// it, killing it if it has not left within five seconds.
struct EchoProcess {
    child: Child,
}

impl EchoProcess {
    /// Starts this binary as the echo process and returns it with the
    /// port its node listens on.
    fn start(threads: usize) -> Result<(EchoProcess, u16), String> {
        let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
        let mut child = Command::new(exe)
            .args(["ractor", "remote-echo", "--threads", &threads.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the echo process: {e}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let echo = EchoProcess { child };
        let (tx, line) = mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = tx.send(first);
        });
        let first = line
            .recv_timeout(STARTUP)
            .map_err(|_| format!("the echo process did not start within {STARTUP:?}"))?;
        let port = first
            .trim()
            .strip_prefix("LISTENING ")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("the echo process did not start: {:?}", first.trim()))?;
        Ok((echo, port))
    }
}

impl Drop for EchoProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one run saw: every round trip's time (ns), the answers that were
/// not their request's, and how many answers came.
struct Run {
    times: Vec<u64>,
    wrong: u64,
    answered: u64,
}

/// `n` round trips with `in_flight` outstanding: `in_flight` lanes, lane
/// `k` asking for `k`, `k + in_flight`, ... in turn.
async fn round_trips(
    echo: &ActorRef<EchoMsg>,
    n: u64,
    in_flight: u64,
    payload: &[u8],
) -> Result<Run, String> {
    let lanes = in_flight.max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..lanes {
        let echo = echo.clone();
        let payload = payload.to_vec();
        tasks.spawn(async move {
            let mut run = Run {
                times: Vec::with_capacity((n / lanes + 1) as usize),
                wrong: 0,
                answered: 0,
            };
            let mut seq = lane;
            while seq < n {
                let sent = Instant::now();
                let answer = call_t!(echo, EchoMsg::Ping, ANSWER_MS, seq, payload.clone())
                    .map_err(|e| format!("round trip {seq}: {e}"))?;
                run.times.push(sent.elapsed().as_nanos() as u64);
                run.answered += 1;
                run.wrong += u64::from(answer != seq);
                seq += lanes;
            }
            Ok::<Run, String>(run)
        });
    }
    let mut all = Run {
        times: Vec::with_capacity(n as usize),
        wrong: 0,
        answered: 0,
    };
    while let Some(lane) = tasks.join_next().await {
        let lane = lane.map_err(|e| format!("a lane panicked: {e}"))??;
        all.times.extend(lane.times);
        all.wrong += lane.wrong;
        all.answered += lane.answered;
    }
    Ok(all)
}

/// The value at `q` of sorted `values`, nearest rank as troupe's remote
/// rows and the Pekko peer take it.
fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    let last = sorted.len().checked_sub(1)?;
    sorted.get(((last as f64) * q).round() as usize).copied()
}

/// Runs the experiment and returns the RESULT.
pub fn run(a: &Args) -> Result<Map<String, Value>, String> {
    let in_flight = a.num("in-flight", 1)?.max(1);
    let msgs = a
        .num("msgs", if in_flight == 1 { 20_000 } else { 192_000 })?
        .max(1);
    let size = a.num("size", 100)? as usize;
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let payload = vec![0x5a_u8; size];

    let (_echo_process, port) = EchoProcess::start(threads)?;
    let rt = tokio_runtime(threads)?;
    let (node, echo) = rt.block_on(async {
        let node = start("driver", 0).await?;
        let echo = connect_and_find_echo(&node, port, STARTUP).await?;
        Ok::<_, String>((node, echo))
    })?;

    let mut checks = Check::default();
    let mut latencies: Vec<u64> = Vec::new();
    let what = format!("ractor_cluster rtt-{in_flight}");
    let measured = steady.measure(&what, |measured| {
        let started = Instant::now();
        let run = rt.block_on(round_trips(&echo, msgs, in_flight, &payload))?;
        let elapsed = started.elapsed();
        checks.that(run.answered == msgs, || {
            format!("{} of {msgs} round trips were answered", run.answered)
        });
        checks.that(run.wrong == 0, || {
            format!("{} answers were not their request's", run.wrong)
        });
        if measured {
            latencies.extend(&run.times);
        }
        Ok(ns_per(elapsed, msgs))
    })?;
    rt.block_on(async {
        node.stop(None);
    });

    latencies.sort_unstable();
    let mut json = Map::new();
    json.insert("experiment".into(), json!("remote"));
    json.insert("mode".into(), json!("pingpong"));
    json.insert("msgs".into(), json!(msgs));
    json.insert("in_flight".into(), json!(in_flight));
    json.insert("size".into(), json!(size));
    json.insert("threads".into(), json!(threads));
    let ns = median(&measured.samples);
    json.insert("ns_per_msg".into(), json!(ns));
    json.insert("msgs_per_s".into(), json!(1e9 / ns));
    if let (Some(p50), Some(p99)) = (percentile(&latencies, 0.50), percentile(&latencies, 0.99)) {
        json.insert("rtt_p50_us".into(), json!(p50 as f64 / 1e3));
        json.insert("rtt_p99_us".into(), json!(p99 as f64 / 1e3));
    }
    measured.write_json(&mut json, "");
    if let Some(f) = checks.failure() {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

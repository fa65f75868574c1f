//! The cluster-app's kill row: one node process SIGKILLed mid-run while
//! the client keeps `window` commands in flight on the JetStream journal.
//!
//! Each kill is a fresh cluster (as the trading cluster's failover row): a
//! third of the run's commands acknowledged, node `k` killed (the victims
//! rotate over the three nodes, so the shard coordinator's node, the
//! oldest, is among them), and the run goes on. The client retries every
//! ask that gets no answer within [`ASK_TIMEOUT`] with the same command id,
//! as an application with an idempotency key does; a ledger answers an id
//! it already holds without a second event (see `node.rs`). Measured:
//! the time from the kill until every ledger answers again, by a probe
//! per ledger started at the kill (a read, asked again until answered:
//! its first answer is when that ledger is back), and after the run every
//! ledger is read back: every command, all of them acknowledged in the
//! end, held exactly once (0 lost, 0 doubled).
//!
//! Why probes and not the commands' own answers: the command lanes each
//! wait on their current command, so within a few milliseconds of the
//! kill every lane waits on a ledger of the killed node, no command
//! reaches the live ledgers, and a ledger's first command answer after the
//! kill says when a lane got to it, not when it was back (measured that
//! way, 536-734 ledgers "waited" over a second for a kill that moved
//! about 333). The commands' figure is kept beside it
//! (`outage_commands_*`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use troupe::ActorRef;

use super::{verify, Client, Cluster, LedgerCmd, Settings, EXPERIMENT, WAIT};
use crate::report::Row;
use crate::runner::{summarize, WorkloadError};

/// How long an ask waits before it is sent again: short against the
/// outage measured (the heartbeat timeout, 3 s by default), so a retry
/// reaches a ledger soon after it is back, and long against an answer's
/// p99 under load, so few retries are spurious (those are absorbed by the
/// ledger and counted).
const ASK_TIMEOUT: Duration = Duration::from_millis(250);

/// The pause after an ask failed at once (refused: its shard's home is
/// down), so a lane does not spin while the shard moves.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// A ledger that first answered this long after the kill waited for its
/// shard to move (the others answer within an ask's round trip).
const MOVED: Duration = Duration::from_secs(1);

/// The variant of the kill row.
pub const VARIANT: &str = "jetstream-kill";

/// What one kill measured.
struct Outcome {
    /// From the kill until every ledger's probe had its answer.
    outage: Duration,
    /// From the kill until every ledger had answered a command again.
    outage_commands: Duration,
    /// From the kill until the first ledger that waited (one of the
    /// killed node's) answered again: detection and the shard's move,
    /// before the moved ledgers' recoveries add up.
    first_moved: Duration,
    /// The median of those ledgers' waits.
    median_moved: Duration,
    /// Ledgers that waited (over [`MOVED`]): the killed node's.
    moved: usize,
    /// Asks sent again (the client's count).
    retries: u64,
}

impl Client {
    /// Sends commands `0..n` (command `c` to ledger `c % entities`),
    /// `window` in flight, each asked again until answered (or [`WAIT`]
    /// passes); counts the answers in `acked` as they come. Returns each
    /// answer's ledger and time, and the number of retries.
    fn send_retrying(
        &self,
        n: u64,
        window: usize,
        acked: &Arc<AtomicU64>,
    ) -> Result<(Vec<(usize, Instant)>, u64), WorkloadError> {
        let ledgers = self.ledgers.clone();
        let acked = acked.clone();
        self.runtime.block_on(async move {
            let mut lanes = tokio::task::JoinSet::new();
            for lane in 0..window as u64 {
                let (ledgers, acked) = (ledgers.clone(), acked.clone());
                lanes.spawn(async move {
                    let (mut answers, mut retries) = (Vec::new(), 0u64);
                    for c in (lane..n).step_by(window) {
                        let index = (c % ledgers.len() as u64) as usize;
                        let ledger = &ledgers[index];
                        let deadline = Instant::now() + WAIT;
                        loop {
                            let started = Instant::now();
                            match ledger.ask(|r| super::LedgerCmd::Add(c, r), ASK_TIMEOUT).await {
                                Ok(_) => break,
                                Err(e) if Instant::now() > deadline => {
                                    return Err(WorkloadError::new(format!(
                                        "command {c} to {:?}: no answer within {WAIT:?}: {e}",
                                        ledger.name()
                                    )))
                                }
                                Err(_) => {
                                    retries += 1;
                                    if started.elapsed() < ASK_TIMEOUT {
                                        tokio::time::sleep(RETRY_PAUSE).await;
                                    }
                                }
                            }
                        }
                        acked.fetch_add(1, Ordering::Relaxed);
                        answers.push((index, Instant::now()));
                    }
                    Ok::<_, WorkloadError>((answers, retries))
                });
            }
            let (mut all, mut retries) = (Vec::with_capacity(n as usize), 0);
            while let Some(done) = lanes.join_next().await {
                let (answers, r) =
                    done.map_err(|e| WorkloadError::new(format!("a lane panicked: {e}")))??;
                all.extend(answers);
                retries += r;
            }
            Ok((all, retries))
        })
    }
}

/// One kill of node `victim` in a fresh cluster.
fn one_kill(settings: &Settings, victim: usize) -> Result<Outcome, WorkloadError> {
    let mut cluster = Cluster::start("jetstream", settings)?;
    let mut node = cluster.nodes.remove(victim);
    let acked = Arc::new(AtomicU64::new(0));
    let threshold = settings.commands / 3;
    let killer = {
        let acked = acked.clone();
        let runtime = cluster.client.runtime.handle().clone();
        let ledgers = cluster.client.ledgers.clone();
        std::thread::spawn(move || {
            // The bench's own clock, not a test's: a millisecond's poll
            // puts the kill within a millisecond of the third.
            while acked.load(Ordering::Relaxed) < threshold {
                std::thread::sleep(Duration::from_millis(1));
            }
            let at = Instant::now();
            node.kill()?;
            Ok::<_, WorkloadError>((at, runtime.spawn(probe(ledgers))))
        })
    };
    let sent = cluster
        .client
        .send_retrying(settings.commands, settings.window, &acked);
    let (killed_at, probes) = killer
        .join()
        .map_err(|_| WorkloadError::new("the killer thread panicked"))??;
    let (answers, retries) = sent?;
    let back = cluster
        .client
        .runtime
        .block_on(probes)
        .map_err(|e| WorkloadError::new(format!("the probes panicked: {e}")))??;
    verify(&cluster.client.read_all()?, settings.commands)?;
    let mut first_after = vec![None; settings.entities as usize];
    for (ledger, at) in answers.into_iter().filter(|(_, at)| *at >= killed_at) {
        let first = &mut first_after[ledger];
        if first.is_none_or(|f| at < f) {
            *first = Some(at);
        }
    }
    let mut outage_commands = Duration::ZERO;
    for (ledger, first) in first_after.iter().enumerate() {
        let first = first.ok_or_else(|| {
            WorkloadError::new(format!(
                "ledger-{ledger} answered nothing after node {victim} was killed \
                 (too few commands a ledger: give --commands at least 3 x --entities)"
            ))
        })?;
        outage_commands = outage_commands.max(first - killed_at);
    }
    let waits: Vec<Duration> = back.iter().map(|at| at.saturating_duration_since(killed_at)).collect();
    let moved: Vec<Duration> = waits.iter().copied().filter(|w| *w >= MOVED).collect();
    let outage = waits.iter().copied().max().unwrap_or_default();
    let mut sorted = moved.clone();
    sorted.sort();
    Ok(Outcome {
        outage,
        outage_commands,
        first_moved: sorted.first().copied().unwrap_or(outage),
        median_moved: sorted.get(sorted.len() / 2).copied().unwrap_or(outage),
        moved: moved.len(),
        retries,
    })
}

/// How long a probe's read waits for its answer. Long against an
/// activation, so a read that reached the ledger's new node is answered
/// the moment the ledger is back (a 250 ms ask would have timed out and
/// its answer been dropped, rounding the measurement up to the next ask);
/// a read sent to the killed node is refused at once (no responders) and
/// asked again after [`RETRY_PAUSE`]. Only a read on the wire at the
/// instant of the kill can be lost, costing this much.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Asks every ledger for a read, again until it answers (after
/// [`RETRY_PAUSE`] if refused at once, after [`PROBE_TIMEOUT`] if
/// unanswered): when each first answered.
async fn probe(ledgers: Arc<Vec<ActorRef<LedgerCmd>>>) -> Result<Vec<Instant>, WorkloadError> {
    let mut probes = tokio::task::JoinSet::new();
    for (i, ledger) in ledgers.iter().enumerate() {
        let ledger = ledger.clone();
        probes.spawn(async move {
            let deadline = Instant::now() + WAIT;
            loop {
                let started = Instant::now();
                match ledger.ask(LedgerCmd::Read, PROBE_TIMEOUT).await {
                    Ok(_) => return Ok((i, Instant::now())),
                    Err(e) if Instant::now() > deadline => {
                        return Err(WorkloadError::new(format!(
                            "{:?} did not answer a read within {WAIT:?}: {e}",
                            ledger.name()
                        )))
                    }
                    Err(_) if started.elapsed() < PROBE_TIMEOUT => {
                        tokio::time::sleep(RETRY_PAUSE).await
                    }
                    Err(_) => {}
                }
            }
        });
    }
    let mut back = vec![Instant::now(); ledgers.len()];
    while let Some(done) = probes.join_next().await {
        let (i, at) = done.map_err(|e| WorkloadError::new(format!("a probe panicked: {e}")))??;
        back[i] = at;
    }
    Ok(back)
}

/// The kill row: `settings.kills` kills (the first a warm-up, as every
/// row's first run), each in a fresh cluster; `None` when fewer than two
/// are asked for.
pub fn row(settings: &Settings) -> Result<Option<Row>, WorkloadError> {
    if settings.kills < 2 {
        return Ok(None);
    }
    eprintln!("{EXPERIMENT}: {} SIGKILLs of a node mid-run", settings.kills);
    let mut runs = Vec::new();
    let mut retries = Vec::new();
    let mut victims = Vec::new();
    let mut firsts = Vec::new();
    let mut commands = Vec::new();
    for k in 0..settings.kills {
        // The newest node first, the coordinator's (the oldest) third.
        let victim = (super::NODES - 1) - (k as usize % super::NODES);
        let outcome = one_kill(settings, victim)
            .map_err(|e| e.context(&format!("kill {} (node {victim})", k + 1)))?;
        eprintln!(
            "{EXPERIMENT}: kill {} (node {victim}): every ledger answered a read again after \
             {:.0} ms (of the {} that waited, the first after {:.0} ms, half after {:.0} ms) \
             and a command after {:.0} ms, {} asks sent again",
            k + 1,
            outage_ms(outcome.outage),
            outcome.moved,
            outage_ms(outcome.first_moved),
            outage_ms(outcome.median_moved),
            outage_ms(outcome.outage_commands),
            outcome.retries
        );
        commands.push(outage_ms(outcome.outage_commands));
        firsts.push(outage_ms(outcome.first_moved));
        runs.push(outcome.outage);
        retries.push(outcome.retries as f64);
        victims.push(victim);
    }
    let (measurement, measured, outage) = crate::shared::per_fault(runs);
    let mut params = serde_json::Map::new();
    params.insert("runtime".into(), json!("troupe"));
    params.insert("journal".into(), json!("jetstream"));
    params.insert("entities".into(), json!(settings.entities));
    params.insert("shards".into(), json!(settings.shards));
    params.insert("window".into(), json!(settings.window as u64));
    params.insert("commands".into(), json!(settings.commands));
    params.insert("kills".into(), json!(measured.len()));
    params.insert("victims".into(), json!(victims));
    params.insert("outage_p50_ms".into(), json!(outage.median));
    params.insert("outage_max_ms".into(), json!(outage.max));
    params.insert("ask_timeout_ms".into(), json!(ASK_TIMEOUT.as_millis() as u64));
    // Without the warm-up kill, as the outage.
    params.insert(
        "first_moved_p50_ms".into(),
        json!(summarize(&firsts[1..]).expect("runs").median),
    );
    let by_commands = summarize(&commands[1..]).expect("runs");
    params.insert("outage_commands_p50_ms".into(), json!(by_commands.median));
    params.insert("outage_commands_max_ms".into(), json!(by_commands.max));
    params.insert(
        "retries_per_kill".into(),
        json!(summarize(&retries).expect("runs").median),
    );
    params.insert("lost".into(), json!(0));
    params.insert("doubled".into(), json!(0));
    Ok(Some(Row::new(EXPERIMENT, VARIANT, params, &measurement)))
}

fn outage_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

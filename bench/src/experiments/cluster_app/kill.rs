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
//! the time from the kill until every ledger has answered again (the
//! longest wait over the ledgers from the kill to their first answer after
//! it), and after the run every ledger is read back: every command, all of
//! them acknowledged in the end, held exactly once (0 lost, 0 doubled).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{verify, Client, Cluster, Settings, EXPERIMENT, WAIT};
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

/// The variant of the kill row.
pub const VARIANT: &str = "jetstream-kill";

/// What one kill measured.
struct Outcome {
    /// From the kill until every ledger had answered again.
    outage: Duration,
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
        std::thread::spawn(move || -> Result<Instant, WorkloadError> {
            // The bench's own clock, not a test's: a millisecond's poll
            // puts the kill within a millisecond of the third.
            while acked.load(Ordering::Relaxed) < threshold {
                std::thread::sleep(Duration::from_millis(1));
            }
            let at = Instant::now();
            node.kill()?;
            Ok(at)
        })
    };
    let sent = cluster
        .client
        .send_retrying(settings.commands, settings.window, &acked);
    let killed_at = killer
        .join()
        .map_err(|_| WorkloadError::new("the killer thread panicked"))??;
    let (answers, retries) = sent?;
    verify(&cluster.client.read_all()?, settings.commands)?;
    let mut first_after = vec![None; settings.entities as usize];
    for (ledger, at) in answers.into_iter().filter(|(_, at)| *at >= killed_at) {
        let first = &mut first_after[ledger];
        if first.is_none_or(|f| at < f) {
            *first = Some(at);
        }
    }
    let mut outage = Duration::ZERO;
    for (ledger, first) in first_after.iter().enumerate() {
        let first = first.ok_or_else(|| {
            WorkloadError::new(format!(
                "ledger-{ledger} answered nothing after node {victim} was killed \
                 (too few commands a ledger: give --commands at least 3 x --entities)"
            ))
        })?;
        outage = outage.max(first - killed_at);
    }
    Ok(Outcome { outage, retries })
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
    for k in 0..settings.kills {
        // The newest node first, the coordinator's (the oldest) third.
        let victim = (super::NODES - 1) - (k as usize % super::NODES);
        let outcome = one_kill(settings, victim)
            .map_err(|e| e.context(&format!("kill {} (node {victim})", k + 1)))?;
        eprintln!(
            "{EXPERIMENT}: kill {} (node {victim}): every ledger answered again after {:.0} ms, \
             {} asks sent again",
            k + 1,
            outage_ms(outcome.outage),
            outcome.retries
        );
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

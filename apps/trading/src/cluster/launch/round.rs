//! One run of `trading cluster`: a cluster, one round of clients, the
//! fault the options ask for once a share of the orders is acknowledged,
//! and the checks.

use std::time::Instant;

use super::{interrupt, Cluster, ClusterOptions};
use crate::cluster::verify::ClusterOutcome;
use crate::topology::Scenario;
use crate::txlog::TxLog;

/// Runs the distributed system once (`trading cluster`); `progress` gets
/// a line per step.
pub fn run_cluster(
    options: &ClusterOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<ClusterOutcome, String> {
    let scenario = Scenario::new(options.clients, options.orders)
        .map_err(|e| e.to_string())?
        .with_pattern(options.pattern);
    let faulted =
        options.kill_standby || options.kill_host || options.restart_killed || options.restart_all;
    let isolated = options.pause_primary.is_some() || options.partition_primary.is_some();
    if options.kill_at_acked.is_none() && (faulted || isolated) {
        return Err(
            "a kill, a pause or a partition needs the share of orders it comes at \
             (kill_at_acked)"
                .into(),
        );
    }
    if isolated && faulted {
        return Err(
            "a pause or a partition is of the primaries' node alone: no standby kill, host \
             kill or restart with it"
                .into(),
        );
    }
    if options.pause_primary.is_some() && options.partition_primary.is_some() {
        return Err("a pause or a partition, not both".into());
    }
    if options.broker_outage.is_some() {
        if options.kill_at_acked.is_none() {
            return Err("a broker restart needs the share of orders it comes at \
                        (kill_at_acked)"
                .into());
        }
        if faulted || isolated {
            return Err(
                "a broker restart is the run's one fault: no node kill, pause or \
                        partition with it"
                    .into(),
            );
        }
        if options.servers != 1 {
            return Err(format!(
                "a broker restart is of the cluster's one NATS server, not of {} (with \
                 several, lose one with kill_host)",
                options.servers
            ));
        }
    }
    if options.restart_all
        && (options.txlog == TxLog::Off
            || options.kill_standby
            || options.kill_host
            || options.restart_killed)
    {
        return Err(
            "a whole-cluster restart kills every engine node and starts them from their \
             logs: it needs a log mode (buffered or group-commit) and no other fault"
                .into(),
        );
    }
    if options
        .kill_at_acked
        .is_some_and(|p| !(1..=99).contains(&p))
    {
        return Err("the share of orders a fault comes at is a percentage from 1 to 99".into());
    }
    let mut cluster = Cluster::start(options, progress)?;
    let mut clients = cluster.start_round(scenario, options.window, options.mode)?;
    let started = Instant::now();
    progress(&format!(
        "{} clients placing {} orders ({}, {} in flight each)",
        scenario.clients,
        scenario.orders(),
        options.mode.name(),
        options.window
    ));
    if let Some(share) = options.kill_at_acked {
        cluster.wait_for_acked(&mut clients, share)?;
        progress(&format!("{share}% of the orders acknowledged"));
        if let Some(after) = options.kill_after {
            interrupt::sleep(after.saturating_sub(started.elapsed()))?;
        }
    }
    if let (Some(_), Some(outage)) = (options.kill_at_acked, options.broker_outage) {
        cluster.restart_broker(outage)?;
        progress(&format!(
            "SIGKILLed the nats-server and started it again on the same port and store \
             {} ms later",
            outage.as_millis()
        ));
    } else if let (Some(_), Some(pause)) = (options.kill_at_acked, options.pause_primary) {
        let paused = cluster.pause()?;
        progress(&format!(
            "SIGSTOPped {paused} (the primaries' node) for {} ms",
            pause.as_millis()
        ));
        // The launcher's own timing of the fault, not a wait for an
        // outcome: the pause is what is being injected.
        interrupt::sleep(pause)?;
        cluster.resume(&paused)?;
        progress(&format!("SIGCONTed {paused}"));
    } else if let (Some(_), Some(cut)) = (options.kill_at_acked, options.partition_primary) {
        let cut_off = cluster.partition()?;
        progress(&format!(
            "cut {cut_off} (the primaries' node) off the network for {} ms",
            cut.as_millis()
        ));
        // The fault's own timing, as for a pause.
        interrupt::sleep(cut)?;
        cluster.heal(&cut_off)?;
        progress(&format!("joined {cut_off} to the network again"));
    } else if options.kill_at_acked.is_some() && options.restart_all {
        let names = cluster.kill_all()?;
        progress(&format!(
            "SIGKILLed every engine node ({})",
            names.join(", ")
        ));
        cluster.restart(&names)?;
        progress("the engine nodes started again from their logs");
    } else if options.kill_at_acked.is_some() {
        let dead = cluster.kill(options.kill_standby)?;
        let what = if options.kill_standby {
            "standbys"
        } else {
            "primaries"
        };
        let host = if options.kill_host {
            " and its NATS server"
        } else {
            ""
        };
        progress(&format!("SIGKILLed {dead} (the {what}' node){host}"));
        if options.restart_killed {
            cluster.rejoin(&dead, "engines-c")?;
            progress("engines-c joined as standby");
        }
    }
    let result = cluster.finish_round(clients)?;
    progress(&format!(
        "clients done: {} acknowledged, {} given up, {} retries",
        result.acked,
        result.given_up.len(),
        result.retries
    ));
    let outcome = cluster.verify();
    if let Ok(outcome) = &outcome {
        for f in &outcome.fail_stopped {
            progress(&format!("{} fail-stopped on its own", f.node));
        }
    }
    cluster.stop();
    outcome
}

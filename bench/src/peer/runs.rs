//! Each experiment's Pekko rows, at the same sizes as troupe's rows in the
//! same invocation.

use serde_json::{json, Map, Value};

use super::{num, row, run, Server};
use crate::report::Row;
use crate::runner::{RunOptions, WorkloadError};
use crate::{chameneos, delayed, pingpong, primes, trading};

fn params(result: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| Some((k.to_string(), result.get(*k)?.clone())))
        .collect()
}

/// One pair (compared with troupe's 2-worker, throughput-5 pair, Pekko's
/// own configuration) and 1,000 pairs with 1 and 10 balls in flight.
pub fn pingpong(sizes: &pingpong::Sizes, options: &RunOptions) -> Result<Vec<Row>, WorkloadError> {
    let repeats = options.repeats.to_string();
    let pair_msgs = (2 * sizes.actor).to_string();
    let many_msgs = (2 * sizes.pairs as u64 * sizes.pair_repetitions).to_string();
    let pairs = sizes.pairs.to_string();
    let mut rows = Vec::new();
    for (args, peer_of) in [
        (
            vec![
                "pingpong",
                "--msgs",
                &pair_msgs,
                "--pairs",
                "1",
                "--in-flight",
                "1",
            ],
            "actor-tp5-w2".to_string(),
        ),
        (
            vec![
                "pingpong",
                "--msgs",
                &many_msgs,
                "--pairs",
                &pairs,
                "--in-flight",
                "1",
            ],
            format!("actor-{pairs}x1-pairs-tp5-w2"),
        ),
        (
            vec![
                "pingpong",
                "--msgs",
                &many_msgs,
                "--pairs",
                &pairs,
                "--in-flight",
                "10",
            ],
            format!("actor-{pairs}x10-pairs-tp5-w2"),
        ),
    ] {
        let mut args = args;
        args.extend(["--repeats", &repeats]);
        let r = run(&args)?;
        let variant = r
            .get("variant")
            .and_then(Value::as_str)
            .unwrap_or("pekko")
            .to_string();
        rows.push(row(
            "pingpong",
            &variant,
            &peer_of,
            num(&r, "msgs") as u64,
            num(&r, "ns_per_msg"),
            params(&r, &["samples", "warmup_ns_per_msg"]),
        ));
    }
    Ok(rows)
}

/// Both games of chameneos-redux, one row per game like troupe's.
pub fn chameneos(
    settings: &chameneos::Settings,
    options: &RunOptions,
) -> Result<Vec<Row>, WorkloadError> {
    let n = settings.meetings.to_string();
    let repeats = options.repeats.to_string();
    let r = run(&["chameneos", "--meetings", &n, "--repeats", &repeats])?;
    Ok([(3, "seconds_3"), (10, "seconds_10")]
        .iter()
        .map(|&(creatures, key)| {
            let seconds = num(&r, key);
            let mut p = Map::new();
            p.insert("implementation".into(), json!("pekko"));
            p.insert("creatures".into(), json!(creatures));
            p.insert("meetings".into(), json!(settings.meetings));
            p.insert("seconds".into(), json!(seconds));
            p.insert(
                "meetings_per_s".into(),
                json!(settings.meetings as f64 / seconds),
            );
            row(
                chameneos::EXPERIMENT,
                &format!("pekko-{creatures}"),
                &format!("actor-{creatures}"),
                settings.meetings,
                seconds * 1e9 / settings.meetings as f64,
                p,
            )
        })
        .collect())
}

/// request-reply and one-way with the log off, at troupe's client counts.
pub fn trading(
    settings: &trading::Settings,
    options: &RunOptions,
) -> Result<Vec<Row>, WorkloadError> {
    let mut rows = Vec::new();
    let repeats = options.repeats.to_string();
    for point in settings
        .points
        .iter()
        .filter(|p| p.txlog == ::trading::TxLog::Off && p.variant != ::trading::Variant::Sync)
    {
        let variant = point.variant.name();
        let clients = point.clients.to_string();
        let orders = settings.orders.to_string();
        let r = run(&[
            "trading",
            "--variant",
            variant,
            "--clients",
            &clients,
            "--orders",
            &orders,
            "--repeats",
            &repeats,
        ])?;
        if r.get("verified") != Some(&json!(true)) {
            return Err(WorkloadError::new(format!(
                "pekko trading {variant}: not verified"
            )));
        }
        let mut p = params(
            &r,
            &[
                "txlog", "clients", "orders", "tps", "mean_us", "p5_us", "p25_us", "p50_us",
                "p75_us", "p95_us", "p99_us", "max_us", "trades", "verified",
            ],
        );
        p.insert("variant".into(), json!(format!("pekko {variant}")));
        // The peer reports its median throughput; its duration follows.
        p.insert(
            "duration_s".into(),
            json!(num(&r, "orders") / num(&r, "tps")),
        );
        rows.push(row(
            trading::EXPERIMENT,
            &format!("pekko-{variant}/off"),
            &format!("{variant}/off"),
            num(&r, "orders") as u64,
            1e9 / num(&r, "tps"),
            p,
        ));
    }
    Ok(rows)
}

/// One run of the delayed experiment (a JVM per run, as troupe's rows get
/// a process per run).
pub fn delayed(sizes: &delayed::Sizes) -> Result<Vec<Row>, WorkloadError> {
    let jobs = sizes.jobs.to_string();
    let delay = sizes.delay.as_millis().to_string();
    let r = run(&["delayed", "--jobs", &jobs, "--delay-ms", &delay])?;
    Ok(vec![row(
        delayed::EXPERIMENT,
        "pekko",
        "actor",
        sizes.jobs,
        num(&r, "ns_per_msg"),
        params(
            &r,
            &[
                "jobs",
                "total_s",
                "completions_per_s",
                "late_p50_ms",
                "late_p99_ms",
                "late_max_ms",
                "peak_rss_mb",
            ],
        ),
    )])
}

/// The Pekko HTTP server under the same load as troupe's servers.
pub fn primes(
    settings: &primes::Settings,
    options: &RunOptions,
) -> Result<Vec<Row>, WorkloadError> {
    let server = Server::start(100_000)?;
    let mut r = primes::run_external(server.addr, "pekko", settings, options)?;
    drop(server);
    r.params.insert("runtime".into(), json!("pekko"));
    r.params.insert("peer_of".into(), json!("actor"));
    Ok(vec![r])
}

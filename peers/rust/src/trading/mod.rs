//! The trading system, the topology of troupe's in-process trading
//! experiment and of the Pekko peer (docs/experiments.md, trading), with
//! the log off: client actors with one order in flight each, ten stateless
//! receivers routing each order by its book's letter, ten matching engines
//! each a primary and a standby (the primary forwards every order to its
//! standby in its own processing order). request-reply: the primary
//! answers the client once the standby has acknowledged; one-way: primary
//! and standby each complete the client's token, the second tells the
//! client. The books are the `trading-engine` crate's, troupe's own.
//!
//! Checked after every run (warm-up runs too): every client finished and
//! answered exactly its orders (an answer for an order not in flight, a
//! doubled one, is counted and fails the run); the primaries processed
//! every order, made orders / 2 trades, rejected none and left none
//! resting (the seed scenario); every standby is its primary's replica
//! (counts, resting orders, per-book digests of processing order and
//! trades); no send was refused and no acknowledgement was stray. A run in
//! which no order was answered for `--stall-s` seconds (an order lost) ends
//! the row with a RESULT that says so.
//!
//! Arguments: `--variant request-reply|one-way --clients 10 --orders
//! 750000 --threads 2 --stall-s 5 --fault none|reorder-standby`
//! (`reorder-standby`: engine 0's standby swaps two orders of a book, to
//! show the check catches it). RESULT: `variant`, `txlog` (`off`),
//! `clients`, `threads`, `orders` (per run, whole loops per client),
//! `tps` (median run), the latency of every order of the measured runs
//! (`mean_us`, `p5_us` ... `p99_us`, `max_us`, `latency_samples`),
//! `trades`, `verified`, the protocol's fields.

mod actix;
mod kameo;
mod ractor;
mod shared;

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Map, Value};

use self::shared::{ClientReport, Summary, LOOP};
use crate::args::Args;
use crate::harness::{Check, Latch};
use crate::steady::{median, quantile, Steady};
use crate::Library;

/// How a client learns its order is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The primary answers once the standby has acknowledged.
    RequestReply,
    /// Both engines complete a token; the second tells the client.
    OneWay,
}

/// One run's shape.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The variant.
    pub variant: Variant,
    /// Client actors.
    pub clients: usize,
    /// Orders each client places, one at a time.
    pub per_client: usize,
    /// How long without a single answer means an order was lost.
    pub stall: Duration,
    /// Whether engine 0's standby reorders two orders (the fault).
    pub reorder_standby: bool,
}

impl Spec {
    /// Orders of the run.
    pub fn orders(&self) -> u64 {
        (self.clients * self.per_client) as u64
    }

    /// Whether engine `e`'s standby is the faulty one.
    pub fn reorders(&self, e: usize) -> bool {
        self.reorder_standby && e == 0
    }
}

/// What one run gives back for the checks.
pub struct Run {
    /// Wall time from the first Start sent to the last client done, in ns.
    pub elapsed_ns: f64,
    /// Per client, what it saw.
    pub clients: Vec<ClientReport>,
    /// Per engine, its primary's and its standby's summaries.
    pub engines: Vec<(Summary, Summary)>,
    /// Sends a library refused (an actor gone): each one an order lost.
    pub refused: u64,
}

/// One run of a library.
pub trait Runs {
    /// Runs `spec` once. `Err` when it cannot finish; a stall is
    /// [`Stalled`] in the message's place (see [`wait_for_clients`]).
    fn run(&mut self, spec: &Spec) -> Result<Run, String>;
}

/// The prefix of the error a run returns when it stalled.
const STALLED: &str = "stalled: ";

/// Waits until every client is done (`latch`), asking the clients how
/// many orders they have had answered (`answered`, through the library's
/// ask) whenever `stall` passes without it: the same count twice in a row
/// means an order was lost, and the run ends with an error starting with
/// [`STALLED`].
pub async fn wait_for_clients<F, Fut>(
    latch: &Latch,
    stall: Duration,
    orders: u64,
    mut answered: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u64, String>>,
{
    let mut last = None;
    loop {
        if tokio::time::timeout(stall, latch.wait("the clients"))
            .await
            .is_ok()
        {
            return Ok(());
        }
        let now = answered().await?;
        if last == Some(now) {
            return Err(format!(
                "{STALLED}{now} of {orders} orders answered, none for {} s: an order was lost",
                stall.as_secs_f64()
            ));
        }
        last = Some(now);
    }
}

/// Checks one run; returns the trades the primaries made.
fn check(spec: &Spec, run: &Run, checks: &mut Check) -> u64 {
    let orders = spec.orders();
    let answered: u64 = run
        .clients
        .iter()
        .map(|c| c.latencies_ns.len() as u64)
        .sum();
    let unexpected: u64 = run.clients.iter().map(|c| c.unexpected).sum();
    checks.that(answered == orders, || {
        format!("{answered} orders answered of {orders}")
    });
    checks.that(unexpected == 0, || {
        format!("{unexpected} answers for an order not in flight (an order answered twice)")
    });
    checks.that(run.refused == 0, || {
        format!("{} sends refused by the library", run.refused)
    });
    let sum = |f: &dyn Fn(&Summary) -> u64| run.engines.iter().map(|(p, _)| f(p)).sum::<u64>();
    let (processed, trades, resting) =
        (sum(&|s| s.orders), sum(&|s| s.trades), sum(&|s| s.resting));
    let rejected: u64 = run
        .engines
        .iter()
        .map(|(p, s)| p.rejected + s.rejected)
        .sum();
    let stray: u64 = run
        .engines
        .iter()
        .map(|(p, s)| p.stray_acks + s.stray_acks)
        .sum();
    checks.that(processed == orders, || {
        format!("the primaries processed {processed} orders of {orders}")
    });
    checks.that(trades == orders / 2, || {
        format!("{trades} trades, expected {}", orders / 2)
    });
    checks.that(resting == 0, || {
        format!("{resting} orders resting, expected 0")
    });
    checks.that(rejected == 0, || format!("{rejected} orders rejected"));
    checks.that(stray == 0, || {
        format!("{stray} standby acknowledgements stray or missing")
    });
    for (e, (primary, standby)) in run.engines.iter().enumerate() {
        if let Some(why) = primary.differs(standby) {
            checks.that(false, || format!("engine {e}: {why}"));
        }
    }
    trades
}

/// Runs on `library` and returns the RESULT.
pub fn run(library: Library, a: &Args) -> Result<Map<String, Value>, String> {
    let variant = match a.text("variant", "one-way") {
        "request-reply" => Variant::RequestReply,
        "one-way" => Variant::OneWay,
        other => return Err(format!("--variant {other}: request-reply or one-way")),
    };
    let reorder_standby = match a.text("fault", "none") {
        "none" => false,
        "reorder-standby" => true,
        other => return Err(format!("--fault {other}: none or reorder-standby")),
    };
    let clients = a.num("clients", 10)? as usize;
    let wanted = a.num("orders", 750_000)? as usize;
    // Whole loops per client, as troupe's scenario and the Pekko peer split them.
    let per_client = wanted / LOOP / clients.max(1) * LOOP;
    if clients == 0 || per_client == 0 {
        return Err(format!(
            "--orders {wanted} --clients {clients}: at least one client and one loop of {LOOP} orders per client"
        ));
    }
    let spec = Spec {
        variant,
        clients,
        per_client,
        stall: Duration::from_secs(a.num("stall-s", 5)?.max(1)),
        reorder_standby,
    };
    let threads = a.threads()?;
    let steady = Steady::from_args(a)?;
    let mut lib: Box<dyn Runs> = match library {
        Library::Kameo => Box::new(kameo::Runner::new(threads, clients)?),
        Library::Ractor => Box::new(ractor::Runner::new(threads)?),
        Library::Actix => Box::new(actix::Runner::new(threads)),
    };
    let mut checks = Check::default();
    let mut latencies: Vec<u64> = Vec::new();
    let mut trades = 0;
    let mut stalled: Option<(String, f64)> = None;
    let what = format!(
        "{} trading {} {clients} clients",
        library.name(),
        a.text("variant", "one-way")
    );
    let measured = steady.measure(&what, |measured| {
        let run = lib.run(&spec).inspect_err(|e| {
            if let Some(why) = e.strip_prefix(STALLED) {
                stalled = Some((why.to_string(), spec.stall.as_nanos() as f64));
            }
        })?;
        trades = check(&spec, &run, &mut checks);
        if measured {
            for c in &run.clients {
                latencies.extend_from_slice(&c.latencies_ns);
            }
        }
        Ok(run.elapsed_ns / spec.orders() as f64)
    });
    let orders = spec.orders();
    let mut json = Map::new();
    json.insert("experiment".into(), json!("trading"));
    json.insert("variant".into(), json!(a.text("variant", "one-way")));
    json.insert("txlog".into(), json!("off"));
    json.insert("clients".into(), json!(clients));
    json.insert("threads".into(), json!(threads));
    json.insert("orders".into(), json!(orders));
    if reorder_standby {
        json.insert("fault".into(), json!("reorder-standby"));
    }
    let measured = match measured {
        Ok(m) => m,
        Err(e) => {
            // A lost order: a failed row that says so, not a missing one.
            let Some((why, ns)) = stalled else {
                return Err(e);
            };
            json.insert("samples".into(), json!([ns / orders as f64]));
            json.insert("protocol".into(), json!("stopped at the stalled run"));
            json.insert("verified".into(), json!(false));
            json.insert("failure".into(), json!(why));
            return Ok(json);
        }
    };
    latencies.sort_unstable();
    let sorted: Vec<f64> = latencies.iter().map(|&ns| ns as f64 / 1e3).collect();
    let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
    json.insert("tps".into(), json!(1e9 / median(&measured.samples)));
    json.insert("mean_us".into(), json!(mean));
    for (key, q) in [
        ("p5_us", 0.05),
        ("p25_us", 0.25),
        ("p50_us", 0.5),
        ("p75_us", 0.75),
        ("p95_us", 0.95),
        ("p99_us", 0.99),
    ] {
        json.insert(key.into(), json!(quantile(&sorted, q)));
    }
    json.insert(
        "max_us".into(),
        json!(sorted.last().copied().unwrap_or(f64::NAN)),
    );
    json.insert("latency_samples".into(), json!(sorted.len()));
    json.insert("trades".into(), json!(trades));
    measured.write_json(&mut json, "");
    let failure = checks.failure();
    json.insert("verified".into(), json!(failure.is_none()));
    if let Some(f) = failure {
        json.insert("failure".into(), json!(f));
    }
    Ok(json)
}

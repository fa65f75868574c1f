//! Runtime metrics (feature `metrics`), through the `metrics` crate's
//! facade: whatever recorder the program installs (a Prometheus exporter,
//! say) receives them; with none installed they cost an atomic add each.
//!
//! # Names and labels
//!
//! Per actor *type* (label `actor`: the Rust type name of the actor), so
//! the number of series is bounded by the program's actor types, not by
//! its actors; per dispatcher where it matters (label `dispatcher`):
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `troupe_messages_handled_total` | counter | actor, dispatcher |
//! | `troupe_message_seconds` | histogram (handler time) | actor |
//! | `troupe_mailbox_depth` | histogram (queue length when a run starts) | actor |
//! | `troupe_actors` | gauge (live actor cells) | actor |
//! | `troupe_actor_starts_total`, `_restarts_total`, `_stops_total` | counter | actor |
//! | `troupe_dead_letters_total` | counter | reason |
//! | `troupe_ask_timeouts_total` | counter | |
//! | `troupe_scheduler_timers_pending` | gauge | |
//! | `troupe_dispatcher_runs_total`, `_steals_total`, `_migrations_total`, `_parks_total`, `_wakeups_total` | counter (absolute) | dispatcher, worker |
//!
//! `docs/operations.md` says what each one means and which to alert on.
//!
//! The handles of an actor's metrics are looked up once, when it is
//! spawned, and kept in its cell (one pointer), so handling a message does
//! no registry lookup: two clock reads, a counter add and a histogram
//! record.

use std::time::Instant;

use metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};

use crate::ids::DeadLetterReason;

/// The metric handles of one actor.
pub(crate) struct CellMetrics {
    handled: Counter,
    seconds: Histogram,
    depth: Histogram,
    live: Gauge,
    starts: Counter,
    restarts: Counter,
    stops: Counter,
}

impl CellMetrics {
    /// Registers (or finds) the series of an actor of type `actor` on
    /// `dispatcher`, and counts the actor as live.
    pub(crate) fn new(actor: &'static str, dispatcher: &str) -> Box<Self> {
        let live = gauge!("troupe_actors", "actor" => actor);
        live.increment(1.0);
        Box::new(CellMetrics {
            handled: counter!(
                "troupe_messages_handled_total",
                "actor" => actor,
                "dispatcher" => dispatcher.to_string()
            ),
            seconds: histogram!("troupe_message_seconds", "actor" => actor),
            depth: histogram!("troupe_mailbox_depth", "actor" => actor),
            live,
            starts: counter!("troupe_actor_starts_total", "actor" => actor),
            restarts: counter!("troupe_actor_restarts_total", "actor" => actor),
            stops: counter!("troupe_actor_stops_total", "actor" => actor),
        })
    }

    /// A message was handled, starting at `started`.
    #[inline]
    pub(crate) fn handled(&self, started: Instant) {
        self.seconds.record(started.elapsed().as_secs_f64());
        self.handled.increment(1);
    }

    /// A run starts with `queued` user messages waiting.
    #[inline]
    pub(crate) fn run_starts(&self, queued: usize) {
        self.depth.record(queued as f64);
    }

    pub(crate) fn started(&self) {
        self.starts.increment(1);
    }

    pub(crate) fn restarted(&self) {
        self.restarts.increment(1);
    }

    pub(crate) fn stopped(&self) {
        self.stops.increment(1);
    }
}

impl Drop for CellMetrics {
    fn drop(&mut self) {
        self.live.decrement(1.0);
    }
}

/// A dead letter, by reason.
pub(crate) fn dead_letter(reason: DeadLetterReason) {
    let reason = match reason {
        DeadLetterReason::RecipientStopped => "recipient_stopped",
        DeadLetterReason::MailboxFull => "mailbox_full",
    };
    counter!("troupe_dead_letters_total", "reason" => reason).increment(1);
}

/// An ask failed with a timeout (counted when the asker takes the answer).
pub(crate) fn ask_timed_out() {
    counter!("troupe_ask_timeouts_total").increment(1);
}

/// The scheduler's pending entries, as the driver last saw them.
pub(crate) fn timers_pending(n: usize) {
    gauge!("troupe_scheduler_timers_pending").set(n as f64);
}

/// One pool worker's counters (see `dispatch/pool.rs`, which fills them
/// in from its `DispatcherStats`: this module sits below the dispatchers).
pub(crate) struct WorkerCounts {
    pub(crate) runs: u64,
    pub(crate) messages: u64,
    pub(crate) steals: u64,
    pub(crate) migrations: u64,
    pub(crate) parks: u64,
    pub(crate) wakeups: u64,
}

/// One pool worker's counters, published as absolute values: by the
/// worker itself every 65,536 runs and when it parks, so a scrape lags a
/// busy worker by at most that many runs.
pub(crate) fn dispatcher_worker(dispatcher: &str, worker: usize, counts: WorkerCounts) {
    let labels = [
        ("dispatcher", dispatcher.to_string()),
        ("worker", worker.to_string()),
    ];
    for (name, value) in [
        ("troupe_dispatcher_runs_total", counts.runs),
        ("troupe_dispatcher_messages_total", counts.messages),
        ("troupe_dispatcher_steals_total", counts.steals),
        ("troupe_dispatcher_migrations_total", counts.migrations),
        ("troupe_dispatcher_parks_total", counts.parks),
        ("troupe_dispatcher_wakeups_total", counts.wakeups),
    ] {
        counter!(name, &labels).absolute(value);
    }
}

/// Publishes a pool governor's counts (adaptive stealing): trials of the
/// other way of stealing, and microseconds spent spreading work.
pub(crate) fn dispatcher_governor(dispatcher: &str, probes: u64, spread_us: u64) {
    let labels = [("dispatcher", dispatcher.to_string())];
    counter!("troupe_dispatcher_probes_total", &labels).absolute(probes);
    counter!("troupe_dispatcher_spread_us_total", &labels).absolute(spread_us);
}

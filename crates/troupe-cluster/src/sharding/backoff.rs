//! Restarting an entity whose activation failed: after a backoff, with
//! the messages that arrive meanwhile held, and refused once it has failed
//! too often in a row.
//!
//! Why: an entity's activation can fail for a reason that lasts (a
//! persistent entity whose journal holds a record it cannot decode, a
//! journal server that cannot be reached). Started again at once on the
//! next message, it fails again at once: each attempt of a persistent
//! entity writes a fence record before it replays, and drops the commands
//! it had stashed, so a stream of messages became a stream of fence
//! records (tens of thousands for a thousand entities). So the shard
//! remembers the failure and waits before the next attempt
//! ([`EntityBackoff`]), doubling the wait on each failure in a row; the
//! messages that arrive meanwhile wait in the shard (at most
//! `max_held` per entity, the excess refused). After `max_failures`
//! failures in a row it stops trying for `max`: what it held, and every
//! message that arrives until then, is refused with the last failure's
//! reason (counted in `RegionStats::refused`, logged, an ask in it
//! answered with `AskError::Refused`). The attempt after that is one
//! attempt again; its failure refuses again.
//!
//! What counts as a failed activation ([`Activation`]): one that reported
//! a failure through its [`EntityContext`](super::EntityContext) (a
//! persistent entity's journal failure: `sharding/persistent.rs` reports
//! it), one that stopped while it was still recovering, or one that its
//! supervisor stopped after a panic. An entity stopped on purpose (by
//! passivation, by the shard, or by itself after it had recovered) is
//! not backed off.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::settings::EntityBackoff;
use super::Counters;

/// What an activation has said of itself, shared by the shard and the
/// activation (through its `EntityContext`).
#[derive(Clone, Default)]
pub(crate) struct Activation(Arc<Shared>);

#[derive(Default)]
struct Shared {
    outcome: Mutex<Outcome>,
    /// `outcome.failed` is set: read by the shard on every message it
    /// hands the activation, so without the lock.
    failed: AtomicBool,
}

#[derive(Default, Clone, Debug)]
pub(crate) struct Outcome {
    /// It began a recovery that it has not finished.
    pub(crate) recovering: bool,
    /// It finished its recovery (or said it works): a failure after it is
    /// the first in a row.
    pub(crate) recovered: bool,
    /// Why it failed (the first reason reported).
    pub(crate) failed: Option<String>,
}

impl Activation {
    fn with(&self, f: impl FnOnce(&mut Outcome)) {
        f(&mut self.0.outcome.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub(crate) fn recovering(&self) {
        self.with(|o| o.recovering = true);
    }

    pub(crate) fn recovered(&self) {
        self.with(|o| {
            o.recovering = false;
            o.recovered = true;
        });
    }

    pub(crate) fn failed(&self, reason: String) {
        self.with(|o| {
            o.failed.get_or_insert(reason);
        });
        self.0.failed.store(true, Ordering::Release);
    }

    /// Whether it reported a failure: it is about to stop, and is handed
    /// no more messages.
    pub(crate) fn has_failed(&self) -> bool {
        self.0.failed.load(Ordering::Acquire)
    }

    /// How it ended: `Some(reason)` if it failed. `on_purpose`: the shard
    /// stopped it (a stop during recovery is then no failure).
    pub(crate) fn ended(&self, on_purpose: bool) -> Ended {
        let o = self
            .0
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match o.failed {
            Some(reason) => Ended::Failed {
                reason,
                recovered: o.recovered,
            },
            None if o.recovering && !on_purpose => Ended::Failed {
                reason: "it stopped before its recovery finished \
                         (the persistence failure is in the log)"
                    .into(),
                recovered: false,
            },
            None => Ended::Fine,
        }
    }
}

impl std::fmt::Debug for Activation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = self.0.outcome.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_tuple("Activation").field(&*o).finish()
    }
}

/// How an activation ended.
pub(crate) enum Ended {
    Fine,
    Failed { reason: String, recovered: bool },
}

/// An entity whose last activation failed (kept by its shard until one
/// ends well).
pub(crate) struct Failing<Msg> {
    /// Failures in a row.
    pub(crate) failures: u32,
    /// The last one's reason.
    pub(crate) reason: String,
    /// No activation before this.
    pub(crate) retry_at: Instant,
    /// Given up until `retry_at`: messages are refused, not held.
    pub(crate) refusing: bool,
    /// Messages for the next activation, in arrival order.
    pub(crate) held: VecDeque<Msg>,
    /// Names the timer that ends this wait (an older one is ignored).
    pub(crate) generation: u64,
}

impl EntityBackoff {
    /// The wait after the `failures`-th failure in a row: `min` doubled
    /// for each earlier one, at most `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.min
            .saturating_mul(1u32 << doublings)
            .min(self.max.max(self.min))
    }
}

/// Refuses `msg` for entity `id` of `type_name`, whose activations keep
/// failing: counts it (`RegionStats::refused`), logs it (the first and
/// then every power of two) and answers every ask in it with `reason`.
pub(crate) fn refuse_failing<M: Serialize>(
    type_name: &str,
    counters: &Counters,
    id: &str,
    reason: &str,
    msg: M,
) {
    let n = counters.refused_failing.fetch_add(1, Ordering::Relaxed) + 1;
    counters.refused.fetch_add(1, Ordering::Relaxed);
    let answered = super::ids::answer_asks(&msg, reason);
    drop(msg);
    if n.is_power_of_two() {
        tracing::warn!(
            region = %type_name,
            entity = %id,
            refused = n,
            asks_answered = answered,
            "sharding: a message for an entity whose activations keep failing was refused: {reason}"
        );
    } else {
        tracing::debug!(region = %type_name, entity = %id, "sharding: refused: {reason}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_up_to_its_cap() {
        let b = EntityBackoff {
            min: Duration::from_millis(100),
            max: Duration::from_secs(10),
            max_failures: 5,
            max_held: 10,
        };
        let ms: Vec<u128> = (1..=9).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
        assert_eq!(b.delay(1_000), Duration::from_secs(10));
    }

    #[test]
    fn a_stop_during_recovery_is_a_failure_unless_the_shard_asked() {
        let a = Activation::default();
        assert!(matches!(a.ended(false), Ended::Fine));
        a.recovering();
        assert!(matches!(a.ended(true), Ended::Fine));
        assert!(matches!(
            a.ended(false),
            Ended::Failed {
                recovered: false,
                ..
            }
        ));
        a.recovered();
        assert!(matches!(a.ended(false), Ended::Fine));
        a.failed("journal down".into());
        a.failed("later".into());
        match a.ended(true) {
            Ended::Failed { reason, recovered } => {
                assert_eq!(reason, "journal down");
                assert!(recovered);
            }
            Ended::Fine => panic!("a reported failure"),
        }
    }
}

//! How the node's writer batches frames into NATS messages: when it may
//! wait for company ([`Linger`]), and what it made (counters kept by the
//! writer, read as a [`BatchStats`] by
//! [`Node::batch_stats`](crate::Node::batch_stats)).
//!
//! Each NATS message the writer publishes with frames adds one to the
//! bucket of its frame count (powers of two), so the distribution costs
//! two relaxed atomic adds per message and no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Traffic is dense when the writer's last message went out less than
/// this many lingers ago: only then may a frame wait for company.
const DENSE: u32 = 8;

/// After a linger that gathered nothing, the messages sent at once
/// before the writer tries lingering again.
const BACKOFF: u32 = 8;

/// The writer's rule for waiting for company (`RemoteConfig::batch_linger`):
/// a frame may wait up to `linger` when traffic is dense (the last message
/// went out less than [`DENSE`] lingers ago), unless a recent linger found
/// nobody. So a lone frame after a quiet spell goes at once, a burst is
/// packed behind its first frame, and strictly one-at-a-time traffic
/// pays a linger once in [`BACKOFF`] + 1 messages at most. The writer
/// spins while it lingers (it yields to the runtime's other tasks, never
/// sleeps): a linger is meant to be microseconds.
pub(crate) struct Linger {
    linger: Duration,
    last_sent: Option<Instant>,
    /// Messages still to send without lingering.
    skip: u32,
}

impl Linger {
    pub(crate) fn new(linger: Duration) -> Linger {
        Linger {
            linger,
            last_sent: None,
            skip: 0,
        }
    }

    /// How long the frame taken at `now` may wait for company (zero: not
    /// at all).
    pub(crate) fn wait(&self, now: Instant) -> Duration {
        let dense = self.last_sent.is_some_and(|at| {
            now.saturating_duration_since(at) < self.linger.saturating_mul(DENSE)
        });
        if dense && self.skip == 0 {
            self.linger
        } else {
            Duration::ZERO
        }
    }

    /// Records a message sent at `now`; `found_nobody`: the writer
    /// lingered for it and no frame came while it did.
    pub(crate) fn sent(&mut self, now: Instant, found_nobody: bool) {
        if found_nobody {
            self.skip = BACKOFF;
        } else {
            self.skip = self.skip.saturating_sub(1);
        }
        self.last_sent = Some(now);
    }
}

/// Buckets of [`BatchStats::buckets`]: 1, 2-3, 4-7, ..., 256-511, 512 and
/// more frames.
const BUCKETS: usize = 10;

/// The writer's counters (shared with the node's readers).
#[derive(Default)]
pub(crate) struct BatchCounters {
    frames: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl BatchCounters {
    /// Counts one message of `frames` frames (at least 1) the NATS client
    /// took.
    pub(crate) fn record(&self, frames: usize) {
        self.frames.fetch_add(frames as u64, Ordering::Relaxed);
        self.buckets[bucket(frames)].fetch_add(1, Ordering::Relaxed);
    }

    /// What was counted so far.
    pub(crate) fn snapshot(&self) -> BatchStats {
        BatchStats {
            frames: self.frames.load(Ordering::Relaxed),
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
        }
    }
}

/// The bucket of a message of `frames` frames: floor(log2), capped.
fn bucket(frames: usize) -> usize {
    (frames.max(1).ilog2() as usize).min(BUCKETS - 1)
}

/// How a node's frames went out: how many NATS messages the NATS client
/// took from the node's writer carried how many frames (a tell, an ask or
/// an answer is one frame). Counted since the
/// node started; [`since`](BatchStats::since) gives the part of one run.
///
/// ```
/// use troupe_remote::BatchStats;
///
/// let stats = BatchStats { frames: 41, buckets: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0] };
/// assert_eq!(stats.messages(), 2);
/// assert_eq!(stats.mean(), 20.5);
/// // Half the messages had 1 frame, the other half 32 to 63.
/// assert_eq!(stats.percentile(0.5), 1);
/// assert_eq!(stats.percentile(0.9), 32);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Frames published.
    pub frames: u64,
    /// Messages by frame count: bucket `i` counts the messages of
    /// `2^i` to `2^(i+1) - 1` frames; the last bucket, all bigger ones.
    pub buckets: [u64; BUCKETS],
}

impl BatchStats {
    /// How many buckets [`buckets`](BatchStats::buckets) has.
    pub const BUCKETS: usize = BUCKETS;

    /// NATS messages published with frames.
    pub fn messages(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Frames per message on average (0 before the first).
    pub fn mean(&self) -> f64 {
        match self.messages() {
            0 => 0.0,
            messages => self.frames as f64 / messages as f64,
        }
    }

    /// The smallest frame count of the bucket that holds the `q` quantile
    /// of the messages (`q` in 0..=1); 0 before the first message.
    pub fn percentile(&self, q: f64) -> u64 {
        let messages = self.messages();
        if messages == 0 {
            return 0;
        }
        let rank = ((messages as f64 * q.clamp(0.0, 1.0)).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return 1 << i;
            }
        }
        1 << (BUCKETS - 1)
    }

    /// What was counted after `earlier` (a snapshot of the same node).
    pub fn since(&self, earlier: &BatchStats) -> BatchStats {
        BatchStats {
            frames: self.frames.saturating_sub(earlier.frames),
            buckets: std::array::from_fn(|i| self.buckets[i].saturating_sub(earlier.buckets[i])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINGER: Duration = Duration::from_micros(5);

    #[test]
    fn a_frame_after_a_quiet_spell_goes_at_once() {
        let start = Instant::now();
        let mut linger = Linger::new(LINGER);
        assert_eq!(linger.wait(start), Duration::ZERO, "nothing sent yet");
        linger.sent(start, false);
        let quiet = start + LINGER * DENSE;
        assert_eq!(linger.wait(quiet), Duration::ZERO);
        assert_eq!(linger.wait(quiet - LINGER), LINGER, "dense traffic lingers");
    }

    #[test]
    fn a_linger_that_finds_nobody_backs_off() {
        let mut now = Instant::now();
        let mut linger = Linger::new(LINGER);
        linger.sent(now, false);
        now += LINGER;
        assert_eq!(linger.wait(now), LINGER);
        linger.sent(now, true);
        for _ in 0..BACKOFF {
            now += LINGER;
            assert_eq!(linger.wait(now), Duration::ZERO, "backing off");
            linger.sent(now, false);
        }
        now += LINGER;
        assert_eq!(linger.wait(now), LINGER, "tries again");
        linger.sent(now, false);
        now += LINGER;
        assert_eq!(
            linger.wait(now),
            LINGER,
            "a linger that found company goes on"
        );
    }

    #[test]
    fn zero_never_lingers() {
        let now = Instant::now();
        let mut linger = Linger::new(Duration::ZERO);
        linger.sent(now, false);
        assert_eq!(linger.wait(now), Duration::ZERO);
        // No overflow for the longest linger there is.
        let mut longest = Linger::new(Duration::MAX);
        longest.sent(now, false);
        assert_eq!(longest.wait(now), Duration::MAX);
    }

    #[test]
    fn messages_fall_in_power_of_two_buckets() {
        let counters = BatchCounters::default();
        for frames in [1, 2, 3, 4, 7, 8, 511, 512, 5000] {
            counters.record(frames);
        }
        let stats = counters.snapshot();
        assert_eq!(stats.buckets, [1, 2, 2, 1, 0, 0, 0, 0, 1, 2]);
        assert_eq!(stats.frames, 1 + 2 + 3 + 4 + 7 + 8 + 511 + 512 + 5000);
        assert_eq!(stats.messages(), 9);
    }

    #[test]
    fn since_subtracts_an_earlier_snapshot() {
        let counters = BatchCounters::default();
        counters.record(1);
        let before = counters.snapshot();
        counters.record(16);
        counters.record(20);
        let run = counters.snapshot().since(&before);
        assert_eq!(run.messages(), 2);
        assert_eq!(run.frames, 36);
        assert_eq!(run.percentile(0.5), 16);
        assert_eq!(BatchStats::default().percentile(0.5), 0);
        assert_eq!(BatchStats::default().mean(), 0.0);
    }
}

//! [`Stealing`]: when an idle pool worker takes actors from another
//! worker's queue. A setting of the pool (`pool.rs`, `governor.rs`), which
//! the configuration (`system/config.rs`) reads and users see as
//! `troupe::Stealing`.

use std::fmt;

/// When an idle pool worker takes actors from another worker's queue.
///
/// A second worker pays only when the work is parallel enough to beat the
/// cost of moving actors between CPUs: a cache-line transfer for every line
/// an actor touches, a few hundred nanoseconds on some machines, more than
/// a small handler takes. No static rule knows that in advance, so the
/// default measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stealing {
    /// Measured (the default): the pool starts locality first (as
    /// [`Late`](Stealing::Late)), and a governor thread compares, now and
    /// then, the messages the pool handles per millisecond that way and
    /// with eager stealing, a few milliseconds each (before, during and
    /// after the trial), and keeps eager stealing only while it handles at
    /// least 10% more and (on Linux, where it reads the workers' CPU time)
    /// the CPU it adds does at least half of what a CPU does locally, so a
    /// second core is not burnt for a few percent. Light load, which one worker keeps up with, stays
    /// local. Trials grow rarer (up to one a second) while they confirm the
    /// current way. [`DispatcherStats::probes`](crate::DispatcherStats::probes)
    /// and [`spread_us`](crate::DispatcherStats::spread_us) say what it chose.
    #[default]
    Adaptive,
    /// At once: a task displaced into a worker's queue wakes an idle
    /// worker, which takes it (classic work stealing). Spreads every bit of
    /// parallelism, at the price of actors moving between CPUs every few
    /// messages when they talk to each other (on chameneos, two workers in
    /// a host's slow cross-CPU mode were 5x slower than one).
    Eager,
    /// Late, locality first: one idle worker watches the others' queues
    /// and takes half of one only when its tasks would wait longer than a
    /// grace period of about 50 us (the owner is stuck in a long handler,
    /// or its queue holds more than it ran in the last period). One awake
    /// worker, the home, takes the work sent from outside the pool, and a
    /// worker that helped a home that fell behind hands its work back once
    /// the home keeps up. Actors that message each other stay on one CPU;
    /// work that is parallel but made of many small messages (the trading
    /// system's ten clients) is not spread. See `docs/semantics.md`,
    /// "Where an actor runs".
    Late,
}

impl std::str::FromStr for Stealing {
    type Err = String;

    /// `"adaptive"`, `"eager"` or `"late"`, as the TOML format spells them.
    ///
    /// ```
    /// use troupe::Stealing;
    /// assert_eq!("late".parse(), Ok(Stealing::Late));
    /// assert!("lazy".parse::<Stealing>().unwrap_err().contains("\"adaptive\""));
    /// ```
    fn from_str(s: &str) -> Result<Stealing, String> {
        match s {
            "adaptive" => Ok(Stealing::Adaptive),
            "eager" => Ok(Stealing::Eager),
            "late" => Ok(Stealing::Late),
            other => Err(format!(
                "stealing must be \"adaptive\", \"eager\" or \"late\", not {other:?}"
            )),
        }
    }
}

impl fmt::Display for Stealing {
    /// The name [`FromStr`](std::str::FromStr) reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stealing::Adaptive => "adaptive",
            Stealing::Eager => "eager",
            Stealing::Late => "late",
        })
    }
}

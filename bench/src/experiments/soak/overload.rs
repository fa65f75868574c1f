//! The soak's overload workload: a producer faster than its consumer, held
//! back by a bounded mailbox, and asks that must time out cleanly.
//!
//! - A consumer with a mailbox of [`CAPACITY`] (`Overflow::Fail`) handles
//!   messages slowly: it sleeps a millisecond every 50 messages, about
//!   50,000 a second at little CPU cost (a slow consumer, not a busy one).
//! - A producer thread sends as fast as `send_blocking` lets it: without the
//!   bound the queue, and the process, would grow by millions of messages a
//!   minute; with it, memory stays flat, which the soak's RSS series shows.
//! - An asker sends a `Count` request every 100 ms with a 5 ms timeout. The
//!   mailbox is full nearly all the time, so most asks are refused at once
//!   (`AskError::MailboxFull`); one that finds room waits behind up to a
//!   thousand messages (about 20 ms of work) and times out
//!   (`AskError::Timeout`). Either is a clear answer; an ask that hangs or
//!   fails any other way is a failure of the run.
//!
//! At the end a last ask with a long timeout flushes the queue: its answer
//! must equal the number of messages sent (nothing lost), and afterwards
//! no ask may still be pending in the system (nothing leaked).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use troupe::prelude::*;
use troupe::{AskError, MailboxConfig, Overflow, SendError};

use crate::runner::WorkloadError;

/// The consumer's mailbox capacity.
pub const CAPACITY: usize = 1_000;

enum Slow {
    Work,
    Count(ReplyTo<u64>),
}

struct Consumer {
    handled: u64,
}

impl Actor for Consumer {
    type Msg = Slow;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: Slow) {
        match msg {
            Slow::Work => {
                self.handled += 1;
                // The consumer is slow by design; it has a system of its own,
                // so this blocks no other workload's dispatcher.
                if self.handled.is_multiple_of(50) {
                    thread::sleep(Duration::from_millis(1));
                }
            }
            Slow::Count(reply) => {
                reply.reply(self.handled);
            }
        }
    }
}

/// What the overload workload counted so far.
#[derive(Default)]
struct Counts {
    /// Messages the producer got into the mailbox.
    pub sent: AtomicU64,
    /// `send_blocking` calls that found no room within a second.
    pub send_timeouts: AtomicU64,
    /// Asks answered within their 5 ms.
    pub asks_answered: AtomicU64,
    /// Asks that failed with `AskError::Timeout`, as they may.
    pub asks_timed_out: AtomicU64,
    /// Asks refused at once by the full mailbox, as they may.
    pub asks_refused: AtomicU64,
    /// Asks that failed any other way (a bug).
    pub asks_failed: AtomicU64,
}

/// The counts at one moment.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    /// Messages the producer got into the mailbox.
    pub sent: u64,
    /// `send_blocking` calls that found no room within a second.
    pub send_timeouts: u64,
    /// Asks answered within their 5 ms.
    pub asks_answered: u64,
    /// Asks that failed with `AskError::Timeout`, as they may.
    pub asks_timed_out: u64,
    /// Asks refused at once by the full mailbox, as they may.
    pub asks_refused: u64,
    /// Asks that failed any other way (a bug).
    pub asks_failed: u64,
}

/// The running workload.
pub struct Overload {
    system: ActorSystem,
    consumer: ActorRef<Slow>,
    counts: Arc<Counts>,
    threads: Vec<JoinHandle<()>>,
}

impl Overload {
    /// Starts the consumer, the producer and the asker; they run until
    /// `stop` is set.
    pub fn start(stop: &Arc<AtomicBool>) -> Result<Self, WorkloadError> {
        let err = |e: &dyn std::fmt::Display| WorkloadError::new(format!("overload: {e}"));
        let system = ActorSystem::builder()
            .name("soak-overload")
            .threads(1)
            .build()
            .map_err(|e| err(&e))?;
        let consumer = system
            .spawn(
                Props::new(|| Consumer { handled: 0 })
                    .mailbox(MailboxConfig::bounded(CAPACITY, Overflow::Fail)),
            )
            .map_err(|e| err(&e))?;
        let counts = Arc::new(Counts::default());
        let producer = {
            let (consumer, counts, stop) = (consumer.clone(), counts.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match consumer.send_blocking(Slow::Work, Duration::from_secs(1)) {
                        Ok(()) => counts.sent.fetch_add(1, Ordering::Relaxed),
                        Err(SendError::Timeout(_)) => {
                            counts.send_timeouts.fetch_add(1, Ordering::Relaxed)
                        }
                        Err(SendError::Closed(_)) => return,
                    };
                }
            })
        };
        let asker = {
            let (consumer, counts, stop) = (consumer.clone(), counts.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let answer = consumer.ask(Slow::Count, Duration::from_millis(5)).wait();
                    let counter = match answer {
                        Ok(_) => &counts.asks_answered,
                        Err(AskError::Timeout { .. }) => &counts.asks_timed_out,
                        Err(AskError::MailboxFull { .. }) => &counts.asks_refused,
                        Err(_) => &counts.asks_failed,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    // A pace, not a wait for an outcome.
                    thread::sleep(Duration::from_millis(100));
                }
            })
        };
        Ok(Overload {
            system,
            consumer,
            counts,
            threads: vec![producer, asker],
        })
    }

    /// The counts so far.
    pub fn snapshot(&self) -> Snapshot {
        let c = &*self.counts;
        Snapshot {
            sent: c.sent.load(Ordering::Relaxed),
            send_timeouts: c.send_timeouts.load(Ordering::Relaxed),
            asks_answered: c.asks_answered.load(Ordering::Relaxed),
            asks_timed_out: c.asks_timed_out.load(Ordering::Relaxed),
            asks_refused: c.asks_refused.load(Ordering::Relaxed),
            asks_failed: c.asks_failed.load(Ordering::Relaxed),
        }
    }

    /// After `stop` was set: joins the threads, flushes the queue, checks
    /// that every message sent was handled and that no ask is left pending,
    /// and shuts the system down. Returns the messages handled.
    pub fn finish(self) -> Result<u64, WorkloadError> {
        // A producer or asker that panicked would otherwise pass as a quiet one.
        let panicked = self
            .threads
            .into_iter()
            .map(|thread| thread.join())
            .filter(Result::is_err)
            .count();
        let sent = self.counts.sent.load(Ordering::Relaxed);
        // The queue holds at most CAPACITY messages of about 20 µs each.
        let handled = self
            .consumer
            .ask(Slow::Count, Duration::from_secs(30))
            .wait()
            .map_err(|e| WorkloadError::new(format!("overload: the final count failed: {e}")))?;
        drop(self.consumer);
        self.system.shutdown();
        self.system
            .await_termination()
            .map_err(|e| WorkloadError::new(format!("overload: {e}")))?;
        // Read after termination: a replier lets go of its promise only
        // after the answer is out, so a count taken earlier can race it.
        let pending = self.system.pending_asks();
        if panicked > 0 {
            return Err(WorkloadError::new(format!(
                "overload: {panicked} workload threads panicked"
            )));
        }
        if handled != sent {
            return Err(WorkloadError::new(format!(
                "overload: {sent} messages sent but {handled} handled"
            )));
        }
        if pending != 0 {
            return Err(WorkloadError::new(format!(
                "overload: {pending} asks still pending after the queue was flushed"
            )));
        }
        Ok(handled)
    }
}

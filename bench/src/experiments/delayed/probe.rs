//! One run of the delayed-messages experiment, in a fresh process: the
//! parent starts `troupe-bench delayed-probe ...` ([`run_child`]) and the
//! child runs [`run_here`] and prints its [`Outcome`] as JSON on stdout.

use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use troupe::prelude::*;
use troupe::{DispatcherConfig, MailboxConfig, Overflow, Router, Routing, Scheduler};

use super::Settings;
use crate::rss;
use crate::runner::WorkloadError;
use crate::shared::SystemGuard;

/// The instant all times of a run are measured from (one run per process).
static BASE: OnceLock<Instant> = OnceLock::new();

fn since_base_ns() -> u64 {
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// What one run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// Jobs completed (validated: every job exactly once).
    pub jobs: u64,
    /// From the first job sent to the last reply counted.
    pub total_s: f64,
    /// How late the replies reached the manager after their due time
    /// (timer firing plus delivery), p50: the figure compared with Pekko,
    /// which measures the same.
    pub arrival_p50_ms: f64,
    /// 99th percentile of the arrival lateness.
    pub arrival_p99_ms: f64,
    /// Largest arrival lateness.
    pub arrival_max_ms: f64,
    /// How late the replies' timers fired after their due time, p50 (the
    /// scheduler alone, without the delivery to the manager).
    pub fired_p50_ms: f64,
    /// 99th percentile of the firing lateness.
    pub fired_p99_ms: f64,
    /// Largest firing lateness.
    pub fired_max_ms: f64,
    /// Peak resident memory of the process.
    pub peak_rss_mb: f64,
    /// Resident growth per in-flight job at the sample with most in flight.
    pub bytes_per_job: f64,
    /// Most jobs sent but not yet completed at one sample.
    pub max_in_flight: u64,
    /// `(seconds, sent, completed, rss_mb)` every 50 ms.
    pub timeline: Vec<(f64, u64, u64, f64)>,
}

/// Runs one measurement of `variant` in a child process.
pub fn run_child(variant: &str, sizes: &Settings) -> Result<Outcome, WorkloadError> {
    let args = [
        "delayed-probe",
        "--variant",
        variant,
        "--jobs",
        &sizes.jobs.to_string(),
        "--workers",
        &sizes.workers.to_string(),
        "--capacity",
        &sizes.capacity.to_string(),
        "--delay-ms",
        &sizes.delay.as_millis().to_string(),
    ]
    .map(String::from);
    crate::child::probe("probe", &args)
}

/// Counters shared with the sampler thread.
struct Counters {
    sent: AtomicU64,
    completed: AtomicU64,
    stop: AtomicBool,
}

impl Counters {
    /// Fresh counters, the resident memory before the run, and the base
    /// instant all times of the run are measured from.
    fn start() -> (Arc<Counters>, u64, Instant) {
        let counters = Arc::new(Counters {
            sent: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let rss_start = rss::current_rss_bytes().unwrap_or(0);
        (counters, rss_start, *BASE.get_or_init(Instant::now))
    }
}

/// Samples `(t, sent, completed, rss)` every 50 ms until told to stop.
fn start_sampler(
    counters: Arc<Counters>,
    start: Instant,
) -> thread::JoinHandle<Vec<(f64, u64, u64, f64)>> {
    thread::spawn(move || {
        let mut timeline = Vec::new();
        while !counters.stop.load(Ordering::Acquire) {
            let rss = rss::current_rss_bytes().unwrap_or(0) as f64 / 1e6;
            timeline.push((
                start.elapsed().as_secs_f64(),
                counters.sent.load(Ordering::Relaxed),
                counters.completed.load(Ordering::Relaxed),
                rss,
            ));
            // The sampler is a clock for the timeline, not a wait for an
            // outcome: it sleeps between samples by design.
            thread::sleep(Duration::from_millis(50));
        }
        timeline
    })
}

/// Prints a progress line every 5% of completions.
struct Reporter {
    total: u64,
    next: u64,
    start: Instant,
    enabled: bool,
}

impl Reporter {
    fn new(total: u64, start: Instant) -> Self {
        Reporter {
            total,
            next: (total / 20).max(1),
            start,
            enabled: io::stderr().is_terminal()
                || std::env::var_os("TROUPE_BENCH_PROGRESS").is_some(),
        }
    }

    fn completed(&mut self, done: u64) {
        if done >= self.next {
            if self.enabled {
                eprintln!(
                    "  {:>3}% {done}/{} after {:.2} s, rss {:.0} MB",
                    done * 100 / self.total,
                    self.total,
                    self.start.elapsed().as_secs_f64(),
                    rss::current_rss_bytes().unwrap_or(0) as f64 / 1e6
                );
            }
            self.next += (self.total / 20).max(1);
        }
    }
}

/// The result of counting: lateness histogram and completion check.
struct Tally {
    /// How late each reply's timer fired.
    lateness_us: Histogram<u64>,
    /// How late each reply reached the manager (firing plus delivery).
    arrival_us: Histogram<u64>,
    seen: Vec<u64>,
    duplicates: u64,
    count: u64,
}

impl Tally {
    fn new(jobs: u64) -> Self {
        Tally {
            lateness_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            arrival_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            seen: vec![0; jobs.div_ceil(64) as usize],
            duplicates: 0,
            count: 0,
        }
    }

    fn record(&mut self, job: u64, late: Duration, arrival: Duration) {
        let (word, bit) = ((job / 64) as usize, job % 64);
        if self.seen[word] & (1 << bit) != 0 {
            self.duplicates += 1;
        }
        self.seen[word] |= 1 << bit;
        self.count += 1;
        let _ = self.lateness_us.record((late.as_micros() as u64).max(1));
        let _ = self.arrival_us.record((arrival.as_micros() as u64).max(1));
    }

    fn validate(&self, jobs: u64) -> Result<(), WorkloadError> {
        if self.duplicates > 0 {
            return Err(WorkloadError::new(format!(
                "validation failed: {} jobs completed twice",
                self.duplicates
            )));
        }
        let distinct: u64 = self.seen.iter().map(|w| w.count_ones() as u64).sum();
        if distinct != jobs || self.count != jobs {
            return Err(WorkloadError::new(format!(
                "validation failed: {distinct} distinct jobs of {jobs} completed"
            )));
        }
        Ok(())
    }
}

enum WorkerMsg {
    Job(u64),
}

/// Answers each job with a reply to the manager, scheduled `delay` later.
struct Worker {
    manager: ActorRef<ManagerMsg>,
    scheduler: Scheduler,
    delay: Duration,
    base: Instant,
}

impl Actor for Worker {
    type Msg = WorkerMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: WorkerMsg) {
        let WorkerMsg::Job(job) = msg;
        let due_ns = (Instant::now() + self.delay - self.base).as_nanos() as u64;
        // The firing time is measured against the process-wide base, so the
        // pending closure stays small (target, job, due time): its size is
        // most of the memory per in-flight job.
        self.scheduler
            .schedule_once_with(self.delay, &self.manager, move || ManagerMsg::Done {
                job,
                due_ns,
                fired_ns: since_base_ns(),
            });
    }
}

enum ManagerMsg {
    /// A reply: the job, when it was due, and when its timer fired.
    Done {
        job: u64,
        due_ns: u64,
        fired_ns: u64,
    },
}

/// Counts completions, measures lateness, reports progress.
struct Manager {
    jobs: u64,
    base: Instant,
    tally: Option<Tally>,
    reporter: Reporter,
    counters: Arc<Counters>,
    finished: Arc<Mutex<Option<mpsc::Sender<Tally>>>>,
}

impl Actor for Manager {
    type Msg = ManagerMsg;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: ManagerMsg) {
        let ManagerMsg::Done {
            job,
            due_ns,
            fired_ns,
        } = msg;
        let now_ns = self.base.elapsed().as_nanos() as u64;
        let tally = self.tally.as_mut().expect("counting");
        tally.record(
            job,
            Duration::from_nanos(fired_ns.saturating_sub(due_ns)),
            Duration::from_nanos(now_ns.saturating_sub(due_ns)),
        );
        let done = tally.count;
        self.counters.completed.store(done, Ordering::Relaxed);
        self.reporter.completed(done);
        if done == self.jobs {
            if let Some(tx) = self
                .finished
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                let _ = tx.send(self.tally.take().expect("counting"));
            }
        }
    }
}

/// Runs one measurement here (in the child process).
pub fn run_here(variant: &str, sizes: &Settings) -> Result<Outcome, WorkloadError> {
    match variant {
        "actor" | "actor-w1" => run_actor(sizes, super::threads(variant)),
        "tokio-sleep" => run_tokio(sizes),
        other => Err(WorkloadError::new(format!(
            "unknown delayed variant {other:?}"
        ))),
    }
}

fn run_actor(sizes: &Settings, threads: usize) -> Result<Outcome, WorkloadError> {
    let sizes = *sizes;
    let system = ActorSystem::builder()
        .name("delayed")
        .dispatcher("default", DispatcherConfig::pool(threads))
        .build()
        .map_err(|e| WorkloadError::new(e.to_string()))?;
    let guard = SystemGuard(system);
    let system = &guard.0;
    let (counters, rss_start, base) = Counters::start();
    let (tx, rx) = mpsc::channel();
    let finished = Arc::new(Mutex::new(Some(tx)));
    let manager = {
        let (counters, finished) = (counters.clone(), finished.clone());
        let jobs = sizes.jobs;
        system
            .spawn(Props::new(move || Manager {
                jobs,
                base,
                tally: Some(Tally::new(jobs)),
                reporter: Reporter::new(jobs, base),
                counters: counters.clone(),
                finished: finished.clone(),
            }))
            .map_err(|e| WorkloadError::new(e.to_string()))?
    };
    let scheduler = system.scheduler().clone();
    let worker = Props::new(move || Worker {
        manager: manager.clone(),
        scheduler: scheduler.clone(),
        delay: sizes.delay,
        base,
    })
    .mailbox(MailboxConfig::bounded(sizes.capacity, Overflow::Fail));
    let pool = Router::pool(system, sizes.workers, worker, Routing::RoundRobin)
        .map_err(|e| WorkloadError::new(e.to_string()))?;
    let sampler = start_sampler(counters.clone(), base);
    let start = Instant::now();
    for job in 0..sizes.jobs {
        pool.send_blocking(WorkerMsg::Job(job), Duration::from_secs(60))
            .map_err(|e| WorkloadError::new(format!("job {job}: {e}")))?;
        counters.sent.store(job + 1, Ordering::Relaxed);
    }
    let tally = rx
        .recv_timeout(sizes.delay + Duration::from_secs(600))
        .map_err(|_| WorkloadError::new("not every job completed within 10 minutes"))?;
    finish(&sizes, start, &counters, sampler, &tally, rss_start)
}

fn run_tokio(sizes: &Settings) -> Result<Outcome, WorkloadError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .map_err(|e| WorkloadError::new(e.to_string()))?;
    let (counters, rss_start, base) = Counters::start();
    let sampler = start_sampler(counters.clone(), base);
    let start = Instant::now();
    let (jobs, delay) = (sizes.jobs, sizes.delay);
    let counters2 = counters.clone();
    let tally = runtime.block_on(async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64, u64)>();
        let spawner = {
            let counters = counters2.clone();
            tokio::spawn(async move {
                for job in 0..jobs {
                    let tx = tx.clone();
                    let due = Instant::now() + delay;
                    let due_ns = (due - base).as_nanos() as u64;
                    tokio::spawn(async move {
                        tokio::time::sleep_until(due.into()).await;
                        let fired_ns = base.elapsed().as_nanos() as u64;
                        let _ = tx.send((job, due_ns, fired_ns));
                    });
                    counters.sent.store(job + 1, Ordering::Relaxed);
                    if job % 1024 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        };
        let mut tally = Tally::new(jobs);
        let mut reporter = Reporter::new(jobs, base);
        while tally.count < jobs {
            let Some((job, due_ns, fired_ns)) = rx.recv().await else {
                break;
            };
            let now_ns = base.elapsed().as_nanos() as u64;
            tally.record(
                job,
                Duration::from_nanos(fired_ns.saturating_sub(due_ns)),
                Duration::from_nanos(now_ns.saturating_sub(due_ns)),
            );
            counters2.completed.store(tally.count, Ordering::Relaxed);
            reporter.completed(tally.count);
        }
        let _ = spawner.await;
        tally
    });
    finish(sizes, start, &counters, sampler, &tally, rss_start)
}

/// Ends a run whose jobs all came back: the time taken up to now, the
/// sampler stopped, the tally checked, and the outcome.
fn finish(
    sizes: &Settings,
    start: Instant,
    counters: &Counters,
    sampler: thread::JoinHandle<Vec<(f64, u64, u64, f64)>>,
    tally: &Tally,
    rss_start: u64,
) -> Result<Outcome, WorkloadError> {
    let total = start.elapsed();
    counters.stop.store(true, Ordering::Release);
    let timeline = sampler
        .join()
        .map_err(|_| WorkloadError::new("the sampler panicked"))?;
    tally.validate(sizes.jobs)?;
    Ok(outcome(sizes.jobs, total, tally, rss_start, timeline))
}

fn outcome(
    jobs: u64,
    total: Duration,
    tally: &Tally,
    rss_start: u64,
    timeline: Vec<(f64, u64, u64, f64)>,
) -> Outcome {
    let ms = |us: u64| us as f64 / 1e3;
    let (max_in_flight, growth_mb) = timeline
        .iter()
        .map(|&(_, sent, done, rss_mb)| (sent.saturating_sub(done), rss_mb))
        .max_by_key(|&(in_flight, _)| in_flight)
        .unwrap_or((0, 0.0));
    let growth = growth_mb * 1e6 - rss_start as f64;
    Outcome {
        jobs,
        total_s: total.as_secs_f64(),
        arrival_p50_ms: ms(tally.arrival_us.value_at_quantile(0.5)),
        arrival_p99_ms: ms(tally.arrival_us.value_at_quantile(0.99)),
        arrival_max_ms: ms(tally.arrival_us.max()),
        fired_p50_ms: ms(tally.lateness_us.value_at_quantile(0.5)),
        fired_p99_ms: ms(tally.lateness_us.value_at_quantile(0.99)),
        fired_max_ms: ms(tally.lateness_us.max()),
        peak_rss_mb: rss::peak_rss_bytes().unwrap_or(0) as f64 / 1e6,
        bytes_per_job: if max_in_flight > 0 {
            growth.max(0.0) / max_in_flight as f64
        } else {
            0.0
        },
        max_in_flight,
        timeline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_refuses_missing_and_duplicate_jobs() {
        let mut ok = Tally::new(3);
        for job in 0..3 {
            ok.record(job, Duration::from_millis(1), Duration::from_millis(2));
        }
        assert!(ok.validate(3).is_ok());

        let mut missing = Tally::new(3);
        missing.record(0, Duration::ZERO, Duration::ZERO);
        missing.record(1, Duration::ZERO, Duration::ZERO);
        assert!(missing.validate(3).is_err());

        let mut twice = Tally::new(3);
        for job in [0, 1, 1] {
            twice.record(job, Duration::ZERO, Duration::ZERO);
        }
        assert!(twice.validate(3).is_err());
    }

    #[test]
    fn a_tiny_actor_run_completes_every_job() {
        let sizes = Settings {
            jobs: 500,
            workers: 2,
            capacity: 16,
            delay: Duration::from_millis(5),
        };
        let outcome = run_here("actor", &sizes).unwrap();
        assert_eq!(outcome.jobs, 500);
        assert!(outcome.total_s >= 0.005, "replies came before their delay");
    }
}

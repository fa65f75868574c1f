//! Model tests of the home token (`home.rs`) inside the pool's parking
//! protocol (the pool's header): under late stealing only the token's
//! holder takes from the injector, and a worker parks while another holds
//! it, trusting the holder to look at the injector before it parks in turn.
//! The property checked is the one that trust must not break: **a task sent
//! from outside the pool is always run**; no interleaving leaves it in the
//! injector with every worker asleep.
//!
//! The workers here follow `run_worker`'s steps in `run_worker`'s order,
//! with the real [`HomeToken`]: take the token or keep it, take from the
//! injector; finding nothing, give the token up, then `park` (register as a
//! sleeper, `SeqCst` fence, look at the injector once more if the token is
//! free, else park until notified). The outside thread follows `push`:
//! push, `SeqCst` fence, wake a sleeper if there is one. The injector is a
//! locked queue here: crossbeam's injector is linearizable, which is all
//! the protocol uses of it. A third model flips the stealing mode as the
//! governor does, while a worker parks.
//!
//! Under `RUSTFLAGS="--cfg loom"` loom explores the interleavings (a lost
//! wake-up shows as every thread blocked, which loom reports); in a normal
//! build the bodies run many times on real threads, and a lost wake-up
//! fails the deadline in [`model`]. Run the loom variant with
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --lib --release dispatch::pool::models`.

use std::collections::VecDeque;

use super::home::HomeToken;

#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::{Arc, Mutex};
#[cfg(loom)]
use loom::thread;

#[cfg(not(loom))]
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::{Arc, Mutex};
#[cfg(not(loom))]
use std::thread;

/// Runs `f` under loom's model checker, or repeatedly on real threads,
/// failing if a round does not end within a deadline (a lost wake-up
/// leaves every worker parked for ever).
fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    crate::sync::loom_check(f);
    #[cfg(not(loom))]
    {
        let rounds = if cfg!(miri) { 3 } else { 300 };
        let f = Arc::new(f);
        let (done, ended) = std::sync::mpsc::channel();
        let runner = {
            let f = f.clone();
            thread::spawn(move || {
                for _ in 0..rounds {
                    f();
                }
                let _ = done.send(());
            })
        };
        // A deadline for a failure, not a wait for an outcome: a healthy
        // round takes microseconds.
        ended
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect(
                "a round did not end: a task was left in the injector with every worker parked",
            );
        runner.join().unwrap();
    }
}

/// The parts of a pool the protocol touches.
struct Pool {
    late: AtomicBool,
    token: HomeToken,
    injector: Mutex<VecDeque<u32>>,
    sleepers: Mutex<Vec<usize>>,
    num_sleepers: AtomicUsize,
    notified: Vec<AtomicBool>,
    threads: Mutex<Vec<Option<thread::Thread>>>,
    shutdown: AtomicBool,
    ran: AtomicUsize,
    tasks: usize,
}

impl Pool {
    fn new(workers: usize, tasks: usize, late: bool) -> Arc<Self> {
        Arc::new(Pool {
            late: AtomicBool::new(late),
            token: HomeToken::new(),
            injector: Mutex::new(VecDeque::new()),
            sleepers: Mutex::new(Vec::new()),
            num_sleepers: AtomicUsize::new(0),
            notified: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            threads: Mutex::new(vec![None; workers]),
            shutdown: AtomicBool::new(false),
            ran: AtomicUsize::new(0),
            tasks,
        })
    }

    fn late(&self) -> bool {
        self.late.load(Ordering::Relaxed)
    }

    /// Sets the worker's flag and unparks it. The pool stores the flag;
    /// the model swaps it in, which is the same under the memory model but
    /// not to loom 0.7, which may order a plain store before an earlier
    /// swap of the same flag (loom issues #254 and #389) and then reports
    /// a wake-up lost that the real code does not lose.
    fn unpark(&self, index: usize) {
        self.notified[index].swap(true, Ordering::Release);
        if let Some(t) = &self.threads.lock().unwrap()[index] {
            t.unpark();
        }
    }

    /// `Pool::push` from outside the pool (no watcher in these models).
    fn push_from_outside(&self, task: u32) {
        self.injector.lock().unwrap().push_back(task);
        fence(Ordering::SeqCst);
        if self.num_sleepers.load(Ordering::Relaxed) != 0 {
            let index = {
                let mut sleepers = self.sleepers.lock().unwrap();
                let Some(index) = sleepers.pop() else { return };
                self.num_sleepers.fetch_sub(1, Ordering::Relaxed);
                index
            };
            self.unpark(index);
        }
    }

    /// `take_injected`: the injector, if this worker may take from it.
    fn take_injected(&self, index: usize) -> Option<u32> {
        if self.late() && !self.token.claim(index) {
            return None;
        }
        self.injector.lock().unwrap().pop_front()
    }

    /// `Pool::shutdown`: once every task ran, wake every worker to exit.
    fn shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for index in 0..self.notified.len() {
            self.unpark(index);
        }
    }

    /// `park`, step by step.
    fn park(&self, index: usize) {
        {
            let mut sleepers = self.sleepers.lock().unwrap();
            sleepers.push(index);
            self.num_sleepers.fetch_add(1, Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
        let injected =
            !self.injector.lock().unwrap().is_empty() && (!self.late() || self.token.is_free());
        if injected || self.shutdown.load(Ordering::SeqCst) {
            let mut sleepers = self.sleepers.lock().unwrap();
            if let Some(pos) = sleepers.iter().position(|&i| i == index) {
                sleepers.swap_remove(pos);
                self.num_sleepers.fetch_sub(1, Ordering::Relaxed);
                return;
            }
            // A notifier picked this worker: consume its notification.
        }
        while !self.notified[index].swap(false, Ordering::Acquire) {
            thread::park();
        }
    }

    /// `run_worker`: run tasks until the pool shuts down.
    fn run_worker(&self, index: usize) {
        self.threads.lock().unwrap()[index] = Some(thread::current());
        loop {
            if self.take_injected(index).is_some() {
                if self.ran.fetch_add(1, Ordering::AcqRel) + 1 == self.tasks {
                    self.shutdown();
                }
                continue;
            }
            if self.shutdown.load(Ordering::SeqCst) {
                return;
            }
            self.token.leave(index);
            self.park(index);
        }
    }
}

/// Two workers under late stealing, two tasks sent from outside while
/// they look, run and park: both tasks run (whichever worker holds the
/// token when each arrives).
#[test]
fn a_task_sent_from_outside_is_run_while_the_home_parks() {
    model(|| {
        let pool = Pool::new(2, 2, true);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let pool = pool.clone();
                thread::spawn(move || pool.run_worker(i))
            })
            .collect();
        pool.push_from_outside(1);
        pool.push_from_outside(2);
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(pool.ran.load(Ordering::Relaxed), 2);
        assert!(pool.injector.lock().unwrap().is_empty());
    });
}

/// The token is the home's alone: while one worker holds it, the other
/// neither takes from the injector nor takes the token.
#[test]
fn only_the_holder_takes_from_the_injector() {
    model(|| {
        let token = Arc::new(HomeToken::new());
        let other = {
            let token = token.clone();
            thread::spawn(move || token.claim(1))
        };
        let mine = token.claim(0);
        let theirs = other.join().unwrap();
        assert!(mine != theirs, "exactly one claim wins");
        let holder = if mine { 0 } else { 1 };
        assert_eq!(token.holder(), Some(holder));
        // A worker that does not hold the token cannot give it up.
        token.leave(1 - holder);
        assert_eq!(token.holder(), Some(holder));
        token.leave(holder);
        assert!(token.is_free());
    });
}

/// The governor turns eager stealing into late while a worker parks and a
/// task arrives: the task is still run.
#[test]
fn a_task_is_run_when_the_mode_turns_late_meanwhile() {
    model(|| {
        let pool = Pool::new(2, 1, false);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let pool = pool.clone();
                thread::spawn(move || pool.run_worker(i))
            })
            .collect();
        let governor = {
            let pool = pool.clone();
            thread::spawn(move || pool.late.store(true, Ordering::Relaxed))
        };
        pool.push_from_outside(1);
        governor.join().unwrap();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(pool.ran.load(Ordering::Relaxed), 1);
    });
}

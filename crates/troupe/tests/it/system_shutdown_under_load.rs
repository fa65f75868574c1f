//! Shutdown under load: producers flood a thousand actors from plain threads
//! while the system shuts down. Every message is accounted for: handled by
//! its actor, or counted as a dead letter (queued when its actor stopped,
//! or sent after). Termination returns (no deadlock) and leaves no runtime
//! thread behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use crate::support::PATIENCE;
use troupe::{Actor, ActorSystem, Context, Props};
use troupe_testkit::terminate;

struct Sink(Arc<AtomicU64>);

impl Actor for Sink {
    type Msg = u64;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: u64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Names of this process's threads that belong to the system `name`.
fn runtime_threads(name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
            let comm = comm.trim().to_string();
            if comm.contains(name) {
                found.push(comm);
            }
        }
    }
    found
}

#[test]
fn every_message_is_handled_or_a_dead_letter_and_no_thread_survives() {
    const NAME: &str = "sdload";
    let system = ActorSystem::builder()
        .name(NAME)
        .threads(2)
        .build()
        .unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let sinks: Vec<_> = (0..1_000)
        .map(|_| {
            let handled = handled.clone();
            system
                .spawn(Props::new(move || Sink(handled.clone())))
                .unwrap()
        })
        .collect();
    if cfg!(target_os = "linux") {
        // The probe must see the workers, or its empty list at the end would
        // prove nothing. A new thread carries its parent's name until it
        // first runs and names itself, and with other tests of this binary
        // busy that can take a while: look again until the deadline.
        let deadline = Instant::now() + PATIENCE;
        while runtime_threads(NAME).is_empty() && Instant::now() < deadline {
            thread::yield_now();
        }
        assert!(
            !runtime_threads(NAME).is_empty(),
            "the probe sees the workers"
        );
    }
    let sent = Arc::new(AtomicU64::new(0));
    let halfway = Arc::new(Barrier::new(3));
    // Released once the system has terminated: a last round then is sure to
    // be dead letters, however fast the first 200 rounds went.
    let after = Arc::new(Barrier::new(3));
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let (sinks, sent, halfway, after) =
                (sinks.clone(), sent.clone(), halfway.clone(), after.clone());
            thread::spawn(move || {
                for round in 0..201u64 {
                    if round == 200 {
                        after.wait();
                    }
                    for (i, sink) in sinks.iter().enumerate() {
                        if (i + p) % 2 == 0 {
                            sink.tell(round);
                            sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if round == 100 {
                        halfway.wait();
                    }
                }
            })
        })
        .collect();
    // Shut down while both producers are mid-flood.
    halfway.wait();
    terminate(&system, PATIENCE);
    after.wait();
    for p in producers {
        p.join().unwrap();
    }
    let sent = sent.load(Ordering::Relaxed);
    let handled = handled.load(Ordering::Relaxed);
    let dead = system.dead_letter_count();
    assert_eq!(sent, 2 * 201 * 500);
    assert!(handled > 0 && dead > 0, "handled {handled}, dead {dead}");
    assert_eq!(
        handled + dead,
        sent,
        "handled {handled} + dead letters {dead}"
    );
    if cfg!(target_os = "linux") {
        // `terminate` joined every thread; the kernel unlists a joined thread
        // a few microseconds after the join returns, hence the re-reads.
        let deadline = Instant::now() + PATIENCE;
        let mut left = runtime_threads(NAME);
        while !left.is_empty() && Instant::now() < deadline {
            thread::yield_now();
            left = runtime_threads(NAME);
        }
        assert_eq!(left, Vec::<String>::new());
    }
}

//! Dispatchers: an actor on the `"pinned"` dispatcher runs on a thread of its
//! own named `troupe-pinned-<actor name>`; a pool dispatcher configured in
//! TOML (as text or as a file) runs actors on threads named after the system
//! and the dispatcher; an invalid configuration is refused with an error
//! that names the offending key; and a pool of two workers with throughput 5
//! handles a million messages to ten thousand actors, each exactly once.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::support::{system, PATIENCE};
use troupe::{Actor, ActorRef, ActorSystem, Context, DispatcherConfig, Props, ReplyTo};
use troupe_testkit::{terminate, TestProbe};

/// Replies with the name and id of the thread its handler runs on.
struct WhereAmI;

impl Actor for WhereAmI {
    type Msg = ReplyTo<(String, ThreadId)>;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, reply: Self::Msg) {
        let current = thread::current();
        reply.reply((
            current.name().unwrap_or("<unnamed>").to_string(),
            current.id(),
        ));
    }
}

fn where_is(actor: &ActorRef<ReplyTo<(String, ThreadId)>>) -> (String, ThreadId) {
    actor
        .ask(|r| r, PATIENCE)
        .wait()
        .expect("the actor answers")
}

#[test]
fn pinned_actors_each_run_on_a_thread_of_their_own() {
    let system = system();
    let alpha = system
        .spawn(Props::new(|| WhereAmI).name("alpha").dispatcher("pinned"))
        .unwrap();
    let beta = system
        .spawn(Props::new(|| WhereAmI).name("beta").dispatcher("pinned"))
        .unwrap();
    let pooled = system
        .spawn(Props::new(|| WhereAmI).name("pooled"))
        .unwrap();

    let (alpha_name, alpha_thread) = where_is(&alpha);
    let (beta_name, beta_thread) = where_is(&beta);
    assert_eq!(alpha_name, "troupe-pinned-alpha");
    assert_eq!(beta_name, "troupe-pinned-beta");
    assert_ne!(alpha_thread, beta_thread);
    for _ in 0..10 {
        assert_eq!(where_is(&alpha).1, alpha_thread, "always the same thread");
    }
    let (pooled_name, _) = where_is(&pooled);
    assert!(
        pooled_name.starts_with("troupe-troupe-default-"),
        "{pooled_name}"
    );
    terminate(&system, PATIENCE);
}

const BLUE: &str = r#"
name = "cfg"

[dispatchers.blue]
kind = "pool"
threads = 2
throughput = 3
"#;

#[test]
fn a_pool_dispatcher_from_toml_text_names_its_threads() {
    let system = ActorSystem::builder()
        .threads(2)
        .config_str(BLUE)
        .expect("valid configuration")
        .build()
        .unwrap();
    assert_eq!(system.name(), "cfg");
    let blue = system
        .spawn(Props::new(|| WhereAmI).dispatcher("blue"))
        .unwrap();
    let (name, _) = where_is(&blue);
    assert!(name.starts_with("troupe-cfg-blue-"), "ran on {name}");
    terminate(&system, PATIENCE);
}

#[test]
fn a_system_built_from_a_config_file_works() {
    let unique = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let path = std::env::temp_dir().join(format!(
        "troupe-dispatch-pinned-{}-{unique}.toml",
        std::process::id()
    ));
    std::fs::write(
        &path,
        "name = \"filed\"\n[dispatchers.default]\nthreads = 2\n[dispatchers.io]\nkind = \"pinned\"\n",
    )
    .unwrap();
    let built = ActorSystem::builder().config_file(&path);
    std::fs::remove_file(&path).unwrap();
    let system = built.expect("valid configuration file").build().unwrap();

    assert_eq!(system.name(), "filed");
    let pooled = system.spawn(Props::new(|| WhereAmI)).unwrap();
    let io = system
        .spawn(Props::new(|| WhereAmI).name("disk").dispatcher("io"))
        .unwrap();
    assert!(where_is(&pooled).0.starts_with("troupe-filed-default-"));
    assert_eq!(where_is(&io).0, "troupe-pinned-disk");
    terminate(&system, PATIENCE);
}

/// The error of a configuration that must be refused.
fn refused(text: &str) -> String {
    match ActorSystem::builder().config_str(text) {
        Ok(_) => panic!("accepted an invalid configuration:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_invalid_configuration_is_refused_naming_the_key() {
    let e = refused("[dispatchers.blue]\nthreads = 0\n");
    assert!(e.contains("dispatchers.blue.threads"), "{e}");
    let e = refused("[dispatchers.blue]\nthroughput = 0\n");
    assert!(e.contains("dispatchers.blue.throughput"), "{e}");
    let e = refused("[dispatchers.blue]\nkind = \"fast\"\n");
    assert!(e.contains("dispatchers.blue.kind"), "{e}");
    let e = refused("[dispatchers.blue]\nthreds = 2\n");
    assert!(e.contains("threds"), "{e}");
    let e = refused("nmae = \"typo\"\n");
    assert!(e.contains("nmae"), "{e}");
    let e = refused("[dispatchers.io]\nkind = \"pinned\"\nthreads = 2\n");
    assert!(e.contains("dispatchers.io.threads"), "{e}");

    // The builder checks programmatic settings the same way.
    let e = ActorSystem::builder()
        .dispatcher("zero", DispatcherConfig::pool(2).throughput(0))
        .build()
        .expect_err("throughput 0 is refused");
    assert!(e.to_string().contains("dispatchers.zero.throughput"), "{e}");
    let e = ActorSystem::builder()
        .threads(0)
        .build()
        .expect_err("0 threads is refused");
    assert!(e.to_string().contains("dispatchers.default.threads"), "{e}");

    let missing = std::env::temp_dir().join("troupe-no-such-config-file.toml");
    let e = ActorSystem::builder()
        .config_file(&missing)
        .expect_err("a missing file is refused");
    assert!(
        e.to_string().contains("troupe-no-such-config-file.toml"),
        "{e}"
    );
}

const ACTORS: usize = 10_000;
const PER_ACTOR: u32 = 100;

/// Counts its messages in a shared slot; the last message of the last
/// actor to finish reports.
struct Tally {
    slot: usize,
    counts: Arc<Vec<AtomicU32>>,
    finished: Arc<AtomicUsize>,
    done: ActorRef<()>,
}

impl Actor for Tally {
    type Msg = u32;

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _n: u32) {
        let seen = self.counts[self.slot].fetch_add(1, Ordering::Relaxed) + 1;
        if seen == PER_ACTOR && self.finished.fetch_add(1, Ordering::AcqRel) + 1 == ACTORS {
            self.done.tell(());
        }
    }
}

#[test]
fn a_million_messages_to_ten_thousand_actors_on_two_workers_throughput_5() {
    let system = ActorSystem::builder()
        .threads(2)
        .dispatcher("many", DispatcherConfig::pool(2).throughput(5))
        .build()
        .unwrap();
    let counts: Arc<Vec<AtomicU32>> = Arc::new((0..ACTORS).map(|_| AtomicU32::new(0)).collect());
    let finished = Arc::new(AtomicUsize::new(0));
    let done = TestProbe::new(&system, "all actors finished");
    let actors: Vec<_> = (0..ACTORS)
        .map(|slot| {
            let (counts, finished, done) = (counts.clone(), finished.clone(), done.actor_ref());
            system
                .spawn(
                    Props::new(move || Tally {
                        slot,
                        counts: counts.clone(),
                        finished: finished.clone(),
                        done: done.clone(),
                    })
                    .dispatcher("many"),
                )
                .unwrap()
        })
        .collect();
    // Round after round, so that every actor has work queued at once.
    for n in 0..PER_ACTOR {
        for actor in &actors {
            actor.tell(n);
        }
    }
    done.expect_msg(PATIENCE);
    terminate(&system, PATIENCE);

    let total: u64 = counts
        .iter()
        .map(|c| u64::from(c.load(Ordering::Relaxed)))
        .sum();
    assert_eq!(total, u64::from(PER_ACTOR) * ACTORS as u64);
    let off: Vec<_> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.load(Ordering::Relaxed) != PER_ACTOR)
        .take(5)
        .collect();
    assert!(off.is_empty(), "actors with a wrong count: {off:?}");
    assert_eq!(finished.load(Ordering::Relaxed), ACTORS);
    assert_eq!(system.dead_letter_count(), 0);
}

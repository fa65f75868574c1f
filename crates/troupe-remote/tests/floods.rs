//! What a flood from a stranger costs a node process (a real
//! `troupe-remote-echo` process, a real nats-server at its default limits,
//! the stranger a plain NATS client): its peak resident set, read from
//! `/proc/<pid>/status`, stays within a bound, it keeps serving, and every
//! message of the flood is accounted for in its counters.
//!
//! - 1,000 batches of a megabyte of empty entries each: a batch of them is
//!   one dead letter (`wire::MIN_FRAME_LEN`), so the node keeps up and
//!   holds none of them for long;
//! - 4,000 valid 64 KiB tells to a published actor that takes a
//!   millisecond per message: the default inbound bound
//!   (`RemoteConfig::inbound_limit`) refuses what would wait beyond it,
//!   each refusal counted, instead of queueing the whole flood.

mod support;

use std::time::{Duration, Instant};

use troupe_remote::testing::echo::EchoMsg;
use troupe_remote::wire;

use support::{node, server, stop, system, EchoProcess};

const ASK: Duration = Duration::from_secs(5);

/// How much the process may grow at its peak during a flood, in KiB.
const GROWTH_KIB: u64 = 200 * 1024;

/// Asks `remote` until `done` holds for its answer to `ask`, for up to
/// five minutes.
async fn until_answer<T: Send + 'static>(
    what: &str,
    mut ask: impl FnMut() -> troupe::Ask<T>,
    mut done: impl FnMut(&T) -> bool,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(answer) = ask().await {
            if done(&answer) {
                return answer;
            }
        }
        assert!(Instant::now() < deadline, "not within five minutes: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A batch of empty entries of about a megabyte: a batch header, then
/// zero lengths.
fn junk_batch() -> bytes::Bytes {
    let mut junk = vec![wire::VERSION, 3];
    junk.resize(1_000_000, 0);
    junk.into()
}

/// Publishes a good frame on `subject` from `stranger` until `remote`'s
/// history shows it: once it does, everything the stranger published
/// before it was handled (or dropped by the server, which drops what it
/// cannot deliver to a consumer too slow for it).
async fn after_the_flood(
    stranger: &async_nats::Client,
    remote: &troupe::ActorRef<EchoMsg>,
    text: &str,
    target: &EchoProcess,
) {
    let marker =
        bytes::Bytes::from(wire::encode_tell(0, "echo", &EchoMsg::Say(text.into())).unwrap());
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        stranger
            .publish("troupe.troupe.actor.echo", marker.clone())
            .await
            .unwrap();
        stranger.flush().await.unwrap();
        // A node still busy with the flood may not answer in time.
        if let Ok(history) = remote.ask(EchoMsg::History, ASK).await {
            if history.iter().any(|said| said == text) {
                return;
            }
        }
        if Instant::now() >= deadline {
            let (now, peak) = target.memory_kib();
            panic!(
                "no good frame came through in five minutes; the node's resident set \
                 is {now} KiB, {peak} KiB at its peak"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The nats-server's log lines about slow consumers it cut off.
fn slow_consumer_lines(server: &troupe_remote::testing::NatsServer) -> Vec<String> {
    server
        .log_text()
        .lines()
        .filter(|line| line.contains("Slow Consumer"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_megabyte_batches_of_empty_entries_leave_a_node_process_small() {
    let server = server();
    let url = server.url();
    let mut target = EchoProcess::start(&[&url, "target", "echo"]);
    let sys = system();
    let here = node(&sys, &server, "driver").await;
    let remote = here.lookup::<EchoMsg>("echo").await.unwrap();
    remote
        .ask(|r| EchoMsg::Echo("warm".into(), r), ASK)
        .await
        .unwrap();
    let (_, before) = target.memory_kib();

    // As fast as the stranger can publish.
    let stranger = async_nats::connect(&url).await.unwrap();
    let junk = junk_batch();
    const BATCHES: u64 = 1_000;
    for _ in 0..BATCHES {
        stranger
            .publish("troupe.troupe.actor.echo", junk.clone())
            .await
            .unwrap();
    }
    after_the_flood(&stranger, &remote, "after", &target).await;

    let (now, peak) = target.memory_kib();
    let stats = target.stats();
    let cut_off = slow_consumer_lines(&server);
    println!(
        "peak resident set {before} KiB before, {peak} KiB after {BATCHES} batches \
         of a megabyte ({now} KiB now); counters: {stats:?}; the server: {cut_off:?}"
    );
    assert!(
        peak <= before + GROWTH_KIB,
        "the node grew from {before} KiB to a peak of {peak} KiB"
    );
    // A batch is one dead letter at most: those the node got, counted once
    // (the server drops, uncounted here, what it cannot deliver to a node
    // that reads slower than the stranger publishes: see the next test).
    assert!(stats["total"] <= BATCHES, "{stats:?}");
    assert_eq!(stats["total"], stats["Malformed"], "{stats:?}");
    if cut_off.is_empty() {
        assert_eq!(stats["total"], BATCHES, "{stats:?}");
    }
    // And it serves on.
    let answer = remote
        .ask(|r| EchoMsg::Echo("still here".into(), r), ASK)
        .await
        .unwrap();
    assert_eq!(answer, "still here");

    target.finish();
    here.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_junk_batch_a_node_process_receives_is_counted_once() {
    let server = server();
    let url = server.url();
    let mut target = EchoProcess::start(&[&url, "target", "echo"]);
    let sys = system();
    let here = node(&sys, &server, "driver").await;
    let remote = here.lookup::<EchoMsg>("echo").await.unwrap();
    let (_, before) = target.memory_kib();

    // 1,000 batches, at most 32 (32 MB) on their way at a time: within
    // what the server holds for a slow reader (max_pending, 64 MB), so
    // it drops none and each must be counted by the node.
    let stranger = async_nats::connect(&url).await.unwrap();
    let junk = junk_batch();
    const BATCHES: u64 = 1_000;
    const IN_FLIGHT: u64 = 32;
    for round in 0..BATCHES / IN_FLIGHT + 1 {
        let n = IN_FLIGHT.min(BATCHES - round * IN_FLIGHT);
        for _ in 0..n {
            stranger
                .publish("troupe.troupe.actor.echo", junk.clone())
                .await
                .unwrap();
        }
        after_the_flood(&stranger, &remote, &format!("round {round}"), &target).await;
    }
    let (now, peak) = target.memory_kib();
    let stats = target.stats();
    let cut_off = slow_consumer_lines(&server);
    println!(
        "peak resident set {before} KiB before, {peak} KiB after {BATCHES} batches \
         of a megabyte ({now} KiB now); counters: {stats:?}; the server: {cut_off:?}"
    );
    assert!(
        cut_off.is_empty(),
        "the server cut the node off: {cut_off:?}"
    );
    assert_eq!(stats["total"], BATCHES, "{stats:?}");
    assert_eq!(stats["Malformed"], BATCHES, "{stats:?}");
    assert!(
        peak <= before + GROWTH_KIB,
        "the node grew from {before} KiB to a peak of {peak} KiB"
    );

    target.finish();
    here.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_valid_tells_to_a_slow_actor_leaves_a_node_process_small() {
    let server = server();
    let url = server.url();
    let mut target = EchoProcess::start(&[&url, "target", "slow", "slow"]);
    let sys = system();
    let here = node(&sys, &server, "driver").await;
    let remote = here.lookup::<EchoMsg>("slow").await.unwrap();
    remote
        .ask(|r| EchoMsg::Echo("warm".into(), r), ASK)
        .await
        .unwrap();
    let (_, before) = target.memory_kib();

    let stranger = async_nats::connect(&url).await.unwrap();
    const TELLS: u64 = 4_000;
    let say = wire::encode_tell(0, "slow", &EchoMsg::Say("x".repeat(64 * 1024))).unwrap();
    let say = bytes::Bytes::from(say);
    for _ in 0..TELLS {
        stranger
            .publish("troupe.troupe.actor.slow", say.clone())
            .await
            .unwrap();
    }
    stranger.flush().await.unwrap();
    // The slow actor answers an Echo with how many tells it has handled.
    // Once they and the refusals account for the whole flood, it is over
    // (the refusals may count a few of these Echos too).
    let mut refused = 0;
    let handled = until_answer(
        "the flood handled or refused",
        || remote.ask(|r| EchoMsg::Echo(String::new(), r), ASK),
        |handled: &String| {
            refused = target.stats().get("MailboxFull").copied().unwrap_or(0);
            handled.parse::<u64>().unwrap() + refused >= TELLS
        },
    )
    .await;
    let (now, peak) = target.memory_kib();
    let stats = target.stats();
    println!(
        "peak resident set {before} KiB before, {peak} KiB after {TELLS} tells of 64 KiB \
         ({now} KiB now); the actor handled {handled} messages; counters: {stats:?}"
    );
    assert!(
        peak <= before + GROWTH_KIB,
        "the node grew from {before} KiB to a peak of {peak} KiB"
    );
    assert!(refused > 0, "nothing was refused: {stats:?}");
    // Whatever was not handled was refused, counted: nothing else dropped.
    assert_eq!(stats["total"], stats["MailboxFull"], "{stats:?}");

    target.finish();
    here.shutdown().await;
    stop(sys);
}

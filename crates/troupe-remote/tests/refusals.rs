//! Frames the receiving node will not deliver because of what they carry:
//! a tag its actor does not take (a ref of another message type), or a
//! payload it cannot decode (a variant its build of the type lacks). The
//! receiver counts and logs each, and refuses it back to the sending
//! node, which counts it too and fails an ask it carried at once, with an
//! error that says why, instead of letting it wait for its timeout. A
//! stranger's flood of such frames gets a bounded number of refusals, and
//! only a node of the cluster gets any.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use troupe::{AskError, Props, ReplyTo};
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{wire, DeadLetterReason, RemoteMessage};

use support::{dead_letter_probe, next_reason, node, server, stop, system};

/// Long enough that an ask which fails by timing out is told apart from
/// one refused at once (the tests look at the error, never the clock).
const ASK: Duration = Duration::from_secs(20);

/// A message type the echo actor does not take.
#[derive(Serialize, Deserialize)]
enum Stranger {
    Hello(String),
    Ask(String, ReplyTo<String>),
}

impl RemoteMessage for Stranger {
    const TAG: &'static str = "test.stranger.v1";
}

/// The counter protocol as the receiving node's build has it...
mod old {
    use serde::{Deserialize, Serialize};
    use troupe::{Actor, Context, ReplyTo};

    #[derive(Serialize, Deserialize)]
    pub enum Counter {
        Get(ReplyTo<u32>),
    }

    impl troupe_remote::RemoteMessage for Counter {
        const TAG: &'static str = "test.counter";
    }

    pub struct Count(pub u32);

    impl Actor for Count {
        type Msg = Counter;
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, Counter::Get(reply): Counter) {
            reply.reply(self.0);
        }
    }
}

/// ...and as the sending node's newer build has it: the same tag, two
/// variants more.
mod new {
    use serde::{Deserialize, Serialize};
    use troupe::ReplyTo;

    #[derive(Serialize, Deserialize)]
    pub enum Counter {
        Get(ReplyTo<u32>),
        Add(u32, ReplyTo<u32>),
        Bump(u32),
    }

    impl troupe_remote::RemoteMessage for Counter {
        const TAG: &'static str = "test.counter";
    }
}

/// The ask must have been refused at once, for a reason that contains
/// every one of `words`; a timeout means the frame vanished.
fn assert_refused<T: std::fmt::Debug>(result: Result<T, AskError>, words: &[&str]) {
    match result {
        Err(AskError::Refused { reason, .. }) => {
            for word in words {
                assert!(reason.contains(word), "{word:?} not in {reason:?}");
            }
        }
        other => panic!("not refused at once: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_with_the_wrong_tag_is_refused_back_to_the_sender() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let (probe_a, probe_b) = (dead_letter_probe(&a), dead_letter_probe(&b));
    // A selection makes no lookup, so nothing checks its tag before a
    // message goes.
    let stranger = b.select::<Stranger>("echo").unwrap();

    let answer = stranger.ask(|r| Stranger::Ask("who?".into(), r), ASK).await;
    assert_refused(answer, &["tag", Stranger::TAG, EchoMsg::TAG]);
    assert_eq!(next_reason(&probe_a), DeadLetterReason::UnknownTag);
    assert_eq!(next_reason(&probe_b), DeadLetterReason::UnknownTag);
    // A tell is refused back too: the sender counts it.
    stranger.tell(Stranger::Hello("hi".into()));
    assert_eq!(next_reason(&probe_a), DeadLetterReason::UnknownTag);
    assert_eq!(next_reason(&probe_b), DeadLetterReason::UnknownTag);
    assert_eq!(b.pending_replies(), 0);
    // The right type still goes.
    let echo = b.lookup::<EchoMsg>("echo").await.unwrap();
    let answer = echo
        .ask(|r| EchoMsg::Echo("still here".into(), r), ASK)
        .await;
    assert_eq!(answer.unwrap(), "still here");

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_the_receiver_cannot_decode_is_refused_back_to_the_sender() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = node(&sys_b, &server, "b").await;
    let counter = sys_a.spawn(Props::new(|| old::Count(5))).unwrap();
    a.publish("counter", &counter).await.unwrap();
    let (probe_a, probe_b) = (dead_letter_probe(&a), dead_letter_probe(&b));
    // Same tag: the lookup cannot tell the builds apart.
    let counter = b.lookup::<new::Counter>("counter").await.unwrap();

    assert_eq!(counter.ask(new::Counter::Get, ASK).await.unwrap(), 5);
    let added = counter.ask(|r| new::Counter::Add(1, r), ASK).await;
    assert_refused(added, &["decode", "test.counter"]);
    assert_eq!(next_reason(&probe_a), DeadLetterReason::Undecodable);
    assert_eq!(next_reason(&probe_b), DeadLetterReason::Undecodable);
    counter.tell(new::Counter::Bump(2));
    assert_eq!(next_reason(&probe_a), DeadLetterReason::Undecodable);
    assert_eq!(next_reason(&probe_b), DeadLetterReason::Undecodable);
    // What both builds know still goes, on the same ref.
    assert_eq!(counter.ask(new::Counter::Get, ASK).await.unwrap(), 5);
    assert_eq!(b.pending_replies(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

/// The refusals of one message: a batch with good frames, a wrong-tag ask
/// and an undecodable ask between them, sent by hand in one NATS message
/// with a reply subject listing the asks and the frames they are in. The
/// refusal names each refused frame and why; the good frames are
/// delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_refused_frame_by_frame() {
    let server = server();
    let sys_a = system();
    let a = node(&sys_a, &server, "a").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let raw = async_nats::connect(server.url()).await.unwrap();
    let mut refusals = raw.subscribe("troupe.troupe.noreply.raw.>").await.unwrap();

    let say = |text: &str| wire::encode_tell(0, "echo", &EchoMsg::Say(text.into())).unwrap();
    let mut undecodable = say("x");
    undecodable.push(0);
    let mut batch = wire::BatchWriter::default();
    batch.push(&say("one"));
    batch.push(&wire::encode_tell(0, "echo", &Stranger::Hello("?".into())).unwrap());
    batch.push(&say("two"));
    batch.push(&undecodable);
    raw.publish_with_reply(
        "troupe.troupe.actor.echo",
        "troupe.troupe.noreply.raw.7-1.9-3",
        Bytes::from(batch.finish()),
    )
    .await
    .unwrap();
    let refusal = tokio::time::timeout(ASK, refusals.next())
        .await
        .expect("no refusal")
        .unwrap();
    assert_eq!(
        refusal.subject.as_str(),
        "troupe.troupe.noreply.raw.7-1.9-3"
    );
    let text = String::from_utf8_lossy(&refusal.payload);
    for word in ["tag mismatch", Stranger::TAG, "cannot decode"] {
        assert!(text.contains(word), "{word:?} not in {text:?}");
    }

    let remote = a.lookup::<EchoMsg>("echo").await.unwrap();
    let history = remote.ask(EchoMsg::History, ASK).await.unwrap();
    assert_eq!(history, ["one", "two"]);
    assert_eq!(a.dead_letter_count(DeadLetterReason::UnknownTag), 1);
    assert_eq!(a.dead_letter_count(DeadLetterReason::Undecodable), 1);

    a.shutdown().await;
    stop(sys_a);
}

/// Asks of the right and the wrong type to one actor, sent in one burst so
/// that the writer packs them into batches: each refused ask fails, each
/// other one is answered, whatever batch it shared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_sharing_a_batch_are_refused_or_answered_each_on_its_own() {
    let server = server();
    let (sys_a, sys_b) = (system(), system());
    let a = node(&sys_a, &server, "a").await;
    let b = support::node_lingering(&sys_b, &server, "b", Duration::from_millis(2)).await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let right = b.lookup::<EchoMsg>("echo").await.unwrap();
    let wrong = b.select::<Stranger>("echo").unwrap();

    let before = b.batch_stats();
    let mut rights = Vec::new();
    let mut wrongs = Vec::new();
    for i in 0..20 {
        rights.push(right.ask(|r| EchoMsg::Echo(format!("r{i}"), r), ASK));
        wrongs.push(wrong.ask(|r| Stranger::Ask(format!("w{i}"), r), ASK));
    }
    for (i, answer) in rights.into_iter().enumerate() {
        assert_eq!(answer.await.unwrap(), format!("r{i}"));
    }
    for answer in wrongs {
        assert_refused(answer.await, &["tag mismatch", Stranger::TAG]);
    }
    let batches = b.batch_stats().since(&before);
    assert!(
        batches.messages() < batches.frames,
        "the asks were not batched: {batches:?}"
    );
    assert_eq!(b.dead_letter_count(DeadLetterReason::UnknownTag), 20);
    assert_eq!(b.pending_replies(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refused_frames_gets_a_bounded_number_of_refusals() {
    const FLOOD: u64 = 3000;
    const ELSEWHERE: u64 = 10;
    let server = server();
    let sys_a = system();
    let a = node(&sys_a, &server, "a").await;
    let echo = sys_a.spawn(Props::new(Echo::default)).unwrap();
    a.publish("echo", &echo).await.unwrap();
    let flooder = async_nats::connect(server.url()).await.unwrap();
    let mut refusals = flooder
        .subscribe("troupe.troupe.noreply.flooder.>")
        .await
        .unwrap();
    let mut elsewhere = flooder.subscribe("elsewhere.>").await.unwrap();

    let frame =
        Bytes::from(wire::encode_tell(0, "echo", &Stranger::Hello("flood".into())).unwrap());
    let start = Instant::now();
    for _ in 0..FLOOD {
        flooder
            .publish_with_reply(
                "troupe.troupe.actor.echo",
                "troupe.troupe.noreply.flooder.t",
                frame.clone(),
            )
            .await
            .unwrap();
    }
    // A reply subject outside the cluster's own never gets a refusal.
    for _ in 0..ELSEWHERE {
        flooder
            .publish_with_reply("troupe.troupe.actor.echo", "elsewhere.inbox", frame.clone())
            .await
            .unwrap();
    }
    flooder.flush().await.unwrap();
    // Every frame is counted, refused back or not.
    let deadline = Instant::now() + Duration::from_secs(60);
    while a.dead_letter_count(DeadLetterReason::UnknownTag) < FLOOD + ELSEWHERE {
        assert!(Instant::now() < deadline, "not every frame was counted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // At least one refusal came (wait for it), and at most what the
    // budget allows over the whole run.
    let first = tokio::time::timeout(ASK, refusals.next()).await;
    assert!(matches!(first, Ok(Some(_))), "no refusal at all");
    let mut got = 1u64;
    // A round trip through the server behind everything the node sent.
    a.nats_client().flush().await.unwrap();
    flooder.flush().await.unwrap();
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(200), refusals.next()).await
    {
        got += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let budget =
        troupe_remote::REFUSAL_BURST as f64 + troupe_remote::REFUSALS_PER_SECOND as f64 * elapsed;
    assert!(
        (got as f64) <= budget,
        "{got} refusals in {elapsed:.2} s, budget {budget:.0}"
    );
    assert!(got < FLOOD, "every frame was refused back");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), elsewhere.next())
            .await
            .is_err(),
        "a refusal went outside the cluster"
    );
    println!("{FLOOD} refused frames: {got} refusals in {elapsed:.2} s");

    a.shutdown().await;
    stop(sys_a);
}

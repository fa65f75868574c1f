//! Hostile frames published straight onto a node's subjects: garbage, a
//! wrong version, an unknown tag, a truncated frame, an oversized frame, a
//! frame naming another actor, undecodable payloads, replies nobody waits
//! for, and a batch mixing good frames with bad entries (its good frames
//! are delivered). Each bad one is a dead letter with its reason, and the
//! node keeps serving.

mod support;

use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use troupe::Props;
use troupe_remote::testing::echo::{Echo, EchoMsg};
use troupe_remote::{wire, DeadLetterReason, Node, RemoteConfig, RemoteMessage};

use support::{dead_letter_probe, next_reason, server, stop, system};

#[derive(Serialize, Deserialize)]
struct Stranger(String);

impl RemoteMessage for Stranger {
    const TAG: &'static str = "stranger.v1";
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_frames_are_dead_letters_and_the_node_keeps_serving() {
    let server = server();
    let sys = system();
    let mut config = RemoteConfig::new(server.url(), "target");
    config.max_frame_size = 4096;
    let node = Node::start(&sys, config).await.unwrap();
    let echo = sys.spawn(Props::new(Echo::default)).unwrap();
    node.publish("echo", &echo).await.unwrap();
    let probe = dead_letter_probe(&node);

    let attacker = async_nats::connect(server.url()).await.unwrap();
    let actor_subject = "troupe.troupe.actor.echo";
    let reply_subject = "troupe.troupe.reply.target";

    let say = wire::encode_tell(0, "echo", &EchoMsg::Say("x".repeat(40))).unwrap();
    let mut wrong_version = say.clone();
    wrong_version[0] = wire::VERSION + 1;
    let mut trailing = say.clone();
    trailing.push(0);
    let mut oversized = say[..say.len() - 41].to_vec();
    oversized.extend(std::iter::repeat_n(b'y', 8192));
    // A Say whose string length claims more than the frame holds.
    let mut bad_payload = wire::encode_tell(0, "echo", &EchoMsg::Say(String::new())).unwrap();
    let last = bad_payload.len() - 1;
    bad_payload[last] = 0x7f;
    let cases: Vec<(&str, Vec<u8>, DeadLetterReason)> = vec![
        (
            actor_subject,
            b"\xde\xad\xbe\xef garbage".to_vec(),
            DeadLetterReason::BadVersion,
        ),
        (actor_subject, vec![], DeadLetterReason::Truncated),
        (
            actor_subject,
            vec![wire::VERSION, 200, 1, 2],
            DeadLetterReason::Malformed,
        ),
        (actor_subject, wrong_version, DeadLetterReason::BadVersion),
        (
            actor_subject,
            wire::encode_tell(0, "echo", &Stranger("who".into())).unwrap(),
            DeadLetterReason::UnknownTag,
        ),
        (
            actor_subject,
            say[..say.len() - 10].to_vec(),
            DeadLetterReason::Truncated,
        ),
        (actor_subject, bad_payload, DeadLetterReason::Truncated),
        (actor_subject, trailing, DeadLetterReason::Undecodable),
        (actor_subject, oversized, DeadLetterReason::Oversized),
        (
            actor_subject,
            wire::encode_tell(0, "someone-else", &EchoMsg::Say("x".into())).unwrap(),
            DeadLetterReason::UnknownName,
        ),
        (
            reply_subject,
            wire::encode_no_reply(12345),
            DeadLetterReason::UnknownReply,
        ),
        (
            reply_subject,
            b"junk".to_vec(),
            DeadLetterReason::BadVersion,
        ),
        (reply_subject, say.clone(), DeadLetterReason::UnknownName),
    ];
    for (subject, bytes, _) in &cases {
        attacker
            .publish(*subject, Bytes::from(bytes.clone()))
            .await
            .unwrap();
    }
    attacker.flush().await.unwrap();
    // Frames on one subject arrive in order; the two subjects are served by
    // different tasks, so compare as multisets.
    let mut got: Vec<String> = (0..cases.len())
        .map(|_| format!("{:?}", next_reason(&probe)))
        .collect();
    let mut want: Vec<String> = cases.iter().map(|(_, _, r)| format!("{r:?}")).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(node.dead_letters_total(), cases.len() as u64);

    // A good frame from the attacker's raw connection is still delivered
    // (only published actors are reachable, and this one is), and the node
    // answers asks as before.
    attacker
        .publish(actor_subject, Bytes::from(say.clone()))
        .await
        .unwrap();
    // A batch: good, garbage, a nested batch, good, then a length that
    // overruns it. The good frames are delivered in order, the rest counted.
    let mut nested = wire::BatchWriter::default();
    nested.push(&say);
    let mut batch = wire::BatchWriter::default();
    batch.push(&wire::encode_tell(0, "echo", &EchoMsg::Say("b1".into())).unwrap());
    batch.push(&[wire::VERSION, 200, 1]);
    batch.push(&nested.finish());
    batch.push(&wire::encode_tell(0, "echo", &EchoMsg::Say("b2".into())).unwrap());
    let mut batch = batch.finish();
    batch.extend_from_slice(&[0x7f, 1, 2]);
    attacker.publish(actor_subject, batch.into()).await.unwrap();
    attacker.flush().await.unwrap();
    for want in [
        DeadLetterReason::Malformed,
        DeadLetterReason::Malformed,
        DeadLetterReason::Truncated,
    ] {
        assert_eq!(next_reason(&probe), want);
    }
    let remote = node.lookup::<EchoMsg>("echo").await.unwrap();
    let history = remote
        .ask(EchoMsg::History, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(history, vec!["x".repeat(40), "b1".into(), "b2".into()]);
    assert!(probe.try_recv().is_err(), "no more dead letters");

    node.shutdown().await;
    stop(sys);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_address_outside_the_cluster_is_refused() {
    let server = server();
    let sys = system();
    let node = Node::start(&sys, RemoteConfig::new(server.url(), "target"))
        .await
        .unwrap();
    let echo = sys.spawn(Props::new(Echo::default)).unwrap();
    node.publish("echo", &echo).await.unwrap();
    let probe = dead_letter_probe(&node);
    let attacker = async_nats::connect(server.url()).await.unwrap();

    // An Echo request (variant 1) whose reply handle points at an arbitrary
    // subject: the node must not publish there.
    let mut frame = wire::encode_tell(0, "echo", &EchoMsg::Say(String::new())).unwrap();
    frame.truncate(frame.len() - 2); // drop the Say payload (variant 0, empty string)
    frame.extend_from_slice(&postcard::to_stdvec(&(1u32, "hi", "elsewhere.inbox", 7u64)).unwrap());
    attacker
        .publish("troupe.troupe.actor.echo", frame.into())
        .await
        .unwrap();
    attacker.flush().await.unwrap();
    assert_eq!(next_reason(&probe), DeadLetterReason::Undecodable);

    node.shutdown().await;
    stop(sys);
}

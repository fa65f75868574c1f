//! The NATS server's `max_payload` against a node's `max_frame_size`: a
//! message the server would not carry is refused before it is published
//! (a counted dead letter, and an ask that carried it fails at once with
//! an error naming the limit), batches never grow past the server's
//! limit, an answer too big for it fails its ask at once too, and the
//! connection is never dropped by the node's own publishing, so
//! everything sent before and after arrives. The limit is learned from
//! the server at connect and again at every reconnect.
//!
//! One test runs the server at its default limits (1 MB); the others set
//! `max_payload` in a config file, since they are about that setting.

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, AskError, Context, Props, ReplyTo};
use troupe_remote::testing::NatsServer;
use troupe_remote::{wire, DeadLetterReason, Node, RemoteConfig, RemoteMessage};

use support::{dead_letter_probe, server, stop, system};

/// Long enough that an ask which fails by timing out is told apart from
/// one refused at once (the tests look at the error, never the clock).
const ASK: Duration = Duration::from_secs(20);

#[derive(Serialize, Deserialize)]
enum SinkMsg {
    /// Remember `seq`; `pad` only makes the message as big as a test needs.
    Put(u32, Vec<u8>),
    /// Answer with the length of `pad`.
    Take(Vec<u8>, ReplyTo<usize>),
    /// Answer with `n` bytes.
    Give(usize, ReplyTo<Vec<u8>>),
    /// Answer with every `seq` put so far, in arrival order.
    Seen(ReplyTo<Vec<u32>>),
}

impl RemoteMessage for SinkMsg {
    const TAG: &'static str = "test.limits.sink.v1";
}

#[derive(Default)]
struct Sink(Vec<u32>);

impl Actor for Sink {
    type Msg = SinkMsg;
    fn receive(&mut self, _ctx: &mut Context<'_, Self>, msg: SinkMsg) {
        match msg {
            SinkMsg::Put(seq, _) => self.0.push(seq),
            SinkMsg::Take(pad, reply) => {
                reply.reply(pad.len());
            }
            SinkMsg::Give(n, reply) => {
                reply.reply(vec![7; n]);
            }
            SinkMsg::Seen(reply) => {
                reply.reply(self.0.clone());
            }
        }
    }
}

/// A `Put(seq, pad)` whose frame, sent to `host`'s "sink", is exactly
/// `bytes` long.
fn put_of_frame_size(host: &Node, seq: u32, bytes: usize) -> SinkMsg {
    let frame = |pad: usize| {
        wire::encode_tell(host.incarnation(), "sink", &SinkMsg::Put(seq, vec![0; pad]))
            .unwrap()
            .len()
    };
    // The pad's length prefix grows with it: settle on the size by trying.
    let mut pad = bytes.saturating_sub(frame(0));
    while frame(pad) > bytes {
        pad -= 1;
    }
    assert_eq!(frame(pad), bytes, "no Put frame of exactly {bytes} bytes");
    SinkMsg::Put(seq, vec![0; pad])
}

/// How many times the node's NATS connection was established (1: never
/// dropped).
fn connects(node: &Node) -> u64 {
    node.nats_client()
        .statistics()
        .connects
        .load(Ordering::Relaxed)
}

/// A server whose config file sets `max_payload`; the file is kept
/// beside it, so that a test can change it and restart the server.
struct LimitedServer {
    server: NatsServer,
    config: tempfile::NamedTempFile,
}

impl LimitedServer {
    fn start(max_payload: usize) -> LimitedServer {
        let config = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(config.path(), format!("max_payload: {max_payload}\n")).unwrap();
        let path = config.path().to_str().unwrap().to_string();
        let server = NatsServer::start_with(&["-c", &path]).unwrap_or_else(|e| panic!("{e}"));
        LimitedServer { server, config }
    }

    /// Restarts the server with another `max_payload`.
    fn restart_with(&mut self, max_payload: usize) {
        std::fs::write(self.config.path(), format!("max_payload: {max_payload}\n")).unwrap();
        self.server.restart().unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Two nodes on `server`: `a` serves a `Sink` as "sink", `b` (configured
/// by `tune`) sends to it.
async fn pair(
    url: &str,
    tune: impl FnOnce(&mut RemoteConfig),
) -> (troupe::ActorSystem, Node, troupe::ActorSystem, Node) {
    let (sys_a, sys_b) = (system(), system());
    let a = Node::start(&sys_a, RemoteConfig::new(url, "a"))
        .await
        .unwrap();
    let mut config = RemoteConfig::new(url, "b");
    tune(&mut config);
    let b = Node::start(&sys_b, config).await.unwrap();
    let sink = sys_a.spawn(Props::new(Sink::default)).unwrap();
    a.publish("sink", &sink).await.unwrap();
    (sys_a, a, sys_b, b)
}

/// An ask's error must be the refusal, naming the server's limit; a
/// timeout means the message vanished.
fn assert_refused_for_size<T: std::fmt::Debug>(result: Result<T, AskError>, what: &str) {
    match result {
        Err(AskError::Refused { reason, .. }) => {
            assert!(reason.contains("max_payload"), "{what}: {reason}");
        }
        other => panic!("{what}: not refused at once for its size: {other:?}"),
    }
}

/// Waits (with a deadline) until the node's messages reach the sink again
/// after a server restart: short asks, each on its own timeout.
async fn until_messaging_resumes(sink: &troupe::ActorRef<SinkMsg>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match sink.ask(SinkMsg::Seen, Duration::from_millis(500)).await {
            Ok(_) => return,
            Err(e) => assert!(Instant::now() < deadline, "messaging did not resume: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_default_max_payload_is_refused_before_publishing() {
    let server = server();
    let (sys_a, a, sys_b, b) = pair(&server.url(), |c| c.max_frame_size = 4 << 20).await;
    let sink = b.lookup::<SinkMsg>("sink").await.unwrap();
    let probe = dead_letter_probe(&b);
    let max = b.nats_client().server_info().max_payload;
    assert_eq!(max, 1024 * 1024, "the server's default max_payload");
    assert_eq!(b.frame_limit(), max);

    for seq in 0..100 {
        sink.tell(SinkMsg::Put(seq, vec![]));
    }
    // Exactly the limit goes; one byte more does not.
    sink.tell(put_of_frame_size(&a, 100, max));
    sink.tell(put_of_frame_size(&a, 101, max + 1));
    assert_eq!(
        probe.recv_timeout(Duration::from_secs(10)),
        Ok(DeadLetterReason::OverMaxPayload)
    );
    let big_ask = sink.ask(|r| SinkMsg::Take(vec![1; max], r), ASK).await;
    assert_refused_for_size(big_ask, "an ask over max_payload");
    assert_eq!(
        probe.recv_timeout(Duration::from_secs(10)),
        Ok(DeadLetterReason::OverMaxPayload)
    );
    for seq in 102..200 {
        sink.tell(SinkMsg::Put(seq, vec![]));
    }
    let seen = sink.ask(SinkMsg::Seen, ASK).await.unwrap();
    let want: Vec<u32> = (0..=100).chain(102..200).collect();
    assert_eq!(seen, want);
    assert_eq!((connects(&a), connects(&b)), (1, 1), "a connection dropped");
    assert_eq!(b.dead_letter_count(DeadLetterReason::OverMaxPayload), 2);
    assert_eq!(b.pending_replies(), 0);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_max_payload_caps_batches_and_refuses_bigger_messages_and_answers() {
    const MAX: usize = 16 * 1024;
    let limited = LimitedServer::start(MAX);
    let (sys_a, a, sys_b, b) = pair(&limited.server.url(), |_| {}).await;
    let sink = b.lookup::<SinkMsg>("sink").await.unwrap();
    let probe_a = dead_letter_probe(&a);
    let probe_b = dead_letter_probe(&b);
    assert_eq!(b.nats_client().server_info().max_payload, MAX);
    assert_eq!(b.frame_limit(), MAX);

    // A burst the writer packs into batches: none may exceed the limit.
    for seq in 0..64 {
        sink.tell(SinkMsg::Put(seq, vec![0; 6000]));
    }
    sink.tell(put_of_frame_size(&a, 64, MAX + 1));
    assert_eq!(
        probe_b.recv_timeout(Duration::from_secs(10)),
        Ok(DeadLetterReason::OverMaxPayload)
    );
    let big_ask = sink.ask(|r| SinkMsg::Take(vec![1; MAX], r), ASK).await;
    assert_refused_for_size(big_ask, "an ask over max_payload");
    // The answer is what is too big: the answering node refuses it and
    // fails the ask at once.
    let big_answer = sink.ask(|r| SinkMsg::Give(MAX, r), ASK).await;
    assert_refused_for_size(big_answer, "an answer over max_payload");
    assert_eq!(
        probe_a.recv_timeout(Duration::from_secs(10)),
        Ok(DeadLetterReason::OverMaxPayload)
    );
    for seq in 65..80 {
        sink.tell(SinkMsg::Put(seq, vec![0; 6000]));
    }
    let seen = sink.ask(SinkMsg::Seen, ASK).await.unwrap();
    let want: Vec<u32> = (0..64).chain(65..80).collect();
    assert_eq!(seen, want);
    assert_eq!((connects(&a), connects(&b)), (1, 1), "a connection dropped");
    let batches = b.batch_stats();
    assert!(batches.messages() < batches.frames, "nothing was batched");

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_is_learned_again_at_every_reconnect() {
    const HIGH: usize = 64 * 1024;
    const LOW: usize = 16 * 1024;
    let mut limited = LimitedServer::start(HIGH);
    let (sys_a, a, sys_b, b) = pair(&limited.server.url(), |_| {}).await;
    let sink = b.lookup::<SinkMsg>("sink").await.unwrap();
    sink.tell(put_of_frame_size(&a, 0, 32 * 1024));
    assert_eq!(sink.ask(SinkMsg::Seen, ASK).await.unwrap(), vec![0]);
    assert_eq!(b.frame_limit(), HIGH);

    // The server comes back with a lower limit: a message between the two
    // is refused, and nothing drops the connection again.
    limited.restart_with(LOW);
    until_messaging_resumes(&sink).await;
    let reconnected = connects(&b);
    assert_eq!(b.frame_limit(), LOW);
    sink.tell(put_of_frame_size(&a, 1, 32 * 1024));
    let ask = sink
        .ask(|r| SinkMsg::Take(vec![1; 32 * 1024], r), ASK)
        .await;
    assert_refused_for_size(ask, "an ask over the lowered max_payload");
    sink.tell(SinkMsg::Put(2, vec![]));
    assert_eq!(sink.ask(SinkMsg::Seen, ASK).await.unwrap(), vec![0, 2]);
    assert_eq!(b.dead_letter_count(DeadLetterReason::OverMaxPayload), 2);
    assert_eq!(connects(&b), reconnected, "the connection dropped");

    // And back up: the same size goes again.
    limited.restart_with(HIGH);
    until_messaging_resumes(&sink).await;
    assert_eq!(b.frame_limit(), HIGH);
    sink.tell(put_of_frame_size(&a, 3, 32 * 1024));
    assert_eq!(sink.ask(SinkMsg::Seen, ASK).await.unwrap(), vec![0, 2, 3]);

    a.shutdown().await;
    b.shutdown().await;
    stop(sys_a);
    stop(sys_b);
}

//! The bench process's side of the remote experiment: connects to the echo
//! process over one transport and drives the workloads (round trips with N
//! in flight, a one-way stream with a flow-control window), checking every
//! answer.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use troupe::{ActorRef, ActorSystem};
use troupe_cluster::sharding::ShardRegion;
use troupe_remote::{BatchStats, Node, RemoteConfig};

use super::echo::sharded_settings;

use super::protocol::{raw, BenchMsg, Received, ECHO, SUBJECT};
use super::Transport;
use crate::runner::WorkloadError;

/// How long one answer may take before the run fails.
const ANSWER: Duration = Duration::from_secs(10);

/// The stream's flow control: a mark (an ask for what has arrived) after
/// every `every` messages, at most `marks` of them unanswered; the sender
/// waits for the oldest before going on. Both transports use the same.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Messages between marks.
    pub every: u64,
    /// Marks in flight at most.
    pub marks: usize,
}

/// Both troupe nodes' batch statistics at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Batches {
    /// The bench node's: requests and the stream.
    pub sent: BatchStats,
    /// The echo node's: the answers.
    pub answers: BatchStats,
}

impl Batches {
    /// What was counted after `earlier`.
    pub fn since(&self, earlier: &Batches) -> Batches {
        Batches {
            sent: self.sent.since(&earlier.sent),
            answers: self.answers.since(&earlier.answers),
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Batches) {
        for (mine, theirs) in [
            (&mut self.sent, &other.sent),
            (&mut self.answers, &other.answers),
        ] {
            mine.frames += theirs.frames;
            for (a, b) in mine.buckets.iter_mut().zip(theirs.buckets) {
                *a += b;
            }
        }
    }
}

/// A connection to the echo process.
pub enum Driver {
    /// A troupe-remote node with a ref to the published echo actor.
    /// For `sharded`, `echo` is an entity's ref through a proxy region.
    Troupe {
        system: ActorSystem,
        node: Arc<Node>,
        region: Option<ShardRegion<BenchMsg>>,
        echo: ActorRef<BenchMsg>,
    },
    /// A plain async-nats client with its reply subscription.
    Nats {
        client: async_nats::Client,
        inbox: String,
        replies: async_nats::Subscriber,
    },
}

fn nats_error(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::new(format!("nats: {e}"))
}

impl Driver {
    /// Connects to the server at `url` (and finds the echo actor); `name`
    /// is the troupe node's name, one per client process.
    pub async fn connect(
        transport: Transport,
        url: &str,
        name: &str,
    ) -> Result<Driver, WorkloadError> {
        match transport {
            Transport::Troupe | Transport::Sharded => {
                let system = ActorSystem::builder()
                    .threads(1)
                    .build()
                    .map_err(|e| WorkloadError::new(e.to_string()))?;
                let node = Node::start(&system, RemoteConfig::new(url, name))
                    .await
                    .map_err(|e| WorkloadError::new(e.to_string()))?;
                let node = Arc::new(node);
                let (region, echo) = if transport == Transport::Sharded {
                    let region = ShardRegion::<BenchMsg>::start_proxy(
                        node.clone(),
                        &system,
                        sharded_settings(),
                    )
                    .await
                    .map_err(|e| WorkloadError::new(e.to_string()))?;
                    let echo = region.entity_ref(ECHO);
                    (Some(region), echo)
                } else {
                    let echo = node
                        .lookup::<BenchMsg>(ECHO)
                        .await
                        .map_err(|e| WorkloadError::new(e.to_string()))?;
                    (None, echo)
                };
                Ok(Driver::Troupe {
                    system,
                    node,
                    region,
                    echo,
                })
            }
            Transport::Nats => {
                let client = async_nats::connect(url).await.map_err(nats_error)?;
                let inbox = client.new_inbox();
                let replies = client.subscribe(inbox.clone()).await.map_err(nats_error)?;
                client.flush().await.map_err(nats_error)?;
                Ok(Driver::Nats {
                    client,
                    inbox,
                    replies,
                })
            }
        }
    }

    /// Dead letters of the troupe node (0 for raw NATS, which has none).
    pub fn dead_letters(&self) -> u64 {
        match self {
            Driver::Troupe { node, .. } => node.dead_letters_total(),
            Driver::Nats { .. } => 0,
        }
    }

    /// `n` round trips with `in_flight` outstanding at any time; the time
    /// of each is pushed to `latencies` (ns). Every answer must be its
    /// request's sequence number.
    pub async fn round_trips(
        &mut self,
        n: u64,
        in_flight: usize,
        payload: &[u8],
        latencies: &mut Vec<u64>,
    ) -> Result<(), WorkloadError> {
        match self {
            Driver::Troupe { echo, .. } => {
                troupe_round_trips(echo, n, in_flight, payload, latencies).await
            }
            Driver::Nats {
                client,
                inbox,
                replies,
            } => nats_round_trips(client, inbox, replies, n, in_flight, payload, latencies).await,
        }
    }

    /// Sends `n` one-way messages with the flow-control `window`; returns
    /// what the receiver saw once the last has arrived.
    pub async fn stream(
        &mut self,
        n: u64,
        payload: &[u8],
        window: Window,
    ) -> Result<Received, WorkloadError> {
        match self {
            Driver::Troupe { echo, .. } => troupe_stream(echo, n, payload, window).await,
            Driver::Nats { client, .. } => nats_stream(client, n, payload, window).await,
        }
    }

    /// How the frames went out so far (troupe only): this node's (the
    /// requests and the stream) and the echo node's (the answers).
    pub async fn batches(&self) -> Result<Option<Batches>, WorkloadError> {
        let Driver::Troupe { node, echo, .. } = self else {
            return Ok(None);
        };
        let (frames, counts) = echo
            .ask(BenchMsg::Batches, ANSWER)
            .await
            .map_err(|e| WorkloadError::new(format!("the echo's batch statistics: {e}")))?;
        let mut answers = BatchStats {
            frames,
            ..BatchStats::default()
        };
        for (bucket, count) in answers.buckets.iter_mut().zip(counts) {
            *bucket = count;
        }
        Ok(Some(Batches {
            sent: node.batch_stats(),
            answers,
        }))
    }

    /// Leaves the cluster (troupe) or closes the connection.
    pub async fn close(self) {
        match self {
            Driver::Troupe {
                system,
                node,
                region,
                ..
            } => {
                if let Some(region) = region {
                    region.leave().await;
                }
                node.shutdown().await;
                system.shutdown();
                let _ = system.await_termination_timeout(Duration::from_secs(30));
            }
            Driver::Nats { client, .. } => {
                let _ = client.drain().await;
            }
        }
    }
}

async fn troupe_round_trips(
    echo: &ActorRef<BenchMsg>,
    n: u64,
    in_flight: usize,
    payload: &[u8],
    latencies: &mut Vec<u64>,
) -> Result<(), WorkloadError> {
    let lanes = in_flight.max(1) as u64;
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..lanes {
        let echo = echo.clone();
        let payload = Bytes::copy_from_slice(payload);
        tasks.spawn(async move {
            let mut times = Vec::with_capacity((n / lanes) as usize);
            let mut seq = lane;
            while seq < n {
                let sent = Instant::now();
                let answer = echo
                    .ask(|r| BenchMsg::Ping(seq, payload.clone(), r), ANSWER)
                    .await
                    .map_err(|e| WorkloadError::new(format!("round trip {seq}: {e}")))?;
                times.push(sent.elapsed().as_nanos() as u64);
                if answer != seq {
                    return Err(WorkloadError::new(format!(
                        "validation failed: round trip {seq} answered {answer}"
                    )));
                }
                seq += lanes;
            }
            Ok(times)
        });
    }
    while let Some(done) = tasks.join_next().await {
        let times = done.map_err(|e| WorkloadError::new(format!("a lane panicked: {e}")))??;
        latencies.extend(times);
    }
    Ok(())
}

async fn troupe_stream(
    echo: &ActorRef<BenchMsg>,
    n: u64,
    payload: &[u8],
    window: Window,
) -> Result<Received, WorkloadError> {
    echo.tell(BenchMsg::Reset);
    let payload = Bytes::copy_from_slice(payload);
    let mut marks = VecDeque::new();
    for seq in 0..n {
        echo.tell(BenchMsg::Data(seq, payload.clone()));
        if (seq + 1) % window.every == 0 {
            marks.push_back(echo.ask(BenchMsg::Mark, ANSWER));
            if marks.len() > window.marks {
                let oldest = marks.pop_front().expect("not empty");
                oldest
                    .await
                    .map_err(|e| WorkloadError::new(format!("stream mark: {e}")))?;
            }
        }
    }
    marks.push_back(echo.ask(BenchMsg::Mark, ANSWER));
    let mut last = Received::default();
    for mark in marks {
        last = mark
            .await
            .map_err(|e| WorkloadError::new(format!("stream mark: {e}")))?;
    }
    Ok(last)
}

async fn nats_round_trips(
    client: &async_nats::Client,
    inbox: &str,
    replies: &mut async_nats::Subscriber,
    n: u64,
    in_flight: usize,
    payload: &[u8],
    latencies: &mut Vec<u64>,
) -> Result<(), WorkloadError> {
    let mut sent_at: Vec<Option<Instant>> = vec![None; n as usize];
    let mut next = 0u64;
    let send = |seq: u64| {
        client.publish_with_reply(
            SUBJECT,
            inbox.to_string(),
            raw::encode(raw::PING, seq, payload).into(),
        )
    };
    while next < n && next < in_flight.max(1) as u64 {
        sent_at[next as usize] = Some(Instant::now());
        send(next).await.map_err(nats_error)?;
        next += 1;
    }
    let mut answered = 0u64;
    while answered < n {
        let msg = tokio::time::timeout(ANSWER, replies.next())
            .await
            .map_err(|_| WorkloadError::new(format!("no answer within {ANSWER:?}")))?
            .ok_or_else(|| WorkloadError::new("the reply subscription ended"))?;
        let seq = raw::number(&msg.payload, 0)
            .ok_or_else(|| WorkloadError::new("validation failed: a malformed answer"))?;
        let started = sent_at
            .get_mut(seq as usize)
            .and_then(Option::take)
            .ok_or_else(|| {
                WorkloadError::new(format!("validation failed: an unexpected answer {seq}"))
            })?;
        latencies.push(started.elapsed().as_nanos() as u64);
        answered += 1;
        if next < n {
            sent_at[next as usize] = Some(Instant::now());
            send(next).await.map_err(nats_error)?;
            next += 1;
        }
    }
    Ok(())
}

async fn nats_stream(
    client: &async_nats::Client,
    n: u64,
    payload: &[u8],
    window: Window,
) -> Result<Received, WorkloadError> {
    let inbox = client.new_inbox();
    let mut marks = client.subscribe(inbox.clone()).await.map_err(nats_error)?;
    client.flush().await.map_err(nats_error)?;
    let mark = || {
        client.publish_with_reply(SUBJECT, inbox.clone(), raw::encode(raw::MARK, 0, &[]).into())
    };
    client
        .publish(SUBJECT, raw::encode(raw::RESET, 0, &[]).into())
        .await
        .map_err(nats_error)?;
    let mut outstanding = 0usize;
    for seq in 0..n {
        client
            .publish(SUBJECT, raw::encode(raw::DATA, seq, payload).into())
            .await
            .map_err(nats_error)?;
        if (seq + 1) % window.every == 0 {
            mark().await.map_err(nats_error)?;
            outstanding += 1;
            if outstanding > window.marks {
                next_mark(&mut marks).await?;
                outstanding -= 1;
            }
        }
    }
    mark().await.map_err(nats_error)?;
    let mut last = Received::default();
    for _ in 0..=outstanding {
        last = next_mark(&mut marks).await?;
    }
    Ok(last)
}

/// The next answer to a mark of the raw-NATS stream.
async fn next_mark(marks: &mut async_nats::Subscriber) -> Result<Received, WorkloadError> {
    let msg = tokio::time::timeout(ANSWER, marks.next())
        .await
        .map_err(|_| WorkloadError::new(format!("no mark answer within {ANSWER:?}")))?
        .ok_or_else(|| WorkloadError::new("the mark subscription ended"))?;
    match (raw::number(&msg.payload, 0), raw::number(&msg.payload, 8)) {
        (Some(count), Some(out_of_order)) => Ok(Received {
            count,
            out_of_order,
        }),
        _ => Err(WorkloadError::new(
            "validation failed: a malformed mark answer",
        )),
    }
}

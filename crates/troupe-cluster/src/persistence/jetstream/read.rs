//! Reading an id's records without a JetStream consumer.
//!
//! A consumer is server state that outlives the read (an ordered consumer
//! lingers until its inactivity threshold), and the server allows 1,000
//! per stream by default: a journal that made one per recovery refused
//! every recovery past the thousandth within that window. Recovery reads
//! with *direct gets* instead (the stream has `allow_direct`), which leave
//! nothing behind on the server, and which the server answers inline
//! rather than through its JetStream API queue (limited to 10,000 pending
//! requests, all dropped when it overflows).
//!
//! - The last record of an id: a direct get `last_by_subj`
//!   ([`Inner::last_record`]). With more than one replica a direct get may
//!   be answered by a replica that lags, so the writes that depend on it
//!   are checked by the stream's leader anyway
//!   (`Nats-Expected-Last-Subject-Sequence`): a stale read makes the
//!   write refused, and the writer then reads from the leader
//!   ([`Inner::last_record_from_leader`], a `STREAM.MSG.GET` request).
//! - Replay: batched direct gets ([`Inner::replay_records`]): one request
//!   `{"seq": from, "next_by_subj": <the id's subject>, "batch": 1000,
//!   "max_bytes": 4 MiB}` to `$JS.API.DIRECT.GET.<stream>`, answered (nats-server
//!   2.11 and later) by the matching messages in stream order, each with
//!   the headers `Nats-Sequence` and `Nats-Num-Pending` (matching messages
//!   left after it), then an end-of-batch message with status `204 EOB` and
//!   `Nats-Num-Pending`; a `404` status if nothing matches at or after
//!   `seq`. A server before 2.11 ignores `batch` and answers one message
//!   without `Nats-Num-Pending`; the replay then asks for the next one, and
//!   so on. A snapshot and a short tail take one request. While no
//!   replica serves direct gets (a `503` status: for a moment after a
//!   restart, replicas catch up first) the replay asks the leader, one
//!   record per `STREAM.MSG.GET` request.

use std::time::Duration;

use async_nats::jetstream::stream::{DirectGetErrorKind, LastRawMessageErrorKind};
use async_nats::{Message, StatusCode};
use futures_util::StreamExt;

use super::write::{decode, Record};
use super::{failed, Inner, PersistenceError, TRIES};

/// Records asked for per direct get request.
const BATCH: usize = 1000;

/// Bytes asked for per direct get request (the server stops after the
/// record that reaches it; a record is at most `max_payload`).
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// How long the replay waits for each message of a batch.
const BATCH_WAIT: Duration = Duration::from_secs(5);

/// How often a batch that got no answer is asked for again (the replay
/// blocks an actor's thread meanwhile: a server that does not answer
/// fails the recovery after about 15 s).
const BATCH_TRIES: u32 = 3;

/// One stored record: its stream sequence and contents.
pub(super) type Stored = (u64, Record);

/// What one batched direct get answered.
struct Batch {
    records: Vec<Stored>,
    /// Matching messages left after the batch (`None`: a server that
    /// does not batch, which answered one message).
    pending: Option<u64>,
    /// Whether any replica answers direct gets (none does for a moment
    /// after a restart, while they catch up: the leader is asked then).
    served: bool,
}

impl Inner {
    /// The id's last record and its stream sequence, from whichever
    /// replica answers a direct get (see the module header); from the
    /// leader if no replica answers (direct gets pause while replicas
    /// catch up after a restart).
    pub(super) async fn last_record(&self, id: &str) -> Result<Option<Stored>, PersistenceError> {
        match self
            .stream
            .direct_get_last_for_subject(self.subject(id))
            .await
        {
            Ok(message) => Ok(Some((message.sequence, decode(id, &message.payload)?))),
            Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
            Err(_) => self.last_record_from_leader(id).await,
        }
    }

    /// The id's last record as the stream's leader has it.
    pub(super) async fn last_record_from_leader(
        &self,
        id: &str,
    ) -> Result<Option<Stored>, PersistenceError> {
        match self
            .stream
            .get_last_raw_message_by_subject(&self.subject(id))
            .await
        {
            Ok(message) => Ok(Some((message.sequence, decode(id, &message.payload)?))),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(failed("read the last record", e)),
        }
    }

    /// Hands `each` every record of `id` from stream sequence `from` on,
    /// in order, reading at least up to sequence `through` (the last
    /// record this process knows of: a lagging replica that ends short of
    /// it is asked again, then the leader is).
    pub(super) async fn replay_records(
        &self,
        id: &str,
        from: u64,
        through: u64,
        each: &mut (impl FnMut(u64, &Record) -> Result<(), PersistenceError> + ?Sized),
    ) -> Result<(), PersistenceError> {
        let mut next = from.max(1);
        let mut short = 0;
        loop {
            let batch = self.direct_batch(id, next).await?;
            if !batch.served {
                return self.replay_from_leader(id, next, through, each).await;
            }
            for (sequence, record) in &batch.records {
                each(*sequence, record)?;
                next = sequence + 1;
            }
            match batch.pending {
                // More to read.
                Some(p) if p > 0 => continue,
                None if !batch.records.is_empty() => continue,
                _ => {}
            }
            if next > through {
                return Ok(());
            }
            // The answering replica has not caught up with a record this
            // process wrote or read: ask again, then ask the leader.
            short += 1;
            if short < TRIES {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            return self.replay_from_leader(id, next, through, each).await;
        }
    }

    /// The rest of a replay, one record per request to the leader.
    async fn replay_from_leader(
        &self,
        id: &str,
        mut next: u64,
        through: u64,
        each: &mut (impl FnMut(u64, &Record) -> Result<(), PersistenceError> + ?Sized),
    ) -> Result<(), PersistenceError> {
        use async_nats::jetstream::stream::RawMessageErrorKind;
        let subject = self.subject(id);
        loop {
            match self
                .stream
                .get_first_raw_message_by_subject(&subject, next)
                .await
            {
                Ok(message) => {
                    each(message.sequence, &decode(id, &message.payload)?)?;
                    next = message.sequence + 1;
                }
                Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => {
                    return if next > through {
                        Ok(())
                    } else {
                        Err(failed(
                            "replay",
                            format!(
                                "the stream's leader has no record of the id at or after \
                                 sequence {next}, but this process saw one at {through}"
                            ),
                        ))
                    };
                }
                Err(e) => return Err(failed("replay", e)),
            }
        }
    }

    /// One batched direct get of `id`'s records from `from`, retried when
    /// no answer comes (a reconnect loses it).
    async fn direct_batch(&self, id: &str, from: u64) -> Result<Batch, PersistenceError> {
        let mut tries = 0;
        loop {
            match self.try_direct_batch(id, from).await {
                Ok(batch) => return Ok(batch),
                Err(e) if tries + 1 >= BATCH_TRIES => return Err(e),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    async fn try_direct_batch(&self, id: &str, from: u64) -> Result<Batch, PersistenceError> {
        let inbox = self.client.new_inbox();
        let mut replies = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| failed("replay", e))?;
        // The subject holds only `A-Z a-z 0-9 - _ . =`: nothing to escape
        // in JSON.
        let request = format!(
            r#"{{"seq":{from},"next_by_subj":"{}","batch":{BATCH},"max_bytes":{BATCH_BYTES}}}"#,
            self.subject(id)
        );
        self.js
            .send_request(
                format!("DIRECT.GET.{}", self.stream_name),
                async_nats::Request::new()
                    .payload(request.into())
                    .inbox(inbox),
            )
            .await
            .map_err(|e| failed("replay", e))?;
        let mut records = Vec::new();
        loop {
            let message = tokio::time::timeout(BATCH_WAIT, replies.next())
                .await
                .map_err(|_| failed("replay", "no answer to a direct get"))?
                .ok_or_else(|| failed("replay", "the connection closed"))?;
            match message.status {
                // 204: the end of the batch.
                Some(status) if status.as_u16() == 204 => {
                    let pending = header_u64(&message, "Nats-Num-Pending");
                    return Ok(Batch {
                        records,
                        pending: Some(pending.unwrap_or(0)),
                        served: true,
                    });
                }
                Some(StatusCode::NOT_FOUND) => {
                    return Ok(Batch {
                        records,
                        pending: Some(0),
                        served: true,
                    })
                }
                Some(StatusCode::NO_RESPONDERS) => {
                    return Ok(Batch {
                        records,
                        pending: Some(0),
                        served: false,
                    })
                }
                Some(status) if status != StatusCode::OK => {
                    return Err(failed(
                        "replay",
                        format!(
                            "the direct get was refused: {status} {}",
                            message.description.as_deref().unwrap_or("")
                        ),
                    ))
                }
                _ => {}
            }
            let sequence = header_u64(&message, "Nats-Sequence")
                .ok_or_else(|| failed("replay", "a direct get reply without Nats-Sequence"))?;
            let batched = header_u64(&message, "Nats-Num-Pending").is_some();
            records.push((sequence, decode(id, &message.payload)?));
            if !batched {
                // A server before 2.11: one message per request.
                return Ok(Batch {
                    records,
                    pending: None,
                    served: true,
                });
            }
        }
    }
}

fn header_u64(message: &Message, name: &str) -> Option<u64> {
    message
        .headers
        .as_ref()?
        .get(name)?
        .as_str()
        .trim()
        .parse()
        .ok()
}

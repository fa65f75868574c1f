//! An id's records: their layout, and taking a token (reading the id's
//! last record, then writing a fence after it). Appends go through the
//! journal's writer (`writer.rs`); every write is measured against the
//! server's `max_payload` before it is sent (see `limits.rs`).

use std::time::Duration;

use async_nats::jetstream::context::PublishErrorKind;
use serde::{Deserialize, Serialize};

use super::limits::{check_payload, header_bytes};
use super::{failed, Done, Inner, PersistenceError, TRIES};

/// The header every write carries: the server refuses the write if the
/// subject's last record is not the one named.
pub(super) const EXPECTED_LAST: &str = "Nats-Expected-Last-Subject-Sequence";

/// One stored record (the payload of one stream message).
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Record {
    /// The writer's token.
    pub(super) token: u64,
    /// The id's last sequence number after this record.
    pub(super) last_seq_nr: u64,
    /// The events (none: a fence).
    pub(super) events: Vec<Vec<u8>>,
}

/// What this process knows of an id: what its last write returned.
#[derive(Clone, Copy, Default)]
pub(super) struct IdState {
    /// The stream sequence of the id's last record (0: none).
    pub(super) last_record: u64,
    pub(super) seq_nr: u64,
    pub(super) token: u64,
    pub(super) snapshot_seq_nr: u64,
}

/// A write of one id, queued for the journal's writer.
pub(super) enum Write {
    Acquire(Option<u64>, Done<u64>),
    Append {
        token: u64,
        first_seq_nr: u64,
        events: Vec<Vec<u8>>,
        done: Done<u64>,
    },
}

pub(super) fn decode(id: &str, payload: &[u8]) -> Result<Record, PersistenceError> {
    postcard::from_bytes(payload).map_err(|e| PersistenceError::Decode {
        persistence_id: id.to_string(),
        what: "record",
        reason: e.to_string(),
    })
}

/// Whether a publish error is the server's verdict on the message (it
/// answered, and refused it: nothing was stored) rather than no answer.
fn refused_by_server(e: &async_nats::jetstream::context::PublishError) -> bool {
    use std::error::Error;
    e.kind() == PublishErrorKind::Other
        && e.source()
            .is_some_and(|s| s.is::<async_nats::jetstream::Error>())
}

impl Inner {
    /// Publishes `record` (a fence: appends go through the writer) to the
    /// id's subject if its last record is still `expected` (0: none): `Ok(Some(sequence))`, or `Ok(None)` if the
    /// subject moved on. A record over the server's `max_payload` is
    /// refused here, unsent; a publish without a verdict is tried again.
    pub(super) async fn publish(
        &self,
        id: &str,
        record: &Record,
        expected: u64,
    ) -> Result<Option<u64>, PersistenceError> {
        let payload = postcard::to_allocvec(record).map_err(|e| failed("encode a record", e))?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(EXPECTED_LAST, expected.to_string().as_str());
        let size = header_bytes(&headers) + payload.len();
        let mut tries = 0;
        loop {
            // Again at every try: a reconnect may have brought another
            // server, with another limit.
            check_payload(&self.client, id, "event record", size)?;
            let sent = self
                .js
                .publish_with_headers(self.subject(id), headers.clone(), payload.clone().into())
                .await;
            let acked = match sent {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            match acked {
                Ok(ack) => return Ok(Some(ack.sequence)),
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    // Moved on: by another writer, or by an earlier try of
                    // ours whose acknowledgement was lost. Only the leader
                    // can tell which.
                    return match self.last_record_from_leader(id).await? {
                        Some((seq, last))
                            if tries > 0
                                && last.token == record.token
                                && last.last_seq_nr == record.last_seq_nr
                                && last.events.len() == record.events.len() =>
                        {
                            Ok(Some(seq))
                        }
                        _ => Ok(None),
                    };
                }
                Err(e) if refused_by_server(&e) => {
                    return Err(failed("append (the server refused it)", e))
                }
                Err(e) if tries + 1 >= TRIES => return Err(failed("append", e)),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// Takes a token for `id` (see [`Journal::acquire`](super::Journal::acquire)):
    /// reads the id's last record, then writes a fence after it. The first
    /// read is a direct get; if the fence is refused because the subject
    /// moved (another activation, or a replica that lagged), the next
    /// reads ask the leader.
    pub(super) async fn acquire(
        &self,
        id: &str,
        wanted: Option<u64>,
    ) -> Result<IdState, PersistenceError> {
        for attempt in 0..TRIES {
            let last = if attempt == 0 {
                self.last_record(id).await?
            } else {
                self.last_record_from_leader(id).await?
            };
            let (last_record, highest, seq_nr) = match last {
                Some((seq, record)) => (seq, record.token, record.last_seq_nr),
                None => (0, 0, 0),
            };
            let token = match wanted {
                None => highest + 1,
                Some(t) if t < highest => {
                    return Err(PersistenceError::Fenced {
                        persistence_id: id.to_string(),
                        token: t,
                        highest,
                    })
                }
                Some(t) => t,
            };
            let fence = Record {
                token,
                last_seq_nr: seq_nr,
                events: Vec::new(),
            };
            if let Some(written) = self.publish(id, &fence, last_record).await? {
                return Ok(IdState {
                    last_record: written,
                    seq_nr,
                    token,
                    snapshot_seq_nr: 0,
                });
            }
            // The subject moved since the read: look again.
        }
        Err(failed(
            "take a token",
            "the id's subject kept moving under concurrent activations",
        ))
    }
}

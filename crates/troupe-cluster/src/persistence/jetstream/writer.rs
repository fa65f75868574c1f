//! The journal's writer: one task per journal takes every id's appends,
//! publishes them back to back, and gathers their acknowledgements on one
//! subscription.
//!
//! # Why one task, not one per id
//!
//! A JetStream write is a publish with a reply subject; the server answers
//! on it with the record's stream sequence. The client library's publish
//! makes a request per write (a reply token, a one-shot channel, a timer)
//! and each id's task woke, awaited and published on its own; measured on
//! the 2-core machine of docs/experiments.md with 256 writes in flight
//! over 1,000 subjects, that cost about 21 us of client CPU and 25 us of
//! server CPU a write (36-41k writes/s), because the writes trickled out
//! one per wake-up in small TCP segments. Here the writer publishes every
//! write that is ready in one burst (the client library coalesces them
//! into one socket write), with a reply subject under one wildcard
//! subscription of its own; acknowledgements arrive on that subscription
//! and are handled in the same loop, which then publishes the next
//! writes of those ids, again in one burst. The same measurement gave
//! 5 us of client and 14 us of server CPU a write (66-77k writes/s).
//!
//! # Order and fencing per id
//!
//! An id has at most one record in flight: its next record names the
//! previous one's stream sequence in `Nats-Expected-Last-Subject-Sequence`
//! (see the module header of `mod.rs`), which is only known once the
//! previous one is acknowledged. Appends of an id that queue up meanwhile
//! (a journal user that appends again before the first append's answer)
//! go out together as one record, stored and acknowledged as a unit, up to
//! the server's `max_payload`. Taking a token (`acquire`) reads the id's
//! last record first, so it runs as a task of its own (`write.rs`), and
//! the id's appends wait behind it.
//!
//! # Without an answer
//!
//! A write with no acknowledgement after [`ACK_WAIT`], or answered "no
//! responders" (the stream has no leader for a moment), is published again
//! (at most [`TRIES`] times), naming the same previous
//! record: if an earlier try was stored after all, the server refuses the
//! new one as out of date, and the writer asks the stream's leader whether
//! the id's last record is its own (then the write succeeded) or another
//! activation's (then it is fenced).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::{HeaderMap, Message, StatusCode};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::limits::{check_payload, header_bytes};
use super::read::Stored;
use super::write::{IdState, Record, Write, EXPECTED_LAST};
use super::{failed, Done, Inner, PersistenceError, TRIES};

/// How long a write waits for its acknowledgement before it is sent
/// again (the client library's default for a JetStream publish).
const ACK_WAIT: Duration = Duration::from_secs(5);

/// How long a write answered "no responders" waits before it is sent
/// again.
const RESEND_AFTER: Duration = Duration::from_millis(50);

/// How often the writer looks for writes whose wait is over.
const SWEEP: Duration = Duration::from_millis(25);

/// The server's error code for a write refused because the subject's last
/// record is not the one it names.
const WRONG_LAST_SEQUENCE: u32 = 10071;

/// A write of one id, as queued for the writer.
pub(super) struct Request {
    pub(super) id: String,
    pub(super) state: Arc<Mutex<IdState>>,
    pub(super) write: Write,
}

/// An id with writes queued or in flight.
struct Queue {
    state: Arc<Mutex<IdState>>,
    writes: VecDeque<Write>,
    /// A record in flight, or a token being taken.
    busy: bool,
}

/// One record on its way: sent and waiting for its acknowledgement, or
/// waiting to be sent again.
struct Pending {
    id: String,
    token: u64,
    last_seq_nr: u64,
    events: usize,
    payload: Bytes,
    headers: HeaderMap,
    size: usize,
    /// The appends the record carries, answered together.
    dones: Vec<Done<u64>>,
    /// Tries sent before this one.
    tries: u32,
    deadline: Instant,
    /// Waiting to be sent again at `deadline` (not sent yet).
    resend: bool,
}

/// What a task the writer started reports back.
enum Report {
    /// A token was taken (or not) for the id.
    Acquired {
        id: String,
        result: Result<IdState, PersistenceError>,
        done: Done<u64>,
    },
    /// The stream's leader said what the id's last record is, after a
    /// write was refused as out of date.
    Checked {
        pending: Pending,
        last: Result<Option<Stored>, PersistenceError>,
    },
}

/// A JetStream publish acknowledgement (the fields the writer reads).
#[derive(Deserialize)]
struct Ack {
    seq: Option<u64>,
    error: Option<AckError>,
}

#[derive(Deserialize)]
struct AckError {
    #[serde(default)]
    err_code: u32,
    #[serde(default)]
    description: String,
}

/// What an acknowledgement says about a write.
enum Verdict {
    Stored(u64),
    OutOfDate,
    Refused(String),
    /// No verdict: send again.
    Unanswered,
}

fn verdict(message: &Message) -> Verdict {
    if message.status.is_some_and(|s| s != StatusCode::OK) {
        // "No responders": no stream leader took the write, so nothing
        // was stored.
        return Verdict::Unanswered;
    }
    // A refusal carries `"seq": 0` beside its error: the error decides.
    match serde_json::from_slice::<Ack>(&message.payload) {
        Ok(Ack { error: Some(e), .. }) if e.err_code == WRONG_LAST_SEQUENCE => Verdict::OutOfDate,
        Ok(Ack { error: Some(e), .. }) => Verdict::Refused(e.description),
        Ok(Ack {
            seq: Some(seq @ 1..),
            ..
        }) => Verdict::Stored(seq),
        _ => Verdict::Unanswered,
    }
}

/// Runs the writer of `inner`'s journal until `requests` closes and
/// every write has its answer.
pub(super) async fn run(inner: Arc<Inner>, mut requests: mpsc::UnboundedReceiver<Request>) {
    let inbox = inner.client.new_inbox();
    let mut acks = match inner.client.subscribe(format!("{inbox}.*")).await {
        Ok(acks) => acks,
        Err(e) => {
            // The connection is closed: no write can be made.
            while let Some(request) = requests.recv().await {
                fail_write(request.write, failed("append", &e));
            }
            return;
        }
    };
    let (reports, mut reported) = mpsc::unbounded_channel();
    let mut writer = Writer {
        inner,
        reply_prefix: format!("{inbox}."),
        ids: HashMap::new(),
        in_flight: HashMap::new(),
        next_reply: 0,
        ready: Vec::new(),
        resend: Vec::new(),
        reports,
        tasks: 0,
    };
    let mut sweep = tokio::time::interval(SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut open = true;
    while open || !writer.in_flight.is_empty() || writer.tasks > 0 {
        tokio::select! {
            request = requests.recv(), if open => match request {
                Some(request) => writer.queue(request),
                None => open = false,
            },
            ack = acks.next() => match ack {
                Some(ack) => writer.acknowledged(ack),
                None => {
                    writer.fail_all(failed("append", "the NATS connection closed"));
                    requests.close();
                    while let Some(request) = requests.recv().await {
                        fail_write(request.write, failed("append", "the NATS connection closed"));
                    }
                    return;
                }
            },
            Some(report) = reported.recv() => writer.reported(report),
            _ = sweep.tick(), if !writer.in_flight.is_empty() => writer.sweep(),
        }
        // Take everything else that is ready before sending, so that the
        // writes that follow go out in one burst.
        while let Some(Some(ack)) = acks.next().now_or_never() {
            writer.acknowledged(ack);
        }
        while let Ok(report) = reported.try_recv() {
            writer.reported(report);
        }
        while let Ok(request) = requests.try_recv() {
            writer.queue(request);
        }
        writer.send_ready().await;
    }
}

fn fail_write(write: Write, error: PersistenceError) {
    match write {
        Write::Acquire(_, done) | Write::Append { done, .. } => done(Err(error)),
    }
}

struct Writer {
    inner: Arc<Inner>,
    /// `<inbox>.`: a write's reply subject is this and its number.
    reply_prefix: String,
    ids: HashMap<String, Queue>,
    /// Records on their way, by the number in their reply subject.
    in_flight: HashMap<u64, Pending>,
    next_reply: u64,
    /// Ids that may have a write to start.
    ready: Vec<String>,
    /// Records to send again now.
    resend: Vec<Pending>,
    reports: mpsc::UnboundedSender<Report>,
    /// Tasks started and not yet reported.
    tasks: usize,
}

impl Writer {
    fn queue(&mut self, request: Request) {
        let queue = self.ids.entry(request.id.clone()).or_insert_with(|| Queue {
            state: request.state,
            writes: VecDeque::new(),
            busy: false,
        });
        queue.writes.push_back(request.write);
        if !queue.busy {
            self.ready.push(request.id);
        }
    }

    /// The id's write is done: its next one may start.
    fn idle(&mut self, id: String) {
        if let Some(queue) = self.ids.get_mut(&id) {
            queue.busy = false;
            if queue.writes.is_empty() {
                self.ids.remove(&id);
            } else {
                self.ready.push(id);
            }
        }
    }

    fn acknowledged(&mut self, ack: Message) {
        let Some(number) = ack
            .subject
            .strip_prefix(self.reply_prefix.as_str())
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return;
        };
        // An answer to a try given up on (its wait was over) is ignored:
        // the try sent after it finds out what happened.
        let Some(pending) = self.in_flight.remove(&number) else {
            return;
        };
        match verdict(&ack) {
            Verdict::Stored(sequence) => self.stored(pending, sequence),
            Verdict::OutOfDate => self.check_with_leader(pending),
            Verdict::Refused(reason) => {
                let error = failed("append (the server refused it)", reason);
                self.answer(pending, Err(error));
            }
            Verdict::Unanswered => self.send_later(pending, RESEND_AFTER),
        }
    }

    fn stored(&mut self, pending: Pending, sequence: u64) {
        // Reads made ahead before this record (an append queued behind the
        // token) no longer hold the id's end.
        self.inner.prefetch.forget(&pending.id);
        if let Some(queue) = self.ids.get(&pending.id) {
            let mut state = queue.state.lock().unwrap_or_else(|e| e.into_inner());
            *state = IdState {
                last_record: sequence,
                seq_nr: pending.last_seq_nr,
                token: pending.token,
                ..*state
            };
        }
        self.answer(pending, Ok(sequence));
    }

    fn answer(&mut self, pending: Pending, result: Result<u64, PersistenceError>) {
        for done in pending.dones {
            done(result.clone());
        }
        self.idle(pending.id);
    }

    /// Asks the leader what the id's last record is (a task: the answer
    /// comes back as a report).
    fn check_with_leader(&mut self, pending: Pending) {
        let inner = self.inner.clone();
        let reports = self.reports.clone();
        self.tasks += 1;
        self.inner.runtime.spawn(async move {
            let last = inner.last_record_from_leader(&pending.id).await;
            let _ = reports.send(Report::Checked { pending, last });
        });
    }

    fn reported(&mut self, report: Report) {
        self.tasks -= 1;
        match report {
            Report::Acquired { id, result, done } => {
                match result {
                    Ok(acquired) => {
                        if let Some(queue) = self.ids.get(&id) {
                            let mut state = queue.state.lock().unwrap_or_else(|e| e.into_inner());
                            *state = IdState {
                                snapshot_seq_nr: state.snapshot_seq_nr,
                                ..acquired
                            };
                        }
                        done(Ok(acquired.token));
                    }
                    Err(e) => done(Err(e)),
                }
                self.idle(id);
            }
            Report::Checked { pending, last } => match last {
                // An earlier try of this record was stored after all
                // (its acknowledgement was lost).
                Ok(Some((sequence, last)))
                    if pending.tries > 0
                        && last.token == pending.token
                        && last.last_seq_nr == pending.last_seq_nr
                        && last.events.len() == pending.events =>
                {
                    self.stored(pending, sequence)
                }
                Err(e) => self.answer(pending, Err(e)),
                // Someone wrote to the id since this activation's last
                // record: a newer activation's fence, in this process or
                // another.
                Ok(last) => {
                    let mut highest = pending.token;
                    if let Some(queue) = self.ids.get(&pending.id) {
                        let mut state = queue.state.lock().unwrap_or_else(|e| e.into_inner());
                        highest = last.map_or(state.token, |(_, l)| l.token.max(state.token));
                        state.token = highest;
                    }
                    let error = PersistenceError::Fenced {
                        persistence_id: pending.id.clone(),
                        token: pending.token,
                        highest,
                    };
                    self.answer(pending, Err(error));
                }
            },
        }
    }

    /// Sends again the writes whose wait is over.
    fn sweep(&mut self) {
        let now = Instant::now();
        let due: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(n, _)| *n)
            .collect();
        for number in due {
            let Some(pending) = self.in_flight.remove(&number) else {
                continue;
            };
            if pending.resend {
                self.resend.push(pending);
            } else {
                // No answer within ACK_WAIT: the write may or may not be
                // stored; the next try finds out.
                self.send_later(pending, Duration::ZERO);
            }
        }
    }

    fn send_later(&mut self, mut pending: Pending, after: Duration) {
        pending.tries += 1;
        if pending.tries >= TRIES {
            let error = failed("append", "no answer from the server after every try");
            return self.answer(pending, Err(error));
        }
        if after.is_zero() {
            return self.resend.push(pending);
        }
        pending.resend = true;
        pending.deadline = Instant::now() + after;
        let number = self.number();
        self.in_flight.insert(number, pending);
    }

    fn number(&mut self) -> u64 {
        self.next_reply += 1;
        self.next_reply
    }

    fn fail_all(&mut self, error: PersistenceError) {
        for (_, pending) in std::mem::take(&mut self.in_flight) {
            for done in pending.dones {
                done(Err(error.clone()));
            }
        }
        for (_, queue) in std::mem::take(&mut self.ids) {
            for write in queue.writes {
                fail_write(write, error.clone());
            }
        }
    }
}

impl Writer {
    /// Sends what is ready: records to send again, then the next record
    /// of every id that may have one.
    async fn send_ready(&mut self) {
        for pending in std::mem::take(&mut self.resend) {
            self.send(pending).await;
        }
        for id in std::mem::take(&mut self.ready) {
            if let Some(pending) = self.next_record(id) {
                self.send(pending).await;
            }
        }
    }

    async fn send(&mut self, mut pending: Pending) {
        // Again at every try: a reconnect may have brought another server,
        // with another limit.
        let size = pending.size;
        if let Err(e) = check_payload(&self.inner.client, &pending.id, "event record", size) {
            return self.answer(pending, Err(e));
        }
        let number = self.number();
        let sent = self
            .inner
            .client
            .publish_with_reply_and_headers(
                self.inner.subject(&pending.id),
                format!("{}{number}", self.reply_prefix),
                pending.headers.clone(),
                pending.payload.clone(),
            )
            .await;
        pending.resend = false;
        match sent {
            Ok(()) => {
                pending.deadline = Instant::now() + ACK_WAIT;
                self.in_flight.insert(number, pending);
            }
            Err(_) => self.send_later(pending, RESEND_AFTER),
        }
    }

    /// The id's next record, if it is idle and has appends queued; a token
    /// to take starts its task instead. Appends that cannot be written
    /// (fenced, or not following the id's last sequence number) are
    /// answered here.
    fn next_record(&mut self, id: String) -> Option<Pending> {
        let queue = self.ids.get_mut(&id)?;
        if queue.busy {
            return None;
        }
        if let Some(Write::Acquire(..)) = queue.writes.front() {
            let Some(Write::Acquire(wanted, done)) = queue.writes.pop_front() else {
                unreachable!("the front was an acquire");
            };
            queue.busy = true;
            self.tasks += 1;
            let inner = self.inner.clone();
            let reports = self.reports.clone();
            self.inner.runtime.spawn(async move {
                let result = inner.acquire(&id, wanted).await;
                if let Ok(acquired) = &result {
                    // Recovery's reads, here where every entity's run side
                    // by side (`prefetch.rs`).
                    inner.prefetch(&id, acquired.last_record).await;
                }
                let _ = reports.send(Report::Acquired { id, result, done });
            });
            return None;
        }
        let state = *queue.state.lock().unwrap_or_else(|e| e.into_inner());
        let limit = self.inner.client.server_info().max_payload;
        let mut headers = HeaderMap::new();
        headers.insert(EXPECTED_LAST, state.last_record.to_string().as_str());
        let header = header_bytes(&headers);
        let mut token = None;
        let mut events: Vec<Vec<u8>> = Vec::new();
        let mut dones: Vec<Done<u64>> = Vec::new();
        let mut last_seq_nr = state.seq_nr;
        while let Some(Write::Append {
            token: t,
            first_seq_nr,
            events: more,
            ..
        }) = queue.writes.front()
        {
            let (t, first_seq_nr) = (*t, *first_seq_nr);
            let fits = |events: &[Vec<u8>]| {
                let all = events.iter().chain(more.iter());
                let size = header + record_size(t, last_seq_nr + more.len() as u64, all);
                limit == 0 || size <= limit
            };
            // Together with the appends taken so far, if they fit in one
            // message; the first is taken whatever its size (`send`
            // refuses it if it is too large).
            let joins = dones.is_empty() || (token == Some(t) && fits(&events));
            if t >= state.token && first_seq_nr == last_seq_nr + 1 && !joins {
                break;
            }
            let Some(Write::Append {
                events: more, done, ..
            }) = queue.writes.pop_front()
            else {
                unreachable!("the front was an append");
            };
            if t < state.token {
                done(Err(PersistenceError::Fenced {
                    persistence_id: id.clone(),
                    token: t,
                    highest: state.token,
                }));
            } else if first_seq_nr != last_seq_nr + 1 {
                done(Err(PersistenceError::SequenceMismatch {
                    persistence_id: id.clone(),
                    expected: first_seq_nr,
                    actual: last_seq_nr + 1,
                }));
            } else {
                token = Some(t);
                last_seq_nr += more.len() as u64;
                events.extend(more);
                dones.push(done);
            }
        }
        let Some(token) = token else {
            // Every queued append was answered.
            self.idle(id);
            return None;
        };
        queue.busy = true;
        let record = Record {
            token,
            last_seq_nr,
            events,
        };
        let payload = match postcard::to_allocvec(&record) {
            Ok(payload) => payload,
            Err(e) => {
                for done in dones {
                    done(Err(failed("encode a record", &e)));
                }
                self.idle(id);
                return None;
            }
        };
        Some(Pending {
            id,
            token,
            last_seq_nr,
            events: record.events.len(),
            size: header + payload.len(),
            payload: payload.into(),
            headers,
            dones,
            tries: 0,
            deadline: Instant::now(),
            resend: false,
        })
    }
}

/// The bytes postcard encodes a [`Record`] of these events into (each
/// integer and length a LEB128 varint).
fn record_size<'a>(
    token: u64,
    last_seq_nr: u64,
    events: impl Iterator<Item = &'a Vec<u8>>,
) -> usize {
    let varint = |n: u64| (64 - n.leading_zeros() as usize).div_ceil(7).max(1);
    let mut count = 0;
    let mut bytes = 0;
    for event in events {
        count += 1;
        bytes += varint(event.len() as u64) + event.len();
    }
    varint(token) + varint(last_seq_nr) + varint(count) + bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_size_is_postcards_encoding() {
        for (token, last, sizes) in [
            (1u64, 0u64, vec![]),
            (3, 127, vec![0usize, 1, 127]),
            (300, 1 << 40, vec![128, 16_384, 5]),
            (u64::MAX, u64::MAX, vec![2_000_000]),
        ] {
            let events: Vec<Vec<u8>> = sizes.iter().map(|n| vec![7u8; *n]).collect();
            let record = Record {
                token,
                last_seq_nr: last,
                events: events.clone(),
            };
            let encoded = postcard::to_allocvec(&record).unwrap();
            assert_eq!(record_size(token, last, events.iter()), encoded.len());
        }
    }
}

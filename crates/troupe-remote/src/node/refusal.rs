//! What comes back on the reply subject of a message a node sent to an
//! actor, and the receiving node's side of sending it.
//!
//! ```text
//! troupe.<cluster>.noreply.<node>.t                        a message of tells only
//! troupe.<cluster>.noreply.<node>.<id>-<i>.<id>-<i>…       a message carrying asks: ask <id> is in frame <i>
//! ```
//!
//! The sending node's writer puts one of these on every message for an
//! actor (`node/tasks.rs`); only the sending node reads what comes back:
//!
//! * the server's **no responders** status (empty payload): nobody is
//!   subscribed to the subject. The asks in the message fail at once with
//!   `Unreachable`, and the message is a `NoResponders` dead letter.
//! * a **wrong-incarnation refusal**, `R ++ u64 LE incarnation ++ node`:
//!   the frames named a past incarnation of the node that now serves the
//!   subject (sent for messages carrying asks only; see `node/tasks.rs`).
//! * a **frames refusal**, `F`, from the receiving node:
//!   `str(node) str(subject) varint(n) (varint(frame) u8(reason) str(detail))* varint(unlisted)`,
//!   for frames it would not deliver because of what they carry: a tag
//!   its actor does not take, a payload it cannot decode (version skew),
//!   a message over its own `max_frame_size` (frame `u64::MAX`: the
//!   whole message), or a published actor at its inbound bound
//!   (`MailboxFull`, `RemoteConfig::inbound_limit`). An empty detail repeats the one before. The sending
//!   node counts each as a dead letter with its reason, logs it, and fails
//!   the asks of those frames at once with `AskError::Refused` and the
//!   detail.
//!
//! The receiving node counts and logs each refused frame itself (the log
//! at most once a second, with the number of lines left out), and sends a
//! refusal only to a node of its own cluster (a reply subject under
//! `troupe.<cluster>.noreply.`), one per received message however many of
//! its frames were refused, and within a budget: [`REFUSAL_BURST`] at once
//! and [`REFUSALS_PER_SECOND`] after that per sending node, ten times that
//! for all senders together. A refusal the budget does not allow is not
//! sent (the frames are still counted and logged here); asks in those
//! frames then wait for their timeout. So a flood of bad frames from a
//! stranger costs a bounded number of refusals, and a sender that
//! publishes under many node names does not get more than the total.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::Subject;
use bytes::Bytes;
use futures_util::StreamExt;

use super::{watch, Outbound, Shared};
use crate::config::valid_token;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to::Answer;
use crate::wire::{self, Reader};

/// Refusals a node sends one sending node at once, before the rate
/// applies.
pub const REFUSAL_BURST: u32 = 50;

/// Refusals a node sends one sending node per second, sustained.
pub const REFUSALS_PER_SECOND: u32 = 50;

/// For all sending nodes together: this many times the one-sender budget.
const ALL_SENDERS: u32 = 10;

/// Sending nodes with a budget of their own; others share one.
const MAX_SENDERS: usize = 256;

/// The tail of the reply subject of a message of tells only.
pub(super) const TELLS_ONLY: &str = "t";

/// The frame index of a refusal of the whole message.
pub(super) const WHOLE_MESSAGE: u64 = u64::MAX;

/// The longest detail a frames refusal carries per frame, in bytes.
const MAX_DETAIL_BYTES: usize = 512;

/// A frames refusal stops listing frames past this size, in bytes (the
/// rest are sent as a count).
const MAX_REFUSAL_BYTES: usize = 4096;

const WRONG_INCARNATION: u8 = b'R';
const REFUSED_FRAMES: u8 = b'F';

/// The reply subject of a message carrying `asks` (ask id, frame index).
pub(super) fn asks_subject(prefix: &str, asks: &[(u64, usize)]) -> Subject {
    let mut subject = String::with_capacity(prefix.len() + asks.len() * 12);
    subject.push_str(prefix);
    for (n, (id, index)) in asks.iter().enumerate() {
        if n > 0 {
            subject.push('.');
        }
        subject.push_str(&format!("{id}-{index}"));
    }
    Subject::from(subject)
}

/// The asks a reply subject's tail lists: (ask id, frame index if given);
/// none for a message of tells only; `None` if it is not such a tail.
fn parse_asks(tail: &str) -> Option<Vec<(u64, Option<u64>)>> {
    if tail == TELLS_ONLY {
        return Some(Vec::new());
    }
    tail.split('.')
        .map(|token| match token.split_once('-') {
            Some((id, index)) => Some((id.parse().ok()?, Some(index.parse().ok()?))),
            None => Some((token.parse().ok()?, None)),
        })
        .collect()
}

/// One frame a receiving node will not deliver, and why.
pub(super) struct RefusedFrame {
    /// Its place in the message ([`WHOLE_MESSAGE`]: all of it).
    pub(super) index: u64,
    pub(super) reason: DeadLetterReason,
    pub(super) detail: String,
}

fn reason_code(reason: DeadLetterReason) -> u8 {
    match reason {
        DeadLetterReason::UnknownTag => 1,
        DeadLetterReason::Undecodable => 2,
        DeadLetterReason::Truncated => 3,
        DeadLetterReason::Oversized => 4,
        DeadLetterReason::MailboxFull => 5,
        _ => 0,
    }
}

fn code_reason(code: u8) -> DeadLetterReason {
    match code {
        1 => DeadLetterReason::UnknownTag,
        2 => DeadLetterReason::Undecodable,
        3 => DeadLetterReason::Truncated,
        4 => DeadLetterReason::Oversized,
        5 => DeadLetterReason::MailboxFull,
        // A reason of a newer build.
        _ => DeadLetterReason::Malformed,
    }
}

/// A frames refusal (see the module docs).
fn frames_refusal(node: &str, subject: &str, frames: &[RefusedFrame]) -> Bytes {
    let mut out = vec![REFUSED_FRAMES];
    wire::put_str(&mut out, node);
    wire::put_str(&mut out, wire::cut(subject, 256));
    let listed = frames
        .iter()
        .scan(out.len(), |size, frame| {
            *size += 12 + frame.detail.len().min(MAX_DETAIL_BYTES);
            (*size <= MAX_REFUSAL_BYTES).then_some(())
        })
        .count()
        .max(1)
        .min(frames.len());
    wire::put_varint(&mut out, listed as u64);
    let mut previous = "";
    for frame in &frames[..listed] {
        wire::put_varint(&mut out, frame.index);
        out.push(reason_code(frame.reason));
        let detail = wire::cut(&frame.detail, MAX_DETAIL_BYTES);
        wire::put_str(&mut out, if detail == previous { "" } else { detail });
        previous = detail;
    }
    wire::put_varint(&mut out, (frames.len() - listed) as u64);
    out.into()
}

/// What came back on a reply subject, read.
#[derive(Debug, PartialEq, Eq)]
enum Refusal<'a> {
    WrongIncarnation {
        incarnation: u64,
        node: &'a str,
    },
    Frames {
        node: &'a str,
        subject: &'a str,
        /// (frame index, reason, detail).
        frames: Vec<(u64, DeadLetterReason, &'a str)>,
        unlisted: u64,
    },
}

/// A wrong-incarnation refusal (see the module docs).
pub(super) fn wrong_incarnation(theirs: u64, node: &str) -> Bytes {
    let mut out = Vec::with_capacity(9 + node.len());
    out.push(WRONG_INCARNATION);
    out.extend_from_slice(&theirs.to_le_bytes());
    out.extend_from_slice(node.as_bytes());
    out.into()
}

fn read(payload: &[u8]) -> Option<Refusal<'_>> {
    match payload.split_first()? {
        (&WRONG_INCARNATION, rest) => {
            let (incarnation, node) = rest.split_first_chunk::<8>()?;
            let node = std::str::from_utf8(node).ok().filter(|n| valid_token(n))?;
            Some(Refusal::WrongIncarnation {
                incarnation: u64::from_le_bytes(*incarnation),
                node,
            })
        }
        (&REFUSED_FRAMES, rest) => {
            let mut r = Reader::new(rest);
            let node = r.str().ok().filter(|n| valid_token(n))?;
            let subject = r.str().ok()?;
            let n = r.varint().ok()?;
            let mut frames = Vec::new();
            let mut previous = "";
            for _ in 0..n {
                let index = r.varint().ok()?;
                let reason = code_reason(r.byte().ok()?);
                let detail = match r.str().ok()? {
                    "" => previous,
                    detail => detail,
                };
                previous = detail;
                frames.push((index, reason, detail));
            }
            let unlisted = r.varint().ok()?;
            r.rest().is_empty().then_some(Refusal::Frames {
                node,
                subject,
                frames,
                unlisted,
            })
        }
        _ => None,
    }
}

/// A token bucket: `burst` at once, `rate` per second after.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: u32, now: Instant) -> Bucket {
        Bucket {
            tokens: f64::from(burst),
            at: now,
        }
    }

    fn refill(&mut self, burst: u32, rate: u32, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * f64::from(rate)).min(f64::from(burst));
        self.at = now;
    }

    fn take(&mut self, burst: u32, rate: u32, now: Instant) -> bool {
        self.refill(burst, rate, now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The refusal budget (see the module docs).
struct Budget {
    senders: HashMap<String, Bucket>,
    /// For senders beyond [`MAX_SENDERS`].
    others: Bucket,
    all: Bucket,
}

impl Budget {
    fn new(now: Instant) -> Budget {
        Budget {
            senders: HashMap::new(),
            others: Bucket::full(REFUSAL_BURST, now),
            all: Bucket::full(REFUSAL_BURST * ALL_SENDERS, now),
        }
    }

    fn allow(&mut self, sender: &str, now: Instant) -> bool {
        let (burst, rate) = (REFUSAL_BURST, REFUSALS_PER_SECOND);
        if !self.senders.contains_key(sender) && self.senders.len() >= MAX_SENDERS {
            // Senders whose budget is whole again have nothing to remember.
            self.senders.retain(|_, bucket| {
                bucket.refill(burst, rate, now);
                bucket.tokens < f64::from(burst)
            });
        }
        let own = if self.senders.len() < MAX_SENDERS || self.senders.contains_key(sender) {
            self.senders
                .entry(sender.to_string())
                .or_insert_with(|| Bucket::full(burst, now))
        } else {
            &mut self.others
        };
        own.take(burst, rate, now) && self.all.take(burst * ALL_SENDERS, rate * ALL_SENDERS, now)
    }
}

/// At most one log line a second, counting the ones left out.
#[derive(Default)]
pub(crate) struct LogThrottle(Mutex<(Option<Instant>, u64)>);

impl LogThrottle {
    /// `Some(lines left out since the last one)` if a line may be logged
    /// now.
    pub(crate) fn allow(&self) -> Option<u64> {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match state.0 {
            Some(last) if now.saturating_duration_since(last) < Duration::from_secs(1) => {
                state.1 += 1;
                None
            }
            _ => {
                let left_out = std::mem::take(&mut state.1);
                state.0 = Some(now);
                Some(left_out)
            }
        }
    }
}

/// The node's refusal budget and the throttles of the logs about refused
/// frames.
pub(crate) struct Refusals {
    budget: Mutex<Budget>,
    /// Frames refused here.
    refused_here: LogThrottle,
    /// Frames of ours refused by another node.
    refused_there: LogThrottle,
    /// Messages too large to send.
    pub(crate) too_large: LogThrottle,
}

impl Default for Refusals {
    fn default() -> Self {
        Refusals {
            budget: Mutex::new(Budget::new(Instant::now())),
            refused_here: LogThrottle::default(),
            refused_there: LogThrottle::default(),
            too_large: LogThrottle::default(),
        }
    }
}

/// The sending node of a message with reply subject `reply`, if it is
/// one of this cluster's reply subjects for refusals.
fn sender_of<'a>(shared: &Shared, reply: &'a str) -> Option<&'a str> {
    let rest = reply
        .strip_prefix("troupe.")?
        .strip_prefix(&*shared.config.cluster_name)?
        .strip_prefix(".noreply.")?;
    let (node, tail) = rest.split_once('.')?;
    (valid_token(node) && parse_asks(tail).is_some()).then_some(node)
}

/// The receiving side: counts and logs the frames of `msg` refused for
/// what they carry, and refuses them (and frames for `incarnations`, past
/// incarnations of this node) back to the sending node, within the budget.
pub(super) async fn refuse_back(
    outbound: &Outbound,
    msg: &async_nats::Message,
    incarnations: &[u64],
    frames: &[RefusedFrame],
) {
    let shared = &outbound.shared;
    let sender = msg
        .reply
        .as_deref()
        .and_then(|reply| sender_of(shared, reply));
    for frame in frames {
        outbound.dead_letter(frame.reason, &msg.subject);
    }
    if let (Some(first), Some(left_out)) = (frames.first(), shared.refusals.refused_here.allow()) {
        tracing::warn!(
            node = %shared.config.node_name,
            subject = %msg.subject,
            sender = sender.unwrap_or("(unknown)"),
            frames = frames.len(),
            reason = ?first.reason,
            lines_left_out = left_out,
            "troupe-remote: refused a frame: {}",
            first.detail
        );
    }
    let (Some(reply), Some(sender)) = (&msg.reply, sender) else {
        return;
    };
    let carries_asks = reply.rsplit('.').next() != Some(TELLS_ONLY);
    let node = &shared.config.node_name;
    let mut answers = Vec::new();
    if carries_asks {
        answers.extend(incarnations.iter().map(|i| wrong_incarnation(*i, node)));
    }
    if !frames.is_empty() {
        answers.push(frames_refusal(node, &msg.subject, frames));
    }
    for answer in answers {
        let allowed = shared
            .refusals
            .budget
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .allow(sender, Instant::now());
        if allowed {
            let _ = shared.client.publish(reply.clone(), answer).await;
        }
    }
}

/// The sending side: reads what comes back on this node's reply subjects
/// for refusals (see the module docs) and fails the asks it names.
pub(super) async fn listen(outbound: Outbound, mut answers: async_nats::Subscriber) {
    let shared = &outbound.shared;
    while let Some(msg) = answers.next().await {
        let asks = msg
            .subject
            .strip_prefix(&*shared.no_responders_prefix)
            .and_then(parse_asks);
        match (msg.status, asks, read(&msg.payload)) {
            (Some(async_nats::StatusCode::NO_RESPONDERS), Some(asks), _) => {
                shared
                    .dead_letters
                    .record(DeadLetterReason::NoResponders, &msg.subject);
                for (id, _) in asks {
                    // Already answered or expired: nothing to fail.
                    if let Ok(owner) = shared.pending.complete(id, Answer::Unreachable) {
                        watch::confirm(&outbound, owner);
                    }
                }
            }
            (None, Some(asks), Some(Refusal::WrongIncarnation { incarnation, node })) => {
                let ids: Vec<u64> = asks.iter().map(|(id, _)| *id).collect();
                for owner in shared.pending.refused(&ids, incarnation) {
                    if &*owner.address.host == node {
                        // Its node answers as another incarnation: the one
                        // this ref names was restarted away, once the node
                        // confirms it (anyone can publish a refusal).
                        super::heard::gone(shared, node, incarnation, &msg.subject);
                    } else {
                        // The name is served by another node now.
                        watch::confirm(&outbound, owner);
                    }
                }
            }
            (
                None,
                Some(asks),
                Some(Refusal::Frames {
                    node,
                    subject,
                    frames,
                    unlisted,
                }),
            ) => refused_there(shared, &asks, node, subject, &frames, unlisted),
            _ => shared
                .dead_letters
                .record(DeadLetterReason::Malformed, &msg.subject),
        }
    }
}

/// Frames of a message this node sent were refused by `node`: counts
/// them, fails their asks, logs.
fn refused_there(
    shared: &Shared,
    asks: &[(u64, Option<u64>)],
    node: &str,
    subject: &str,
    frames: &[(u64, DeadLetterReason, &str)],
    unlisted: u64,
) {
    for (index, reason, detail) in frames {
        shared.dead_letters.record(*reason, subject);
        let why = format!("node {node} refused the message: {detail}");
        for (id, at) in asks {
            if *index == WHOLE_MESSAGE || *at == Some(*index) {
                let _ = shared.pending.complete(*id, Answer::Refused(&why));
            }
        }
    }
    if let Some((_, reason, _)) = frames.last() {
        for _ in 0..unlisted {
            shared.dead_letters.record(*reason, subject);
        }
    }
    if let (Some((_, reason, detail)), Some(left_out)) =
        (frames.first(), shared.refusals.refused_there.allow())
    {
        tracing::warn!(
            node = %shared.config.node_name,
            refused_by = node,
            subject,
            frames = frames.len() as u64 + unlisted,
            reason = ?reason,
            lines_left_out = left_out,
            "troupe-remote: another node refused what this one sent: {detail}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_subjects_list_asks_with_their_frames() {
        let subject = asks_subject("troupe.c.noreply.n.", &[(7, 0), (12, 3)]);
        assert_eq!(subject.as_str(), "troupe.c.noreply.n.7-0.12-3");
        assert_eq!(
            parse_asks("7-0.12-3"),
            Some(vec![(7, Some(0)), (12, Some(3))])
        );
        // An older build's tail names the asks alone.
        assert_eq!(parse_asks("7.12"), Some(vec![(7, None), (12, None)]));
        assert_eq!(parse_asks(TELLS_ONLY), Some(vec![]));
        assert_eq!(parse_asks("x"), None);
        assert_eq!(parse_asks("7-y"), None);
    }

    #[test]
    fn refusals_read_back_and_anything_else_is_not_one() {
        let bytes = wrong_incarnation(u64::MAX - 3, "node-a");
        assert_eq!(
            read(&bytes),
            Some(Refusal::WrongIncarnation {
                incarnation: u64::MAX - 3,
                node: "node-a"
            })
        );
        assert_eq!(read(&[]), None);
        assert_eq!(read(&bytes[..8]), None);
        let mut dotted = bytes.to_vec();
        dotted.extend_from_slice(b".>");
        assert_eq!(read(&dotted), None);

        let refused = |index, reason, detail: &str| RefusedFrame {
            index,
            reason,
            detail: detail.to_string(),
        };
        let frames = [
            refused(1, DeadLetterReason::UnknownTag, "tag mismatch"),
            refused(2, DeadLetterReason::UnknownTag, "tag mismatch"),
            refused(5, DeadLetterReason::Undecodable, "cannot decode"),
        ];
        let bytes = frames_refusal("node-b", "troupe.c.actor.x", &frames);
        assert_eq!(
            read(&bytes),
            Some(Refusal::Frames {
                node: "node-b",
                subject: "troupe.c.actor.x",
                frames: vec![
                    (1, DeadLetterReason::UnknownTag, "tag mismatch"),
                    (2, DeadLetterReason::UnknownTag, "tag mismatch"),
                    (5, DeadLetterReason::Undecodable, "cannot decode"),
                ],
                unlisted: 0,
            })
        );
        // Cut anywhere, it is not a refusal.
        for cut in 0..bytes.len() {
            assert_eq!(read(&bytes[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn a_refusal_of_many_frames_stays_small() {
        let detail = "d".repeat(2 * MAX_DETAIL_BYTES);
        let frames: Vec<RefusedFrame> = (0..5000)
            .map(|index| RefusedFrame {
                index,
                reason: DeadLetterReason::Undecodable,
                // A different detail each time, so none is elided.
                detail: format!("{index}{detail}"),
            })
            .collect();
        let bytes = frames_refusal("n", "s", &frames);
        assert!(
            bytes.len() <= MAX_REFUSAL_BYTES + MAX_DETAIL_BYTES + 32,
            "{}",
            bytes.len()
        );
        let Some(Refusal::Frames {
            frames: listed,
            unlisted,
            ..
        }) = read(&bytes)
        else {
            panic!("not a frames refusal");
        };
        assert!(!listed.is_empty());
        assert_eq!(listed.len() as u64 + unlisted, 5000);
    }

    #[test]
    fn the_budget_bounds_refusals_per_sender_and_in_all() {
        let start = Instant::now();
        let mut budget = Budget::new(start);
        let allowed = (0..1000).filter(|_| budget.allow("a", start)).count();
        assert_eq!(allowed, REFUSAL_BURST as usize);
        // Another sender has a budget of its own.
        assert!(budget.allow("b", start));
        // A second later, the rate's worth more.
        let later = start + Duration::from_secs(1);
        let allowed = (0..1000).filter(|_| budget.allow("a", later)).count();
        assert_eq!(allowed, REFUSALS_PER_SECOND as usize);
        // Many names do not get more than the total.
        let mut budget = Budget::new(start);
        let allowed = (0..10 * MAX_SENDERS)
            .filter(|n| budget.allow(&format!("n{n}"), start))
            .count();
        assert!(allowed >= MAX_SENDERS, "{allowed}");
        assert!(
            allowed <= (REFUSAL_BURST * ALL_SENDERS) as usize,
            "{allowed}"
        );
        assert!(budget.senders.len() <= MAX_SENDERS);
    }

    #[test]
    fn the_log_throttle_lets_one_line_a_second_through() {
        let throttle = LogThrottle::default();
        assert_eq!(throttle.allow(), Some(0));
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.allow(), None);
        // Pretend the last line was logged long ago.
        throttle.0.lock().unwrap().0 = Some(Instant::now() - Duration::from_secs(2));
        assert_eq!(throttle.allow(), Some(2));
    }
}

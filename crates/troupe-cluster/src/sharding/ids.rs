//! Which entity ids a region accepts, and what happens to a message for
//! one it does not.
//!
//! An id is refused when it is empty, longer than
//! [`MAX_ID_BYTES`] (it would not fit in the journal's
//! subject, a key or a file name: a subject over the server's control line
//! closes the node's whole connection), or when the type's validator
//! (`ShardingSettings::validate`) says no. It is checked twice:
//!
//! - by the **sending** region's handle (`ShardRegion::tell`,
//!   `entity_ref`), before the message is routed anywhere: nothing is sent;
//! - by the **owning** shard before it activates an entity, in case a
//!   sender checks differently (another version, a proxy without the
//!   validator): no activation, so no fence record in the journal.
//!
//! A refused message is counted (`RegionStats::refused`), logged (at
//! `warn`, the first and then every power of two), and every ask inside
//! it is answered at once with [`AskError::Refused`](troupe::AskError)
//! and the reason, found by serialising the message with a codec that
//! only collects its reply handles: the message type is the user's, and
//! this reaches its `ReplyTo`s wherever they are. An ask refused on the
//! owner after crossing the network reaches its asker as the transport
//! carries failures (troupe-remote: `NoReply`, at once).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Serialize;
use troupe::transport::{with_codec, Codec, ExportedRef, ExportedReply};

use super::Counters;
use crate::MAX_ID_BYTES;

/// A check of entity ids: `Err(reason)` refuses the id (see
/// `ShardingSettings::validate`).
pub type IdValidator = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The checks a region runs on an id: the length, then the type's
/// validator, if it has one.
#[derive(Clone, Default)]
pub(crate) struct IdCheck {
    pub(crate) validate: Option<IdValidator>,
}

impl IdCheck {
    /// Why `id` is refused, if it is.
    pub(crate) fn refusal(&self, id: &str) -> Option<String> {
        if id.is_empty() {
            return Some("an entity id cannot be empty".into());
        }
        if id.len() > MAX_ID_BYTES {
            return Some(format!(
                "an entity id of {} bytes is over the limit of {MAX_ID_BYTES} bytes \
                 (troupe_cluster::MAX_ID_BYTES)",
                id.len()
            ));
        }
        let validate = self.validate.as_ref()?;
        validate(id)
            .err()
            .map(|why| format!("the entity type's validator refused the id: {why}"))
    }
}

/// Refuses `msg` for entity `id` of `type_name`: counts it, logs it,
/// and answers every ask in it with `reason`.
pub(crate) fn refuse<M: Serialize>(
    type_name: &str,
    counters: &Counters,
    id: &str,
    reason: &str,
    msg: M,
) {
    let n = counters.refused.fetch_add(1, Ordering::Relaxed) + 1;
    let answered = answer_asks(&msg, reason);
    drop(msg);
    // A flood of junk ids must not flood the log: the first, then every
    // power of two, each with the running count.
    if n.is_power_of_two() {
        tracing::warn!(
            region = %type_name,
            entity = %shown(id),
            id_bytes = id.len(),
            refused = n,
            asks_answered = answered,
            "sharding: a message for an entity id this region does not accept was refused: {reason}"
        );
    } else {
        tracing::debug!(region = %type_name, entity = %shown(id), "sharding: refused: {reason}");
    }
}

/// At most 64 characters of an id, for a log line.
fn shown(id: &str) -> String {
    if id.chars().count() <= 64 {
        id.to_string()
    } else {
        let head: String = id.chars().take(64).collect();
        format!("{head}…")
    }
}

/// A codec that collects the reply handles of one message (and writes
/// nothing of them): what `answer_asks` serialises with.
#[derive(Default)]
struct Collect(RefCell<Vec<ExportedReply>>);

impl Codec for Collect {
    fn export_reply(
        &self,
        reply: ExportedReply,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        self.0.borrow_mut().push(reply);
        Ok(Box::new(()))
    }

    // A ref in the message is not sent anywhere: a unit in its place lets
    // the walk go on to the handles after it.
    fn export_ref(
        &self,
        _actor: ExportedRef<'_>,
    ) -> Result<Box<dyn erased_serde::Serialize>, String> {
        Ok(Box::new(()))
    }
}

/// Answers every ask whose reply handle is in `msg` with
/// `AskError::Refused` and `reason`; returns how many. A message whose
/// serialisation fails part way answers the handles met before; the
/// others fail with `NoReply` when the message is dropped.
pub(crate) fn answer_asks<M: Serialize>(msg: &M, reason: &str) -> usize {
    let collect = Rc::new(Collect::default());
    let codec: Rc<dyn Codec> = collect.clone();
    let _ = with_codec(codec, || postcard::to_allocvec(msg));
    let replies = collect.0.take();
    let n = replies.len();
    for reply in replies {
        reply.refuse(reason);
    }
    n
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use troupe::{Actor, ActorSystem, AskError, Context, Props, ReplyTo};

    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    enum Msg {
        Two(ReplyTo<u32>, Option<ReplyTo<String>>),
    }

    struct Idle;
    impl Actor for Idle {
        type Msg = ();
        fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}
    }

    #[test]
    fn every_reply_handle_in_a_message_gets_the_refusal() {
        let system = ActorSystem::builder().threads(1).build().unwrap();
        let target = system.spawn(Props::new(|| Idle)).unwrap().id();
        let t = Duration::from_secs(5);
        let (a, first) = ReplyTo::<u32>::pair(&system, target, t);
        let (b, second) = ReplyTo::<String>::pair(&system, target, t);
        let msg = Msg::Two(a, Some(b));
        assert_eq!(answer_asks(&msg, "no such id"), 2);
        drop(msg);
        let reason = "no such id".to_string();
        assert_eq!(
            first.wait(),
            Err(AskError::Refused {
                target,
                reason: reason.clone()
            })
        );
        assert_eq!(second.wait(), Err(AskError::Refused { target, reason }));
        system.shutdown();
    }

    #[test]
    fn ids_are_refused_for_their_length_and_by_the_validator() {
        let plain = IdCheck::default();
        assert!(plain.refusal("a").is_none());
        assert!(plain.refusal("").unwrap().contains("empty"));
        assert!(plain.refusal(&"x".repeat(MAX_ID_BYTES)).is_none());
        let long = plain.refusal(&"x".repeat(MAX_ID_BYTES + 1)).unwrap();
        assert!(long.contains("256 bytes") && long.contains("255"), "{long}");
        let checked = IdCheck {
            validate: Some(Arc::new(|id: &str| {
                if id.starts_with("show-") {
                    Ok(())
                } else {
                    Err(format!("{id:?} is not a show"))
                }
            })),
        };
        assert!(checked.refusal("show-1").is_none());
        let why = checked.refusal("junk").unwrap();
        assert!(why.contains("\"junk\" is not a show"), "{why}");
    }
}

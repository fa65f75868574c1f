//! The local actors other nodes can reach: published names and exported
//! refs, each with the nodes that watch it, in one table under one lock.
//!
//! One lock on purpose: when an actor stops, its entry is removed and its
//! watching nodes taken in the same critical section in which a watch
//! request would add a node, so a watch either lands before the stop (and
//! is notified) or finds no entry (and is answered "gone"): never lost in
//! between.
//!
//! Every entry has a **sentinel**: a small actor that watches the real one
//! and, when it stops, calls back here (remove the entry, tell the
//! watching nodes, unpublish the name). It is spawned when the entry is
//! made, so an entry never outlives its actor by more than the sentinel's
//! turn.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use troupe::transport::{when_stopped, LocalEndpoint};
use troupe::{ActorId, ActorRef, ActorSystem};

use super::{watch, Outbound};
use crate::address::Kind;
use crate::config::InboundLimit;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to::{DecodeCtx, Importer, ReplySink};
use crate::wire::{self, RemoteMessage};

/// A local actor's key in the table: its kind and its name or token.
pub(crate) type Key = (Kind, Arc<str>);

/// A watching node: its name and incarnation.
pub(crate) type Watching = (String, u64);

/// A local actor other nodes can reach, with its message type erased.
pub(crate) trait LocalActor: Send + Sync {
    fn id(&self) -> ActorId;
    /// The message type's tag.
    fn tag(&self) -> &'static str;
    /// Decodes `payload` as the actor's message (replies and refs inside
    /// it through `outbound`) and tells it; a payload that does not decode,
    /// or one its inbound bound refuses (`MailboxFull`), is its reason and
    /// what went wrong in words.
    fn deliver(
        &self,
        outbound: &Outbound,
        sink: &Arc<dyn ReplySink>,
        payload: &[u8],
    ) -> Result<(), (DeadLetterReason, String)>;
    /// Spawns the sentinel that calls `gone` once this actor has stopped.
    fn sentinel(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool;
    /// The actor's `ActorRef<M>`, boxed (a ref that comes home).
    fn actor_ref(&self) -> Box<dyn Any + Send>;
}

/// The codec of one receive for the actor `target`.
fn importer(outbound: &Outbound, sink: &Arc<dyn ReplySink>, target: ActorId) -> Rc<Importer> {
    let shared = &outbound.shared;
    Rc::new(Importer(DecodeCtx {
        system: shared.system.clone(),
        target,
        reply_prefix: shared.reply_prefix.clone(),
        ttl: shared.config.reply_ttl,
        outbound: sink.clone(),
    }))
}

/// A published actor: its message type is known, so frames for it are
/// decoded without erasure. What other nodes may queue in its mailbox is
/// bounded by `limit` (`RemoteConfig::inbound_limit`).
struct Local<M: Send + 'static> {
    actor: ActorRef<M>,
    limit: Option<InboundLimit>,
    waiting: Mutex<Waiting>,
}

/// The encoded sizes of the messages delivered from other nodes that may
/// still wait in a published actor's mailbox, oldest first.
#[derive(Default)]
struct Waiting {
    sizes: VecDeque<usize>,
    bytes: usize,
}

impl Waiting {
    /// Whether one more message of `len` bytes is within `limit`, with
    /// `queued` messages in the mailbox now; if so it is counted in.
    ///
    /// A mailbox is first in, first out: with `queued` messages in it, at
    /// most the last `queued` delivered from here still wait, and the
    /// older ones are gone. (Local senders' messages count in `queued`
    /// too, so this errs on the side of refusing.)
    fn admit(&mut self, limit: &InboundLimit, queued: usize, len: usize) -> bool {
        while self.sizes.len() > queued {
            if let Some(size) = self.sizes.pop_front() {
                self.bytes -= size;
            }
        }
        // A message larger than the whole budget still passes alone.
        if queued >= limit.messages || (self.bytes > 0 && self.bytes + len > limit.bytes) {
            return false;
        }
        self.sizes.push_back(len);
        self.bytes += len;
        true
    }

    /// The message of `len` bytes last admitted was not delivered after
    /// all (it did not decode).
    fn cancel(&mut self, len: usize) {
        if self.sizes.back() == Some(&len) {
            self.sizes.pop_back();
            self.bytes -= len;
        }
    }
}

impl<M: RemoteMessage> LocalActor for Local<M> {
    fn id(&self) -> ActorId {
        self.actor.id()
    }

    fn tag(&self) -> &'static str {
        M::TAG
    }

    fn deliver(
        &self,
        outbound: &Outbound,
        sink: &Arc<dyn ReplySink>,
        payload: &[u8],
    ) -> Result<(), (DeadLetterReason, String)> {
        // Checked before decoding: a flood past the bound costs no decoding.
        if let Some(limit) = &self.limit {
            let queued = self.actor.queued();
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            if !waiting.admit(limit, queued, payload.len()) {
                let why = format!(
                    "the receiving actor (tag {:?}) has {queued} messages waiting, {} bytes of \
                     them from other nodes; its bound is {} messages and {} bytes \
                     (RemoteConfig::inbound_limit of the receiving node)",
                    M::TAG,
                    waiting.bytes,
                    limit.messages,
                    limit.bytes
                );
                return Err((DeadLetterReason::MailboxFull, why));
            }
        }
        let importer = importer(outbound, sink, self.actor.id());
        let msg = outbound
            .scope_with(importer, || wire::decode_payload_explained::<M>(payload))
            .inspect_err(|_| {
                if self.limit.is_some() {
                    let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
                    waiting.cancel(payload.len());
                }
            })?;
        self.actor.tell(msg);
        Ok(())
    }

    fn sentinel(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool {
        when_stopped(system, &self.actor, gone)
    }

    fn actor_ref(&self) -> Box<dyn Any + Send> {
        Box::new(self.actor.clone())
    }
}

/// An exported actor: a ref sent inside a message, whose message type
/// troupe erased (see `troupe::transport`).
struct Exported(LocalEndpoint);

impl LocalActor for Exported {
    fn id(&self) -> ActorId {
        self.0.id()
    }

    fn tag(&self) -> &'static str {
        self.0.tag()
    }

    fn deliver(
        &self,
        outbound: &Outbound,
        sink: &Arc<dyn ReplySink>,
        payload: &[u8],
    ) -> Result<(), (DeadLetterReason, String)> {
        let importer = importer(outbound, sink, self.0.id());
        let msg = outbound.scope_with(importer, || {
            wire::decode_payload_with_explained(payload, |input| self.0.decode(input))
        })?;
        msg.tell();
        Ok(())
    }

    fn sentinel(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool {
        self.0.when_stopped(system, gone)
    }

    fn actor_ref(&self) -> Box<dyn Any + Send> {
        self.0.actor_ref()
    }
}

struct Entry {
    actor: Arc<dyn LocalActor>,
    /// The node incarnations watching this actor.
    watchers: HashSet<Watching>,
}

#[derive(Default)]
struct Table {
    entries: HashMap<Key, Entry>,
    /// The token of every exported actor, so it is exported once.
    tokens: HashMap<ActorId, Arc<str>>,
}

/// See the module docs.
#[derive(Default)]
pub(crate) struct Locals {
    table: Mutex<Table>,
}

impl Locals {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Enters `actor` as published under `name` (replacing an earlier
    /// actor of that name, whose watchers are told it is gone).
    pub(crate) fn publish<M: RemoteMessage>(
        &self,
        outbound: &Outbound,
        name: &str,
        actor: &ActorRef<M>,
    ) {
        let key: Key = (Kind::Published, name.into());
        let local: Arc<dyn LocalActor> = Arc::new(Local {
            actor: actor.clone(),
            limit: outbound.shared.config.inbound_limit,
            waiting: Mutex::default(),
        });
        let previous = self.lock().entries.insert(
            key.clone(),
            Entry {
                actor: local.clone(),
                watchers: HashSet::new(),
            },
        );
        if let Some(previous) = previous {
            watch::tell_gone(outbound, key.0, &key.1, previous.watchers);
        }
        self.guard(outbound, key, local);
    }

    /// The token of `actor`, exporting it first if it was never sent.
    pub(crate) fn export(
        &self,
        outbound: &Outbound,
        id: ActorId,
        local: impl FnOnce() -> LocalEndpoint,
    ) -> Result<Arc<str>, String> {
        let (token, local) = {
            let mut table = self.lock();
            if let Some(token) = table.tokens.get(&id) {
                return Ok(token.clone());
            }
            let token: Arc<str> = fresh_token()?.into();
            let local: Arc<dyn LocalActor> = Arc::new(Exported(local()));
            table.tokens.insert(id, token.clone());
            table.entries.insert(
                (Kind::Exported, token.clone()),
                Entry {
                    actor: local.clone(),
                    watchers: HashSet::new(),
                },
            );
            (token, local)
        };
        self.guard(outbound, (Kind::Exported, token.clone()), local);
        Ok(token)
    }

    /// Spawns the sentinel of a new entry.
    fn guard(&self, outbound: &Outbound, key: Key, local: Arc<dyn LocalActor>) {
        let id = local.id();
        let on_stop = outbound.clone();
        let gone_key = key.clone();
        let spawned = local.sentinel(
            &outbound.shared.system,
            Box::new(move || on_stop.shared.locals.gone(&on_stop, &gone_key, id)),
        );
        if !spawned {
            // The system is shutting down: the actor goes with it.
            self.gone(outbound, &key, id);
        }
    }

    /// The actor behind `key`, if it is still here.
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<dyn LocalActor>> {
        self.lock().entries.get(key).map(|e| e.actor.clone())
    }

    /// The local ref behind export `token` (an `ActorRef<M>`, boxed), if
    /// its message type is `tag`.
    pub(crate) fn exported(&self, token: &str, tag: &str) -> Option<Box<dyn Any + Send>> {
        let actor = self.get(&(Kind::Exported, token.into()))?;
        (actor.tag() == tag).then(|| actor.actor_ref())
    }

    /// `node` watches `key`; false if there is no such actor (any more).
    pub(crate) fn add_watcher(&self, key: &Key, node: Watching) -> bool {
        match self.lock().entries.get_mut(key) {
            Some(entry) => {
                entry.watchers.insert(node);
                true
            }
            None => false,
        }
    }

    /// `node` no longer watches `key`.
    pub(crate) fn remove_watcher(&self, key: &Key, node: &Watching) {
        if let Some(entry) = self.lock().entries.get_mut(key) {
            entry.watchers.remove(node);
        }
    }

    /// Node `node`'s incarnation `incarnation` is gone: it watches nothing
    /// any more (a newer incarnation's watches stay).
    pub(crate) fn forget_node(&self, node: &str, incarnation: u64) {
        let gone = (node.to_string(), incarnation);
        for entry in self.lock().entries.values_mut() {
            entry.watchers.remove(&gone);
        }
    }

    /// Takes the published entry `name` out (unpublish), telling its
    /// watchers it is gone.
    pub(crate) fn unpublish(&self, outbound: &Outbound, name: &str) {
        let key: Key = (Kind::Published, name.into());
        let entry = self.lock().entries.remove(&key);
        if let Some(entry) = entry {
            watch::tell_gone(outbound, key.0, &key.1, entry.watchers);
        }
    }

    /// The actor `id` behind `key` stopped: its entry goes and its
    /// watchers are told; a published name is unpublished.
    fn gone(&self, outbound: &Outbound, key: &Key, id: ActorId) {
        let entry = {
            let mut table = self.lock();
            // A name published again since belongs to another actor.
            if table.entries.get(key).is_none_or(|e| e.actor.id() != id) {
                return;
            }
            if key.0 == Kind::Exported {
                table.tokens.remove(&id);
            }
            table.entries.remove(key)
        };
        if let Some(entry) = entry {
            watch::tell_gone(outbound, key.0, &key.1, entry.watchers);
        }
        if key.0 == Kind::Published {
            outbound.unpublish_later(&key.1, id);
        }
    }

    /// How many (watching node incarnation, local actor) pairs are kept.
    pub(crate) fn remote_watches(&self) -> usize {
        self.lock().entries.values().map(|e| e.watchers.len()).sum()
    }

    /// How many local actors other nodes can reach.
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

/// 128 random bits from the operating system, as 32 hex digits.
fn fresh_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| format!("no randomness for a ref token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_waits_from_other_nodes_is_bounded_in_messages_and_bytes() {
        let limit = InboundLimit {
            messages: 4,
            bytes: 100,
        };
        let mut w = Waiting::default();
        // Bytes: 40 + 40 pass, a third 40 would make 120.
        assert!(w.admit(&limit, 0, 40));
        assert!(w.admit(&limit, 1, 40));
        assert!(!w.admit(&limit, 2, 40));
        // The first was taken by the actor: one waits, room again.
        assert!(w.admit(&limit, 1, 40));
        assert_eq!(w.bytes, 80);
        // Messages: four in the mailbox (local ones too) refuse any more.
        assert!(!w.admit(&limit, 4, 1));
        // All taken: a message larger than the budget passes alone.
        assert!(w.admit(&limit, 0, 1000));
        assert!(!w.admit(&limit, 1, 1));
        assert!(w.admit(&limit, 0, 1));
        assert_eq!((w.sizes.len(), w.bytes), (1, 1));
    }
}

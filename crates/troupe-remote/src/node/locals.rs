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
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use troupe::{Actor, ActorId, ActorRef, ActorSystem, Context, Props, Signal};

use super::{watch, Outbound};
use crate::address::Kind;
use crate::dead_letters::DeadLetterReason;
use crate::reply_to::{self, DecodeCtx, ReplySink};
use crate::wire::{self, RemoteMessage};

/// A local actor's key in the table: its kind and its name or token.
pub(crate) type Key = (Kind, Arc<str>);

/// A watching node: its name and incarnation.
pub(crate) type Watching = (String, u64);

/// A local actor with its message type erased.
pub(crate) trait LocalActor: Send + Sync {
    fn id(&self) -> ActorId;
    /// The message type's tag.
    fn tag(&self) -> &'static str;
    /// Decodes `payload` as the actor's message (replies and refs inside
    /// it through `outbound`) and tells it.
    fn deliver(
        &self,
        outbound: &Outbound,
        sink: &Arc<dyn ReplySink>,
        payload: &[u8],
    ) -> Result<(), DeadLetterReason>;
    /// Spawns the sentinel that calls `gone` once this actor has stopped.
    fn sentinel(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool;
    fn as_any(&self) -> &dyn Any;
}

struct Local<M: Send + 'static>(ActorRef<M>);

impl<M: RemoteMessage> LocalActor for Local<M> {
    fn id(&self) -> ActorId {
        self.0.id()
    }

    fn tag(&self) -> &'static str {
        M::TAG
    }

    fn deliver(
        &self,
        outbound: &Outbound,
        sink: &Arc<dyn ReplySink>,
        payload: &[u8],
    ) -> Result<(), DeadLetterReason> {
        let shared = &outbound.shared;
        let ctx = DecodeCtx {
            system: shared.system.clone(),
            target: self.0.id(),
            reply_prefix: shared.reply_prefix.clone(),
            ttl: shared.config.reply_ttl,
            outbound: sink.clone(),
        };
        let msg =
            outbound.scope(|| reply_to::decoding(ctx, || wire::decode_payload::<M>(payload)))?;
        self.0.tell(msg);
        Ok(())
    }

    fn sentinel(&self, system: &ActorSystem, gone: Box<dyn FnOnce() + Send>) -> bool {
        // The factory may run again on a restart; the callback runs once.
        let gone = Arc::new(Mutex::new(Some(gone)));
        let target = self.0.clone();
        system
            .spawn(Props::new(move || Sentinel {
                target: target.clone(),
                gone: gone.clone(),
            }))
            .is_ok()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

type Gone = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// Watches one local actor and calls `gone` when it stops, then stops.
struct Sentinel<M: Send + 'static> {
    target: ActorRef<M>,
    gone: Gone,
}

impl<M: Send + 'static> Actor for Sentinel<M> {
    type Msg = ();

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        // Delivers Terminated at once if the actor has already stopped.
        ctx.watch(&self.target);
    }

    fn receive(&mut self, _ctx: &mut Context<'_, Self>, _msg: ()) {}

    fn signal(&mut self, ctx: &mut Context<'_, Self>, signal: Signal) {
        if let Signal::Terminated(..) = signal {
            let gone = self.gone.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(gone) = gone {
                gone();
            }
            ctx.stop();
        }
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
        let local: Arc<dyn LocalActor> = Arc::new(Local(actor.clone()));
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
    pub(crate) fn export<M: RemoteMessage>(
        &self,
        outbound: &Outbound,
        actor: &ActorRef<M>,
    ) -> Result<Arc<str>, String> {
        let (token, local) = {
            let mut table = self.lock();
            if let Some(token) = table.tokens.get(&actor.id()) {
                return Ok(token.clone());
            }
            let token: Arc<str> = fresh_token()?.into();
            let local: Arc<dyn LocalActor> = Arc::new(Local(actor.clone()));
            table.tokens.insert(actor.id(), token.clone());
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

    /// The local ref behind export `token`, if it is of type `M`.
    pub(crate) fn exported<M: RemoteMessage>(&self, token: &str) -> Option<ActorRef<M>> {
        let actor = self.get(&(Kind::Exported, token.into()))?;
        let local = actor.as_any().downcast_ref::<Local<M>>()?;
        Some(local.0.clone())
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

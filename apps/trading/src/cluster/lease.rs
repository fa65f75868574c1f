//! Who owns each engine's books: one key per engine (`engine-<i>`) in a
//! JetStream key-value bucket, holding the owning node's name. Every
//! change of owner, and every change of whether the owner may acknowledge
//! alone, is a compare-and-set on the key's revision, so it is decided by
//! the NATS cluster's replicated store and never by two nodes at once:
//! there is no consensus of our own here.
//!
//! Per engine, the node's keeper:
//! - creates the key if it is free and leads (its engine is primary);
//! - otherwise follows the owner (its engine joins as standby) and, when
//!   the owner's node is declared down, takes the key over from the
//!   revision it followed, if its engine is a caught-up standby;
//! - while leading, renews the key at a new revision when its engine asks
//!   to acknowledge alone (`Solo`), and exits the process the moment the
//!   key moves to another node (fail-stop: a node that lost a race never
//!   goes on serving).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv::{Config, Operation, Store};
use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;
use troupe::ActorRef;
use troupe_remote::{MemberEvent, Node};

use super::engine::LeaseRequest;
use super::wire::EngineCmd;

/// The bucket of a cluster's leases.
pub fn bucket_name(cluster: &str) -> String {
    format!("trading-{cluster}-leases")
}

/// The key of engine `index`, and the name its primary is published as.
pub fn engine_name(index: usize) -> String {
    format!("engine-{index}")
}

/// Opens (or creates) the cluster's lease bucket.
pub async fn open_bucket(node: &Node, cluster: &str) -> Result<Store, String> {
    let js = async_nats::jetstream::new(node.nats_client());
    let bucket = bucket_name(cluster);
    if let Ok(store) = js.get_key_value(&bucket).await {
        return Ok(store);
    }
    js.create_key_value(Config {
        bucket: bucket.clone(),
        history: 1,
        ..Config::default()
    })
    .await
    .map_err(|e| format!("cannot create the lease bucket {bucket}: {e}"))
}

/// Set once the node is leaving on purpose: what its keepers see from then
/// on (its own engines' standbys leaving, watches ending) is not a failure.
pub static LEAVING: AtomicBool = AtomicBool::new(false);

/// Ends the process: this node lost the lease of an engine it served, or
/// cannot take part safely any more. A node already leaving just exits.
fn fail_stop(why: String) -> ! {
    if LEAVING.load(Ordering::Relaxed) {
        std::process::exit(0)
    }
    eprintln!("trading node: {why}; exiting");
    std::process::exit(3)
}

/// The current owner and revision of `key`, if it has one.
async fn owner(kv: &Store, key: &str) -> Result<Option<(String, u64)>, String> {
    match kv.entry(key).await {
        Ok(Some(e)) if e.operation == Operation::Put => Ok(Some((
            String::from_utf8_lossy(&e.value).into_owned(),
            e.revision,
        ))),
        Ok(_) => Ok(None),
        Err(e) => Err(format!("cannot read lease {key}: {e}")),
    }
}

/// One engine's lease keeper on one node.
pub struct Keeper {
    /// The node.
    pub node: Arc<Node>,
    /// The lease bucket.
    pub kv: Store,
    /// The engine's index.
    pub index: usize,
    /// The local engine actor.
    pub engine: ActorRef<EngineCmd>,
    /// What the engine asks.
    pub requests: UnboundedReceiver<LeaseRequest>,
}

impl Keeper {
    /// Runs until the process ends. `settled` fires once the engine leads
    /// or has been told whom to follow.
    pub async fn run(self, settled: tokio::sync::oneshot::Sender<()>) {
        let mut events = self.node.member_events();
        let me = self.node.name().to_string();
        let key = engine_name(self.index);
        let mut settled = Some(settled);
        loop {
            match self.kv.create(&key, me.clone().into()).await {
                Ok(epoch) => {
                    self.engine.tell(EngineCmd::Promote { epoch });
                    return self.lead(epoch, settled.take()).await;
                }
                Err(e) if e.kind() == async_nats::jetstream::kv::CreateErrorKind::AlreadyExists => {
                }
                Err(e) => fail_stop(format!("cannot create lease {key}: {e}")),
            }
            let Some((owner_name, epoch)) =
                owner(&self.kv, &key).await.unwrap_or_else(|e| fail_stop(e))
            else {
                continue; // deleted in between: try to create it again
            };
            let primary = match self.node.lookup::<EngineCmd>(&key).await {
                Ok(primary) => primary,
                Err(_) => {
                    // The owner has not published yet, or is gone and not
                    // yet replaced: look again shortly.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if owner(&self.kv, &key).await.unwrap_or_else(|e| fail_stop(e))
                != Some((owner_name.clone(), epoch))
            {
                continue; // it moved while we looked the primary up
            }
            self.engine.tell(EngineCmd::Follow { epoch, primary });
            if let Some(s) = settled.take() {
                let _ = s.send(());
            }
            // Follow until the owner's node is declared down.
            loop {
                match events.recv().await {
                    Ok(MemberEvent::Down { node, .. }) if node == owner_name => break,
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if !self.node.members().contains(&owner_name) {
                            break;
                        }
                    }
                    Err(_) => fail_stop("membership events ended".into()),
                }
            }
            if LEAVING.load(Ordering::Relaxed) {
                return;
            }
            let role = self
                .engine
                .ask(EngineCmd::Report, Duration::from_secs(5))
                .await
                .map(|r| r.role)
                .unwrap_or_default();
            if role != "standby" {
                fail_stop(format!(
                    "the primary of {key} ({owner_name}) is down and this node's engine is {role}, \
                     not a caught-up standby"
                ));
            }
            match self.kv.update(&key, me.clone().into(), epoch).await {
                Ok(epoch) => {
                    self.engine.tell(EngineCmd::Promote { epoch });
                    return self.lead(epoch, None).await;
                }
                Err(e) => fail_stop(format!("lost the race for {key}: {e}")),
            }
        }
    }

    /// Serves as primary at `epoch` until the process ends.
    async fn lead(mut self, mut epoch: u64, settled: Option<tokio::sync::oneshot::Sender<()>>) {
        let me = self.node.name().to_string();
        let key = engine_name(self.index);
        let mut watch = self
            .kv
            .watch(&key)
            .await
            .unwrap_or_else(|e| fail_stop(format!("cannot watch lease {key}: {e}")));
        // The previous owner's subscription may linger for a moment after
        // its process died; the name is free once the server noticed.
        let mut tries = 0;
        while let Err(e) = self.node.publish(&key, &self.engine).await {
            tries += 1;
            if tries > 200 {
                fail_stop(format!("cannot publish {key}: {e}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(s) = settled {
            let _ = s.send(());
        }
        loop {
            tokio::select! {
                request = self.requests.recv() => match request {
                    // A node leaving loses its standbys' watches as it
                    // goes: that is no reason to renew anything.
                    Some(LeaseRequest::Solo { epoch: held })
                        if held == epoch && !LEAVING.load(Ordering::Relaxed) =>
                    {
                        match self.kv.update(&key, me.clone().into(), epoch).await {
                            Ok(new) => {
                                epoch = new;
                                self.engine.tell(EngineCmd::Solo { epoch });
                            }
                            Err(e) => fail_stop(format!("lost lease {key} while going on alone: {e}")),
                        }
                    }
                    Some(_) => {}
                    None => return,
                },
                entry = watch.next() => match entry {
                    Some(Ok(e)) if e.revision > epoch && e.value.as_ref() != me.as_bytes() => {
                        fail_stop(format!(
                            "lease {key} moved to {}",
                            String::from_utf8_lossy(&e.value)
                        ))
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => fail_stop(format!("lease watch of {key} failed: {e}")),
                    None => fail_stop(format!("lease watch of {key} ended")),
                },
            }
        }
    }
}

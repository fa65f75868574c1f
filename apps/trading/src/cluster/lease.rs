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
//!   goes on serving). A node paused (SIGSTOP) past the heartbeat timeout
//!   finds on resuming that its standbys took the keys over, and exits
//!   the same way; it prints why (`fail-stop <why>`) for its launcher.
//!
//! A NATS cluster that lost a server (say, with the dead primary's host)
//! answers bucket operations with errors or not at all until it has
//! elected the bucket a new leader. The keeper retries what failed without
//! a verdict for [`RETRY_WITHIN`], and reads a compare-and-set whose answer
//! was lost back from the bucket: it won if the key holds its name at a
//! newer revision.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv::{Config, CreateErrorKind, Operation, Store, UpdateErrorKind};
use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;
use troupe::ActorRef;
use troupe_remote::{MemberEvent, Node};

use super::wire::EngineCmd;

/// What an engine asks its node's lease keeper (the keeper's protocol, so
/// it lives with the keeper that serves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseRequest {
    /// My standby is gone: renew the lease I hold at `epoch` so that I may
    /// acknowledge alone (or exit if it moved).
    Solo {
        /// The revision held.
        epoch: u64,
    },
}

/// The bucket of a cluster's leases.
pub fn bucket_name(cluster: &str) -> String {
    format!("trading-{cluster}-leases")
}

/// The key of engine `index`, and the name its primary is published as.
pub fn engine_name(index: usize) -> String {
    format!("engine-{index}")
}

/// The published name of engine `index` on node `node`: one node answers
/// to it, whatever its role (reports, and a standby's lookup of the
/// primary the lease names).
pub fn engine_at(index: usize, node: &str) -> String {
    format!("e{index}-at-{node}")
}

/// How long opening the bucket is retried: a NATS cluster that has just
/// started elects its JetStream leader first, and refuses until then.
const BUCKET_WITHIN: Duration = Duration::from_secs(30);

/// Opens the cluster's lease bucket, or creates it with `replicas` copies
/// (one per NATS server, up to 5: with 3 on a three-server cluster the
/// leases survive the loss of any one server, and of its host).
pub async fn open_bucket(node: &Node, cluster: &str, replicas: usize) -> Result<Store, String> {
    let mut js = async_nats::jetstream::new(node.nats_client());
    // A request without an answer is retried (see `retrying`): waiting the
    // default 5 s for each would add as much to a failover that meets a
    // bucket electing a new leader.
    js.set_timeout(Duration::from_secs(1));
    let bucket = bucket_name(cluster);
    let deadline = tokio::time::Instant::now() + BUCKET_WITHIN;
    loop {
        if let Ok(store) = js.get_key_value(&bucket).await {
            return Ok(store);
        }
        let created = js
            .create_key_value(Config {
                bucket: bucket.clone(),
                history: 1,
                num_replicas: replicas,
                ..Config::default()
            })
            .await;
        match created {
            Ok(store) => return Ok(store),
            Err(e) if tokio::time::Instant::now() > deadline => {
                return Err(format!(
                    "cannot create the lease bucket {bucket} with {replicas} replica(s) \
                     within {BUCKET_WITHIN:?}: {e}"
                ))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Set once the node is leaving on purpose: what its keepers see from then
/// on (its own engines' standbys leaving, watches ending) is not a failure.
pub static LEAVING: AtomicBool = AtomicBool::new(false);

/// Ends the process: this node lost the lease of an engine it served, or
/// cannot take part safely any more. A node already leaving just exits.
/// The reason also goes to stdout as `fail-stop <why>`, where a launcher
/// reads it: a node that ended on its own is told apart from one that
/// was killed or hangs.
pub fn fail_stop(why: String) -> ! {
    if LEAVING.load(Ordering::Relaxed) {
        std::process::exit(0)
    }
    eprintln!("trading node: {why}; exiting");
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "fail-stop {why}");
        let _ = out.flush();
    }
    std::process::exit(3)
}

/// How long a keeper retries a bucket operation that failed without a
/// verdict before it gives up and its node exits.
pub const RETRY_WITHIN: Duration = Duration::from_secs(30);

/// Runs `op` until it succeeds; exits the process if it has not within
/// [`RETRY_WITHIN`].
async fn retrying<T, E, F, Fut>(what: &str, mut op: F) -> T
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + RETRY_WITHIN;
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) if tokio::time::Instant::now() > deadline => {
                fail_stop(format!("{what}: {e} (retried for {RETRY_WITHIN:?})"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Sets `key` to `me` if it is still at revision `from`: the new revision
/// if this node owns it now, or the error that says it does not.
async fn take(kv: &Store, key: &str, me: &str, from: u64) -> Result<u64, String> {
    let deadline = tokio::time::Instant::now() + RETRY_WITHIN;
    loop {
        match kv.update(key, me.to_string().into(), from).await {
            Ok(revision) => return Ok(revision),
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                // Moved on since `from`: by someone else, or by an earlier
                // attempt of ours whose answer was lost (only this node
                // writes its own name).
                return match retrying("read lease", || owner(kv, key)).await {
                    Some((name, revision)) if name == me && revision > from => Ok(revision),
                    other => Err(format!("{key} moved on from revision {from}: {other:?}")),
                };
            }
            Err(e) if tokio::time::Instant::now() > deadline => {
                return Err(format!(
                    "cannot update {key} (retried for {RETRY_WITHIN:?}): {e}"
                ))
            }
            // No verdict (timed out, no leader yet): ask again; if it had
            // landed, the next answer is WrongLastRevision and the read
            // above finds our name.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
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
            let created = retrying("create lease", || async {
                match self.kv.create(&key, me.clone().into()).await {
                    Ok(epoch) => Ok(Some(epoch)),
                    Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .await;
            if let Some(epoch) = created {
                self.engine.tell(EngineCmd::Promote { epoch });
                return self.lead(epoch, settled.take()).await;
            }
            let Some((owner_name, epoch)) = retrying("read lease", || owner(&self.kv, &key)).await
            else {
                continue; // deleted in between: try to create it again
            };
            if owner_name == me {
                // An earlier create of ours landed without an answer.
                self.engine.tell(EngineCmd::Promote { epoch });
                return self.lead(epoch, settled.take()).await;
            }
            // The lease owner's own name, not the engine's: a former
            // primary, paused or cut off, can still hold a subscription to
            // `engine-<i>` (see `lead`), and must not be followed.
            let primary = match self
                .node
                .lookup::<EngineCmd>(&engine_at(self.index, &owner_name))
                .await
            {
                Ok(primary) => primary,
                Err(_) => {
                    // The owner has not published yet, or is gone and not
                    // yet replaced: look again shortly.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if retrying("read lease", || owner(&self.kv, &key)).await
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
            match take(&self.kv, &key, &me, epoch).await {
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
        // The lease says this node serves the engine now: the name is
        // taken over at once, not waited for. The previous owner's
        // subscription lingers at the server while its node is paused or
        // cut off (until the server drops the connection, minutes), and
        // after a crash until the server notices; frames reach both then,
        // and a former owner acknowledges nothing (its replication carries
        // a revision nobody follows; going on alone needs the lease).
        let mut tries = 0;
        while let Err(e) = self.node.publish_taking_over(&key, &self.engine).await {
            tries += 1;
            if tries > 20 {
                fail_stop(format!("cannot publish {key}: {e}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(s) = settled {
            let _ = s.send(());
        }
        // Then the watch. It is made after the name is served, because a
        // watch is a JetStream consumer, and creating one needs the
        // JetStream meta leader: after the loss of the server that was
        // meta leader, it waits for the election (raft timeouts of 4-9 s;
        // 10.1 s measured), while the compare-and-set above needs only the
        // bucket's own leader. Serving first is safe: the watch only makes
        // a node that lost the lease exit sooner; nothing is acknowledged
        // on its strength. With history: the first entry is the key as it
        // is now, so a move meanwhile (or after a watch error) is seen.
        let mut watch = retrying("watch lease", || self.kv.watch_with_history(&key)).await;
        loop {
            tokio::select! {
                request = self.requests.recv() => match request {
                    // A node leaving loses its standbys' watches as it
                    // goes: that is no reason to renew anything.
                    Some(LeaseRequest::Solo { epoch: held })
                        if held == epoch && !LEAVING.load(Ordering::Relaxed) =>
                    {
                        match take(&self.kv, &key, &me, epoch).await {
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
                    // The bucket's stream changing leader can end a watch:
                    // watch again (from the current value on).
                    Some(Err(_)) | None => {
                        watch = retrying("watch lease", || self.kv.watch_with_history(&key)).await;
                    }
                },
            }
        }
    }
}

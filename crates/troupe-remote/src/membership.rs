//! Membership: which nodes of the cluster are alive, from heartbeats on
//! NATS subjects.
//!
//! ```text
//! troupe.<cluster>.members.beat.<node>    every heartbeat_interval, payload: incarnation (u64, LE)
//! troupe.<cluster>.members.leave.<node>   once, from Node::shutdown, payload: incarnation
//! ```
//!
//! A node draws a random **incarnation** each time it starts (and again
//! when it resumes from a stall the others may have taken for its death:
//! `node/tasks.rs`), and its
//! heartbeats carry it. A heartbeat under a known name with another
//! incarnation means the node was restarted: the old incarnation is down
//! at once ([`DownReason::Restarted`]) and the new one is up, without
//! waiting for the heartbeat timeout. A leave names its incarnation too, so
//! a late leave of a past incarnation does not take the new one down.
//!
//! **Confirmed claims.** Any client on the subjects can publish a
//! heartbeat or a leave under any name, and a heartbeat shows the
//! incarnation: a heartbeat of a node or incarnation not up, and a leave,
//! are claims the node is asked about first, on its own control subject
//! (`node/confirm.rs`); this module acts on them once confirmed. At most
//! `RemoteConfig::max_members` other nodes are up, and the incarnations
//! remembered as down are bounded (`bounds.rs`).
//!
//! A node is up from its first heartbeat heard, and down when it says it
//! leaves ([`DownReason::Left`]) or when no heartbeat of it has been heard
//! for `heartbeat_timeout` ([`DownReason::Silent`]; checked four times per
//! heartbeat interval). A node that comes back after being declared down
//! is up again. Every node decides on its own from what it hears: there is
//! no agreement protocol, so two nodes may see a third go down a check
//! apart.
//!
//! **This node's own connection.** A node hears its own heartbeats too
//! (NATS echoes a connection's messages to its own subscriptions), and
//! they tell it whether its connection carries: while its own last
//! heartbeat is older than its *grace* (half the heartbeat timeout, at
//! least one and a half intervals), the others' silence says nothing about
//! them (the server is down or restarting, the connection is cut, or this
//! process stalled), and nobody is declared down. When its own heartbeat
//! comes back after such a spell, every other node counts as heard at that
//! moment: each gets a whole timeout from then to be heard again, so the
//! nodes that reconnect after a server restart stay up, and one that died
//! meanwhile is declared down one timeout after this node is back. With a
//! timeout of at least three intervals, no node is declared down for an
//! outage of this node's own connection that began after it was last heard.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use crate::bounds::{Tombstones, DOWN_PER_MEMBER};

/// A change in the cluster's membership, as seen by this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberEvent {
    /// A node was heard for the first time (or again after being down).
    Up(String),
    /// A node is gone.
    Down {
        /// Its name.
        node: String,
        /// How we know.
        reason: DownReason,
    },
}

/// Why a node is considered down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownReason {
    /// It announced that it leaves (`Node::shutdown`).
    Left,
    /// No heartbeat for `heartbeat_timeout`.
    Silent,
    /// Another incarnation of it was heard: it was restarted, and what
    /// lived in the old process is gone.
    Restarted,
}

/// A node incarnation that went down: its name and incarnation.
pub(crate) type Gone = (String, u64);

/// What a heartbeat is to this node (see [`Membership::classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Beat {
    /// This node's own.
    Mine,
    /// Of the incarnation up: it keeps it up.
    Up,
    /// Of an incarnation remembered as down: ignored.
    Down,
    /// Of another incarnation than the one up: a restart, if confirmed.
    Restart,
    /// Of a node not up: a new member, if confirmed.
    New,
    /// Of a node not up while `max_members` are.
    NoRoom,
}

/// The nodes this node has heard, with the incarnation heard last and
/// when.
pub(crate) struct Membership {
    me: String,
    /// This node's incarnation: only its heartbeats count as this node's
    /// own (another process under the same name is not this connection).
    /// Renewed after a long stall (`tasks::renew`).
    incarnation: AtomicU64,
    /// How long this node's own heartbeat may stay away before its
    /// connection counts as not carrying (see the module docs).
    grace: Duration,
    /// When this node last heard its own heartbeat.
    own: Mutex<Option<Instant>>,
    seen: Mutex<HashMap<String, (u64, Instant)>>,
    /// The most other nodes up at once (`RemoteConfig::max_members`).
    max_members: usize,
    /// Incarnations that went down (replaced by a restart, left, or fell
    /// silent): a heartbeat of one must not bring it back. A node declared
    /// down is down for good in this incarnation, as its refs are (see
    /// `liveness.rs`): one paused past the timeout that resumes is not
    /// taken back, and rejoins as a new incarnation (it draws one as it
    /// resumes: `tasks::renew`; or it restarts). At most
    /// `DOWN_PER_MEMBER` times `max_members`, the oldest forgotten first.
    replaced: Mutex<Tombstones>,
    events: broadcast::Sender<MemberEvent>,
}

/// How long a node's own heartbeat may stay away before its connection
/// counts as not carrying: half the timeout, so that an outage of its own
/// connection is noticed before a node heard just before it could be
/// declared down (with a timeout of at least three intervals), and at
/// least one and a half intervals, so that the wait between two of its
/// own heartbeats never counts.
fn grace(interval: Duration, timeout: Duration) -> Duration {
    (timeout / 2).max(interval + interval / 2)
}

impl Membership {
    /// The membership of node `me`, incarnation `incarnation`, which beats
    /// every `interval` and declares a node silent for `timeout` down.
    pub(crate) fn new(
        me: &str,
        incarnation: u64,
        interval: Duration,
        timeout: Duration,
    ) -> Membership {
        Membership {
            me: me.to_string(),
            incarnation: AtomicU64::new(incarnation),
            grace: grace(interval, timeout),
            own: Mutex::new(None),
            seen: Mutex::new(HashMap::new()),
            max_members: usize::MAX,
            replaced: Mutex::new(Tombstones::new(usize::MAX)),
            events: broadcast::channel(1024).0,
        }
    }

    /// At most `max_members` other nodes up at once: a new one heard
    /// beyond is not taken (see `bounds.rs`).
    pub(crate) fn bounded(mut self, max_members: usize) -> Membership {
        self.max_members = max_members.max(1);
        self.replaced = Mutex::new(Tombstones::new(
            self.max_members.saturating_mul(DOWN_PER_MEMBER),
        ));
        self
    }

    fn tombstones(&self) -> std::sync::MutexGuard<'_, Tombstones> {
        self.replaced.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What a heartbeat of `node`'s incarnation `incarnation` would be.
    pub(crate) fn classify(&self, node: &str, incarnation: u64) -> Beat {
        if node == self.me {
            return Beat::Mine;
        }
        if self.tombstones().contains(node, incarnation) {
            return Beat::Down;
        }
        let seen = self.lock();
        match seen.get(node) {
            Some((up, _)) if *up == incarnation => Beat::Up,
            Some(_) => Beat::Restart,
            None if seen.len() >= self.max_members => Beat::NoRoom,
            None => Beat::New,
        }
    }

    /// Whether `node`'s incarnation `incarnation` is remembered as down.
    pub(crate) fn is_down(&self, node: &str, incarnation: u64) -> bool {
        self.tombstones().contains(node, incarnation)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, Instant)>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A heartbeat of `node`'s incarnation `incarnation` arrived. If it
    /// replaces another incarnation (a restart), `down` is called with the
    /// old one before `Down` is announced, so that whoever hears the event
    /// finds its consequences done; the old one is returned. This node's
    /// own heartbeat says its connection carries (see the module docs).
    pub(crate) fn heard(
        &self,
        node: &str,
        incarnation: u64,
        down: impl FnOnce(&str, u64),
    ) -> Option<Gone> {
        self.heard_at(Instant::now(), node, incarnation, down)
    }

    fn heard_at(
        &self,
        now: Instant,
        node: &str,
        incarnation: u64,
        down: impl FnOnce(&str, u64),
    ) -> Option<Gone> {
        if node == self.me {
            if incarnation == self.incarnation.load(Ordering::Acquire) {
                self.heard_myself(now);
            }
            return None;
        }
        let mut replaced = self.tombstones();
        if replaced.contains(node, incarnation) {
            return None;
        }
        let previous = {
            let mut seen = self.lock();
            if !seen.contains_key(node) && seen.len() >= self.max_members {
                // No room: not taken (the caller counts it).
                return None;
            }
            seen.insert(node.to_string(), (incarnation, now))
        };
        if let Some((before, _)) = previous.filter(|(before, _)| *before != incarnation) {
            replaced.insert(node, before);
        }
        drop(replaced);
        match previous {
            Some((before, _)) if before == incarnation => None,
            Some((before, _)) => {
                down(node, before);
                let _ = self.events.send(MemberEvent::Down {
                    node: node.to_string(),
                    reason: DownReason::Restarted,
                });
                let _ = self.events.send(MemberEvent::Up(node.to_string()));
                Some((node.to_string(), before))
            }
            None => {
                let _ = self.events.send(MemberEvent::Up(node.to_string()));
                None
            }
        }
    }

    /// `node`'s incarnation `incarnation` announced that it leaves; true if
    /// it was the one up (then `down` is called before `Down` is
    /// announced).
    pub(crate) fn left(&self, node: &str, incarnation: u64, down: impl FnOnce(&str, u64)) -> bool {
        let was_up = {
            let mut seen = self.lock();
            let up = seen.get(node).is_some_and(|(i, _)| *i == incarnation);
            if up {
                seen.remove(node);
            }
            up
        };
        if was_up {
            self.tombstones().insert(node, incarnation);
            down(node, incarnation);
            let _ = self.events.send(MemberEvent::Down {
                node: node.to_string(),
                reason: DownReason::Left,
            });
        }
        was_up
    }

    /// This node is now incarnation `incarnation`: only its heartbeats
    /// count as this node's own from now on.
    pub(crate) fn renew(&self, incarnation: u64) {
        self.incarnation.store(incarnation, Ordering::Release);
    }

    /// The incarnation of `node` heard last, if it is up (not this node's).
    pub(crate) fn incarnation(&self, node: &str) -> Option<u64> {
        self.lock().get(node).map(|(incarnation, _)| *incarnation)
    }

    /// This node's own heartbeat came back at `now`. If it had stayed away
    /// past the grace, the connection was not carrying: every other node
    /// counts as heard now.
    fn heard_myself(&self, now: Instant) {
        let mut own = self.own.lock().unwrap_or_else(|e| e.into_inner());
        let away = own.map(|last| now.saturating_duration_since(last));
        *own = Some(now);
        drop(own);
        if let Some(away) = away.filter(|away| *away >= self.grace) {
            for (_, at) in self.lock().values_mut() {
                *at = (*at).max(now);
            }
            tracing::info!(node = %self.me, ?away, "troupe-remote: this node hears itself again; the other nodes get a whole heartbeat timeout from now");
        }
    }

    /// Whether this node's own heartbeat has stayed away past the grace at
    /// `now` (never, before it was first heard).
    fn cut_off(&self, now: Instant) -> bool {
        self.own
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|last| now.saturating_duration_since(last) >= self.grace)
    }

    /// Declares down every node silent for `timeout`, calling `down` for
    /// each before announcing it; returns them. Nobody, while this node's
    /// own heartbeat stays away (see the module docs).
    pub(crate) fn expire(&self, timeout: Duration, down: impl Fn(&str, u64)) -> Vec<Gone> {
        self.expire_at(Instant::now(), timeout, down)
    }

    fn expire_at(&self, now: Instant, timeout: Duration, down: impl Fn(&str, u64)) -> Vec<Gone> {
        if self.cut_off(now) {
            return Vec::new();
        }
        let silent: Vec<Gone> = {
            let mut seen = self.lock();
            let silent: Vec<Gone> = seen
                .iter()
                .filter(|(_, (_, at))| now.duration_since(*at) >= timeout)
                .map(|(node, (incarnation, _))| (node.clone(), *incarnation))
                .collect();
            for (node, _) in &silent {
                seen.remove(node);
            }
            silent
        };
        {
            let mut replaced = self.tombstones();
            for (node, incarnation) in &silent {
                replaced.insert(node, *incarnation);
            }
        }
        for (node, incarnation) in &silent {
            down(node, *incarnation);
            let _ = self.events.send(MemberEvent::Down {
                node: node.clone(),
                reason: DownReason::Silent,
            });
        }
        silent
    }

    /// This process stalled for `stall` (its heartbeat task ran that much
    /// late): every node's last heartbeat counts as that much more recent,
    /// so a stall here does not declare the others down on resuming (their
    /// heartbeats from meanwhile are still unread). A node that really
    /// died during the stall is declared down that much later.
    pub(crate) fn forgive(&self, stall: Duration) {
        self.forgive_at(Instant::now(), stall);
    }

    fn forgive_at(&self, now: Instant, stall: Duration) {
        for (_, at) in self.lock().values_mut() {
            *at = (*at + stall).min(now);
        }
    }

    /// How many other nodes are up, and how many incarnations are
    /// remembered as down.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let up = self.lock().len();
        let down = self.tombstones().len();
        (up, down)
    }

    /// How many down incarnations were forgotten to stay within the cap.
    pub(crate) fn forgotten(&self) -> u64 {
        self.tombstones().forgotten()
    }

    /// This node and every node up, sorted.
    pub(crate) fn members(&self) -> Vec<String> {
        let mut members: Vec<String> = self.lock().keys().cloned().collect();
        members.push(self.me.clone());
        members.sort();
        members
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<MemberEvent> {
        self.events.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no(_: &str, _: u64) {}

    const MS: Duration = Duration::from_millis(1);

    /// Node "me", incarnation 1, beating every 100 ms, declaring down after
    /// 500 ms of silence (its grace: 250 ms).
    fn membership() -> Membership {
        Membership::new("me", 1, 100 * MS, 500 * MS)
    }

    #[test]
    fn a_stall_here_is_not_the_others_silence() {
        let m = membership();
        let t0 = Instant::now();
        m.heard_at(t0, "b", 1, no);
        // 30 ms later: without forgiving, b is silent for more than 20 ms;
        // with the 30 ms stall forgiven it was heard just now.
        let now = t0 + 30 * MS;
        m.forgive_at(now, 30 * MS);
        assert!(m.expire_at(now, 20 * MS, no).is_empty());
        assert_eq!(m.members(), vec!["b".to_string(), "me".to_string()]);
    }

    #[test]
    fn up_once_down_once_and_never_myself() {
        let m = membership();
        let mut events = m.subscribe();
        assert_eq!(m.heard("me", 1, no), None);
        assert_eq!(m.heard("b", 2, no), None);
        assert_eq!(m.heard("b", 2, no), None);
        assert_eq!(m.members(), vec!["b".to_string(), "me".to_string()]);
        // A leave of another incarnation is not this one's.
        assert!(!m.left("b", 9, no));
        assert!(m.left("b", 2, no));
        assert!(!m.left("b", 2, no));
        assert_eq!(m.incarnation("b"), None);
        assert_eq!(m.heard("c", 3, no), None);
        assert_eq!(m.expire(Duration::ZERO, no), vec![("c".to_string(), 3)]);
        assert!(m.expire(Duration::ZERO, no).is_empty());
        let got: Vec<MemberEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
        assert_eq!(
            got,
            vec![
                MemberEvent::Up("b".into()),
                MemberEvent::Down {
                    node: "b".into(),
                    reason: DownReason::Left
                },
                MemberEvent::Up("c".into()),
                MemberEvent::Down {
                    node: "c".into(),
                    reason: DownReason::Silent
                },
            ]
        );
        assert_eq!(m.members(), vec!["me".to_string()]);
        // Down is for good in an incarnation: heard again (resumed after a
        // pause, a heartbeat sent before the leave), it stays down.
        assert_eq!(m.heard("b", 2, no), None);
        assert_eq!(m.heard("c", 3, no), None);
        assert_eq!(m.members(), vec!["me".to_string()]);
        assert!(events.try_recv().is_err(), "no Up for a past incarnation");
        // A new incarnation (a restart) is up.
        m.heard("c", 4, no);
        assert_eq!(m.members(), vec!["c".to_string(), "me".to_string()]);
    }

    #[test]
    fn members_are_capped_and_down_incarnations_forgotten_oldest_first() {
        let m = membership().bounded(2);
        assert_eq!(m.classify("b", 1), Beat::New);
        m.heard("b", 1, no);
        m.heard("c", 1, no);
        assert_eq!(m.classify("b", 1), Beat::Up);
        assert_eq!(m.classify("b", 2), Beat::Restart);
        assert_eq!(m.classify("me", 7), Beat::Mine);
        // No room for a third: not taken.
        assert_eq!(m.classify("d", 1), Beat::NoRoom);
        assert_eq!(m.heard("d", 1, no), None);
        assert_eq!(m.members(), vec!["b", "c", "me"]);
        // Eight down incarnations are remembered (four per member), the
        // oldest forgotten first.
        for i in 2..12 {
            m.heard("b", i, no);
        }
        assert!(m.is_down("b", 10) && m.is_down("b", 3));
        assert!(!m.is_down("b", 2) && !m.is_down("b", 1));
        assert_eq!(m.classify("b", 10), Beat::Down);
        assert_eq!(m.sizes(), (2, 8));
        assert_eq!(m.forgotten(), 2);
    }

    #[test]
    fn another_incarnation_is_a_restart_down_then_up() {
        let m = membership();
        m.heard("a", 1, no);
        let mut events = m.subscribe();
        let mut told = None;
        let restart = m.heard("a", 2, |node, before| {
            told = Some((node.to_string(), before))
        });
        assert_eq!(restart, Some(("a".to_string(), 1)));
        assert_eq!(told, restart);
        assert_eq!(m.incarnation("a"), Some(2));
        let got: Vec<MemberEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
        assert_eq!(
            got,
            vec![
                MemberEvent::Down {
                    node: "a".into(),
                    reason: DownReason::Restarted
                },
                MemberEvent::Up("a".into()),
            ]
        );
        // The late leave or heartbeat of the first incarnation leaves the
        // second up.
        assert!(!m.left("a", 1, no));
        assert_eq!(m.heard("a", 1, no), None);
        assert_eq!(m.incarnation("a"), Some(2));
    }

    #[test]
    fn my_own_silence_is_not_the_others() {
        let m = membership();
        let t0 = Instant::now();
        for node in ["me", "b", "c", "d"] {
            m.heard_at(t0, node, 1, no);
        }
        // Connected (its own heartbeat comes back every interval): d,
        // silent, goes down.
        for at in [100, 200, 300, 400] {
            m.heard_at(t0 + at * MS, "me", 1, no);
        }
        m.heard_at(t0 + 400 * MS, "b", 1, no);
        m.heard_at(t0 + 400 * MS, "c", 1, no);
        assert_eq!(
            m.expire_at(t0 + 500 * MS, 500 * MS, no),
            vec![("d".to_string(), 1)]
        );
        // Then its connection goes: for two seconds it hears nobody, not
        // even itself. Nobody is declared down for that, and another
        // process under its name is not its connection.
        for late in [700, 1000, 2400] {
            assert_eq!(m.expire_at(t0 + late * MS, 500 * MS, no), []);
        }
        m.heard_at(t0 + 2400 * MS, "me", 2, no);
        assert_eq!(m.expire_at(t0 + 2400 * MS, 500 * MS, no), []);
        // Back: its own heartbeat first. b is heard again; c, which died
        // meanwhile, is not: it is down one timeout after the return.
        let back = t0 + 2500 * MS;
        for at in [0, 100, 200, 300, 400] {
            m.heard_at(back + at * MS, "me", 1, no);
        }
        m.heard_at(back + 300 * MS, "b", 1, no);
        assert_eq!(m.expire_at(back + 450 * MS, 500 * MS, no), []);
        assert_eq!(
            m.expire_at(back + 500 * MS, 500 * MS, no),
            vec![("c".to_string(), 1)]
        );
        assert_eq!(m.members(), vec!["b".to_string(), "me".to_string()]);
    }

    #[test]
    fn the_grace_covers_the_wait_between_two_heartbeats() {
        // Half the timeout...
        assert_eq!(grace(100 * MS, 500 * MS), 250 * MS);
        assert_eq!(grace(500 * MS, 3000 * MS), 1500 * MS);
        // ...but never less than an interval and a half: the wait between
        // two of its own heartbeats is no outage.
        assert_eq!(grace(400 * MS, 500 * MS), 600 * MS);
    }
}
